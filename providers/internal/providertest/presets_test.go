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
			want := limit * pacer.DefaultHeadroom // New paces below a limit by its headroom
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
