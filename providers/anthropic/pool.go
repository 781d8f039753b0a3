package anthropic

import (
	"fmt"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/pool"
	"github.com/pacer-go/pacer/providers/internal/presetopt"
)

// A WorkspaceKey is one API key of a pool (WorkspaceKeys), of one
// Workspace of the organization.
type WorkspaceKey struct {
	// Name identifies the key in events, logs, errors and Stats; never
	// the key.
	Name string
	// Key is the API key, sent as the x-api-key header.
	Key string
	// Limits are the Workspace's own limits, as its Rate limits tab in the
	// Console shows them; a zero field sets none (the organization's
	// apply), and the zero Limits, a Workspace with none of its own (the
	// Default Workspace, which can have none), gives the key no scope.
	Limits ModelLimits
}

// WorkspaceScope names the scope that paces what the pool's key called
// name sends in unit (UnitRequests, UnitInputTokens or UnitOutputTokens):
// "anthropic/workspace/" + name + "/" + unit.
func WorkspaceScope(name, unit string) string { return "anthropic/workspace/" + name + "/" + unit }

// policyWorkspace names no quota Anthropic's headers report, so that they
// never set a Workspace's scopes: the preset's scopes, the organization's,
// learn from every key's answers, and a Workspace's limits are the
// caller's figures.
const policyWorkspace = "anthropic/workspace"

// WorkspaceKeys returns the option that sends Messages calls through a
// pool of API keys, each of a Workspace of one organization: each call
// goes through one key (pool.Header sets x-api-key), and a key that
// answers 401 is taken out, one whose Workspace is throttled cooled, while
// the others carry the calls. Give it to pacer.New beside Preset (or
// PresetLimits), whose figures are the organization's.
//
// What is per key: its Workspace's own limits, when it has any, on scopes
// of its own (WorkspaceScope), since Anthropic lets each Workspace be
// capped below the organization: "To protect Workspaces in your
// Organization from potential overuse, you can set custom spend and rate
// limits per Workspace." (https://platform.claude.com/docs/en/api/rate-limits,
// read 2026-12-02). They are custom, so no header or page gives them: the
// caller states them (Limits), as the Console shows them. A Workspace's
// input and output tokens scopes are charged what the preset's routes
// charge the call on the model class's.
//
// What is shared: everything the preset paces. The same page goes on
// "Organization-wide limits always apply, even if Workspace limits add up
// to more." So the preset's routes charge every call, whichever key it
// goes through, to its model class's scopes, each one bucket, and a pool
// is paced at the organization's limits, never at a multiple of them, nor
// at the sum of its Workspaces'; each key's answers teach those same
// buckets. The page says of the anthropic-ratelimit-tokens-* headers that
// they "display the values for the most restrictive limit currently in
// effect", a Workspace's when it binds: the preset does not read that
// family, only the requests, input-tokens and output-tokens ones.
//
// A key with no Name or Key, negative Limits, or two with one name, is a
// configuration error.
func WorkspaceKeys(keys ...WorkspaceKey) pacer.Option {
	var errs presetopt.Errors
	var o []pacer.Option
	members := make([]pool.Member, 0, len(keys))
	for i, k := range keys {
		what := fmt.Sprintf("anthropic.WorkspaceKeys: key %d (%q)", i+1, k.Name)
		if k.Key == "" {
			errs.Add(what, fmt.Errorf("has no Key"))
		}
		if errs.Add(what, k.Limits.check()) {
			k.Limits = ModelLimits{}
		}
		var scopes []string
		for _, d := range []struct {
			unit string
			n    int
		}{{pacer.UnitRequests, k.Limits.RPM}, {UnitInputTokens, k.Limits.ITPM}, {UnitOutputTokens, k.Limits.OTPM}} {
			if d.n == 0 {
				continue
			}
			limit := perMinute(d.n)
			if d.unit != pacer.UnitRequests {
				limit.Burst = d.n // a minute's tokens, as the preset's token buckets hold
			}
			scope := WorkspaceScope(k.Name, d.unit)
			scopes = append(scopes, scope)
			o = append(o, pacer.WithScope(pacer.Scope{Name: scope, Limit: limit, Unit: d.unit, Policy: policyWorkspace}))
		}
		members = append(members, pool.Member{Name: k.Name, Apply: pool.Header("x-api-key", k.Key), Scopes: scopes})
	}
	o = append(o, pacer.WithPool(pool.Config{Members: members}))
	return pacer.Options(append(o, errs.Options()...)...)
}
