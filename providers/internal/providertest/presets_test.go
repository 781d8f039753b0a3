package providertest_test

import (
	"math"
	"testing"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/anthropic"
	"github.com/pacer-go/pacer/providers/github"
	"github.com/pacer-go/pacer/providers/openai"
	"github.com/pacer-go/pacer/providers/slack"
	"github.com/pacer-go/pacer/providers/stripe"
	"github.com/pacer-go/pacer/providers/twilio"
	"github.com/pacer-go/pacer/providers/whatsapp"
)

// Every preset has the same shape: Preset takes the provider's own
// settings only and returns one pacer.Option, and pacer's options go to
// pacer.New beside it. That holds only if an option given after the preset
// overrides what the preset sets, for all seven alike; a preset that
// applied a caller's option before its own, or ignored a later scope of
// the same name, would leave the caller no way to change its figures.
func TestAnOptionAfterEveryPresetOverridesIt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		preset pacer.Option
		scope  string
		unit   string
	}{
		{"openai", openai.Preset(openai.Tier1), openai.ScopeRequests, pacer.UnitRequests},
		{"anthropic", anthropic.Preset(anthropic.Start), anthropic.ScopeRequests, pacer.UnitRequests},
		{"stripe", stripe.Preset(stripe.Live), stripe.ScopeGlobal, ""},
		{"twilio", twilio.Preset(), twilio.ScopeLongCode, twilio.UnitSegments},
		{"github", github.Preset(github.Token), github.ScopeCore, ""},
		{"slack", slack.Preset(nil), slack.Tier2.Scope(), ""},
		{"whatsapp", whatsapp.Preset(whatsapp.Standard), whatsapp.ScopeThroughput, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const limit = 7
			// New paces below a limit by its headroom, as it paces the
			// scope declared alone.
			want := rate(t, pacer.New(nil, pacer.WithScope(pacer.Scope{Name: tc.scope, Unit: tc.unit, Limit: pacer.PerSecond(limit)})), tc.scope)
			before := rate(t, pacer.New(nil, tc.preset), tc.scope)
			if math.Abs(before-want) < 1e-9 {
				t.Fatalf("%s is already paced at %v a second; pick another figure", tc.scope, want)
			}
			tr := pacer.New(nil, tc.preset,
				pacer.WithScope(pacer.Scope{Name: tc.scope, Unit: tc.unit, Limit: pacer.PerSecond(limit)}))
			if got := rate(t, tr, tc.scope); math.Abs(got-want) > 1e-9 {
				t.Errorf("%s paced at %v a second with a WithScope after the preset setting %d; want %v: the preset's %v should have given way",
					tc.scope, got, limit, want, before)
			}
		})
	}
}

// rate is the pace of scope on tr, in units a second.
func rate(t *testing.T, tr *pacer.Transport, scope string) float64 {
	t.Helper()
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	for _, s := range tr.Stats().Scopes {
		if s.Name == scope {
			return s.Rate
		}
	}
	t.Fatalf("no scope %s in %v", scope, tr.Stats().Scopes)
	return 0
}

// A bad argument to a preset, or to one of its options, is a configuration
// error said in the words the caller wrote — the option and its argument —
// once, not as the scopes the preset would have declared with it, and never
// passed over in silence (an unknown tier has no figures: no cap at all).
func TestEveryPresetNamesTheBadOptionGiven(t *testing.T) {
	for _, tc := range []struct {
		preset pacer.Option
		want   string
	}{
		{openai.Preset(openai.Tier1, openai.WithConcurrency(-1)), "openai.WithConcurrency(-1): the cap on calls in flight must be at least 0 (0 means no cap)"},
		{openai.Preset(openai.Tier1, openai.WithModel("gpt-x", openai.ModelLimits{RPM: -5, TPM: 100})), `openai.WithModel("gpt-x", {RPM:-5 TPM:100 RPD:0 TPD:0}): RPM -5 must not be negative (0 means no limit)`},
		{openai.Preset(openai.Tier1, openai.WithDefault(openai.ModelLimits{RPM: 5, TPM: -5})), "openai.WithDefault({RPM:5 TPM:-5 RPD:0 TPD:0}): TPM -5 must not be negative (0 means no limit)"},
		{openai.Preset(openai.Tier1, openai.WithDefaultOutputTokens(-1)), "openai.WithDefaultOutputTokens(-1): the output reserved must be at least 0"},
		{openai.Preset(openai.Tier1, openai.WithDefaultRequestTokens(0)), "openai.WithDefaultRequestTokens(0): a request's charge must be at least 1"},
		{openai.Preset(openai.Tier(99)), "openai.Preset(99): no such tier; use openai.Tier1 to openai.Tier5"},
		{openai.PresetLimits(openai.Limits{Default: openai.ModelLimits{RPM: -1}, Concurrency: -2}), "openai.PresetLimits: Limits.Default: RPM -1 must not be negative (0 means no limit)\nopenai.PresetLimits: Limits.Concurrency -2 must be at least 0 (0 means no cap)"},
		{anthropic.Preset(anthropic.Start, anthropic.WithConcurrency(-1)), "anthropic.WithConcurrency(-1): the cap on calls in flight must be at least 0 (0 means no cap)"},
		{anthropic.Preset(anthropic.Start, anthropic.WithModel("claude-opus-4", anthropic.ModelLimits{RPM: -3})), `anthropic.WithModel("claude-opus-4", {RPM:-3 ITPM:0 OTPM:0}): RPM -3 must not be negative (0 means no limit)`},
		{anthropic.Preset(anthropic.Start, anthropic.WithDefault(anthropic.ModelLimits{RPM: 3, ITPM: -3, OTPM: -1})), "anthropic.WithDefault({RPM:3 ITPM:-3 OTPM:-1}): ITPM -3 and OTPM -1 must not be negative (0 means no limit)"},
		{anthropic.Preset(anthropic.Tier(99)), "anthropic.Preset(99): no such tier; use anthropic.Evaluation, Start, Build or Scale"},
		{anthropic.PresetLimits(anthropic.Limits{Concurrency: -1}), "anthropic.PresetLimits: Limits.Concurrency -1 must be at least 0 (0 means no cap)"},
		{github.Preset(github.Auth(99)), "github.Preset(99): no such Auth; use github.Token, EnterpriseCloudApp, Unauthenticated or Installation"},
		{slack.Preset(map[string]slack.Tier{"chat.postMessage": slack.Tier(9)}), `slack.Preset: method "chat.postMessage" has tier 9; use slack.Tier1 to slack.Tier4`},
		{stripe.Preset(stripe.Mode(99)), "stripe.Preset(99): no such Mode; use stripe.Live or stripe.Test"},
		{whatsapp.Preset(whatsapp.Throughput(-1)), "whatsapp.Preset(-1): no such Throughput; use whatsapp.Standard, High or Coexistence"},
	} {
		err := pacer.New(nil, tc.preset).Err()
		if want := "pacer: invalid configuration: " + tc.want; err == nil || err.Error() != want {
			t.Errorf("err = %v\nwant  %s", err, want)
		}
	}
}
