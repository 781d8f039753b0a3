package slack

import (
	"fmt"
	"maps"
	"slices"

	"github.com/pacer-go/pacer/providers/figures"
)

const (
	// The overview table was read whole on api.slack.com's copy of "Rate
	// limits"; docs.slack.dev's, its successor, gave the same rows as far as
	// Tier 2.
	rateLimitsPage = "https://api.slack.com/docs/rate-limits"
	slackReadOn    = "2026-12-01"
	methodPage     = "https://docs.slack.dev/reference/methods/"
)

// methodSources are the method reference pages whose tier was read, with the
// page's words for it. A method of MethodTiers missing here is unverified.
var methodSources = map[string]struct{ url, quote string }{
	"conversations.history": {methodPage + "conversations.history",
		"For Marketplace and internal customer-built applications, this method has Tier 3 rate limits."},
	"conversations.replies": {methodPage + "conversations.replies",
		"For Marketplace and internal customer-built applications, this method has Tier 3 rate limits."},
	"reactions.add": {methodPage + "reactions.add",
		"Rate Limits Tier 3: 50+ per minute"},
	"chat.update": {"https://api.slack.com/methods/chat.update",
		"Rate limits Tier 3"},
	"chat.delete": {"https://api.slack.com/methods/chat.delete",
		"Rate limits Tier 3"},
}

// Figures returns every figure the preset uses, with its source: the four
// tiers, chat.postMessage's per-channel limit, the default tier, and the
// tier of each method MethodTiers lists.
func Figures() []figures.Figure {
	f := func(name, scope string, v float64, unit, src, quote string) figures.Figure {
		return figures.Figure{Preset: "slack", Name: name, Scope: scope, Value: v, Unit: unit,
			Source: src, Read: slackReadOn, Quote: quote}
	}
	perTier := "Slack calls each tier's figure a floor (\"20+\") and tolerates bursts above it; pacer takes the floor as the limit"
	out := []figures.Figure{
		f("Tier 1", Tier1.Scope(), tier1PerMinute, "requests/min per method", rateLimitsPage,
			"Web API Tier 1 1+ per minute Access tier 1 methods infrequently. A small amount of burst behavior is tolerated."),
		f("Tier 2", Tier2.Scope(), tier2PerMinute, "requests/min per method", rateLimitsPage,
			"Web API Tier 2 20+ per minute Most methods allow at least 20 requests per minute, while allowing for occasional bursts of more requests."),
		f("Tier 3", Tier3.Scope(), tier3PerMinute, "requests/min per method", rateLimitsPage,
			"Web API Tier 3 50+ per minute Tier 3 methods allow a larger number of requests and are typically attached to methods with paginating collections of conversations or users."),
		f("Tier 4", Tier4.Scope(), tier4PerMinute, "requests/min per method", rateLimitsPage,
			"Web API Tier 4 100+ per minute Enjoy a large request quota for Tier 4 methods, including generous burst behavior."),
		f("chat.postMessage per channel", ScopePostMessage, postMessagesPerSecondPerChannel, "messages/s", rateLimitsPage,
			"chat.postMessage generally allows posting one message per second per channel, while also maintaining a workspace-wide limit."),
		f("default tier (a method MethodTiers lacks)", DefaultTier.Scope(), float64(DefaultTier.Limit().Count), "requests/min per method", rateLimitsPage,
			"Most methods allow at least 20 requests per minute"),
		f("conversations.history and conversations.replies, non-Marketplace apps", "", 1, "requests/min", methodPage+"conversations.history",
			"As of May 29, 2025, for new applications and installation commercially distributed outside of the Marketplace, this method is rate limited to 1 request per minute."),
	}
	for i := range out[:4] {
		out[i].Note = perTier
	}
	out[4].Note = "Slack does not publish the workspace-wide limit; pacer does not pace by it, and its 429's Retry-After pauses chat.postMessage"
	out[5].Note = "a Tier 1 method missing from MethodTiers would go at 20 a minute; add it to the table"
	out[6].Note = "not applied by default: such an app maps both methods to Tier1 (see MethodTiers); existing installations too from March 3, 2026, the page says"
	tiers := MethodTiers()
	for _, m := range slices.Sorted(maps.Keys(tiers)) {
		t := tiers[m]
		fig := figures.Figure{Preset: "slack", Name: m, Scope: t.Scope(), Value: float64(t.Limit().Count),
			Unit: fmt.Sprintf("requests/min (Tier %d)", int(t))}
		if src, ok := methodSources[m]; ok {
			fig.Source, fig.Read, fig.Quote = src.url, slackReadOn, src.quote
		} else {
			fig.Source, fig.Read = methodPage+m, slackReadOn
			fig.Unverified = "no search surfaced the rate-limit line of the method's reference page (nor, for some, the page); kept as it was, and a 429's Retry-After pauses the method if its tier is lower"
			fig.Note = "Slack's own Java SDK gives the same tier (github.com/slackapi/java-slack-sdk, slack-api-client/src/main/java/com/slack/api/methods/MethodsRateLimits.java, read " + slackReadOn + "): Slack's code, not its documentation"
		}
		out = append(out, fig)
	}
	return out
}
