// Package slack is pacer's preset for the Slack Web API: each method's
// rate-limit tier, counted per method, and chat.postMessage's one message a
// second per channel.
//
// Last verified: 2026-12-01, against Slack's "Rate limits"
// (https://docs.slack.dev/apis/web-api/rate-limits, whose overview table
// was read whole on https://api.slack.com/docs/rate-limits) and the method
// reference pages. Figures lists every figure with its source and quote; the tiers of
// chat.postEphemeral, conversations.info, conversations.list,
// conversations.members, users.info, users.list and users.lookupByEmail stay
// unverified (their reference pages could not be read). "pacer presets
// slack" prints them. Slack applies its limits "per API method per
// workspace/team per app": use one Transport per workspace token. Slack
// answers a limited call with 429 and Retry-After, which pauses that
// method's bucket (pacer's core reads it).
package slack

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/internal/presetopt"
	"github.com/pacer-go/pacer/providers/internal/reqbody"
)

// Tier is one of the Web API's rate-limit tiers.
type Tier int

const (
	Tier1 Tier = 1 // "1+ per minute"
	Tier2 Tier = 2 // "20+ per minute"
	Tier3 Tier = 3 // "50+ per minute"
	Tier4 Tier = 4 // "100+ per minute"
)

// The tiers' requests per minute, from the overview table of
// https://docs.slack.dev/apis/web-api/rate-limits. Slack calls them floors
// ("20+") and tolerates bursts; pacer takes the floor as the limit.
const (
	tier1PerMinute = 1
	tier2PerMinute = 20
	tier3PerMinute = 50
	tier4PerMinute = 100
)

// Limit returns the tier's published requests per minute, and the zero
// Limit for a Tier that is not one of the four.
func (t Tier) Limit() pacer.Limit {
	switch t {
	case Tier1:
		return pacer.PerMinute(tier1PerMinute)
	case Tier2:
		return pacer.PerMinute(tier2PerMinute)
	case Tier3:
		return pacer.PerMinute(tier3PerMinute)
	case Tier4:
		return pacer.PerMinute(tier4PerMinute)
	}
	return pacer.Limit{}
}

// Scope returns the name of the tier's scope, "slack/tier1" to
// "slack/tier4". Its buckets are keyed by method name.
func (t Tier) Scope() string { return fmt.Sprintf("slack/tier%d", int(t)) }

// ScopePostMessage paces chat.postMessage, one bucket per channel.
const ScopePostMessage = "slack/chat.postMessage"

// chat.postMessage is in the special tier: it "generally allows posting one
// message per second per channel, while also maintaining a workspace-wide
// limit" (https://docs.slack.dev/apis/web-api/rate-limits, and
// https://docs.slack.dev/reference/methods/chat.postMessage). Slack does not
// publish the workspace-wide number.
const postMessagesPerSecondPerChannel = 1

// DefaultTier is the tier of a method that MethodTiers does not list. Slack
// says "Most methods allow at least 20 requests per minute" (Tier 2); a
// Tier 1 method missing from the table should be added to it.
const DefaultTier = Tier2

// MethodTiers returns the tiers of common methods, as each method's
// reference page (https://docs.slack.dev/reference/methods/<method>) gives
// it; Figures says which pages could be read. It returns a new map each
// time; add to it or change it and pass it to Preset.
//
// conversations.history and conversations.replies are Tier 3 for
// Marketplace and internal apps; Slack limits commercially distributed apps
// that are not in the Marketplace to 1 a minute for them (the method pages:
// new installations since 2025-05-29, existing ones since 2026-03-03): such
// an app should map both to Tier1.
func MethodTiers() map[string]Tier {
	return map[string]Tier{
		"chat.delete":           Tier3,
		"chat.update":           Tier3,
		"chat.postEphemeral":    Tier4,
		"conversations.history": Tier3,
		"conversations.info":    Tier3,
		"conversations.list":    Tier2,
		"conversations.members": Tier4,
		"conversations.replies": Tier3,
		"reactions.add":         Tier3,
		"users.info":            Tier4,
		"users.list":            Tier2,
		"users.lookupByEmail":   Tier3,
	}
}

// Preset returns the options for calling the Slack Web API. Options given
// to pacer.New after it override what it sets. tiers gives methods' tiers;
// nil means MethodTiers(), and a method it does not list is in DefaultTier;
// a tier other than Tier1 to Tier4 is a configuration error.
//
// Each call to https://slack.com/api/<method> is charged to its tier's
// scope, keyed by method; chat.postMessage instead to ScopePostMessage,
// keyed by its channel (from the query, a form body or a JSON body, read
// through GetBody).
func Preset(tiers map[string]Tier) pacer.Option {
	if tiers == nil {
		tiers = MethodTiers()
	}
	tiers = maps.Clone(tiers) // later changes to the caller's map do not race with routing
	var preset []pacer.Option
	for _, t := range []Tier{Tier1, Tier2, Tier3, Tier4} {
		preset = append(preset, pacer.WithScope(pacer.Scope{Name: t.Scope(), Limit: t.Limit()}))
	}
	preset = append(preset,
		pacer.WithScope(pacer.Scope{Name: ScopePostMessage, Limit: pacer.PerSecond(postMessagesPerSecondPerChannel)}),
		pacer.WithRoute(func(req *http.Request, charges []pacer.Charge) []pacer.Charge {
			return route(tiers, req, charges)
		}))
	var errs presetopt.Errors
	for _, method := range slices.Sorted(maps.Keys(tiers)) {
		if t := tiers[method]; t.Limit().IsZero() {
			errs.Add("slack.Preset", fmt.Errorf("method %q has tier %d; use slack.Tier1 to slack.Tier4", method, int(t)))
		}
	}
	return pacer.Options(append(preset, errs.Options()...)...)
}

// route charges a Web API call to its method's bucket, in place of the
// charges before it; a request that is not a Web API call keeps them.
func route(tiers map[string]Tier, req *http.Request, charges []pacer.Charge) []pacer.Charge {
	method, ok := strings.CutPrefix(req.URL.Path, "/api/")
	if !ok || method == "" || strings.Contains(method, "/") {
		return charges
	}
	if method == "chat.postMessage" {
		channel := req.URL.Query().Get("channel")
		if channel == "" {
			channel = reqbody.Field(req, "channel")
		}
		return append(charges[:0], pacer.Charge{Scope: ScopePostMessage, Key: channel})
	}
	tier, ok := tiers[method]
	if !ok || tier.Limit().IsZero() {
		tier = DefaultTier
	}
	return append(charges[:0], pacer.Charge{Scope: tier.Scope(), Key: method})
}
