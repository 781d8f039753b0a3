package slack_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/figures"
	"github.com/pacer-go/pacer/providers/internal/emulator"
	emu "github.com/pacer-go/pacer/providers/internal/emulator/slack"
	"github.com/pacer-go/pacer/providers/internal/providertest"
	"github.com/pacer-go/pacer/providers/slack"
)

var channels = []string{"C01", "C02", "C03", "C04", "C05"}

// webAPI makes a Web API call with a form body.
func webAPI(method, form string) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, "https://slack.com/api/"+method, strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req
}

// workload is a bot posting to five channels, two workers a channel, while
// it reads history, reacts and edits: the other six workers.
func workload(w, n int) *http.Request {
	switch {
	case w < 10:
		return webAPI("chat.postMessage", fmt.Sprintf("channel=%s&text=build+%d", channels[w/2], n))
	case w < 12:
		return webAPI("conversations.history", "channel=C01&limit=15")
	case w < 14:
		return webAPI("reactions.add", fmt.Sprintf("channel=C02&name=eyes&timestamp=1700000000.%06d", n))
	default:
		return webAPI("chat.update", fmt.Sprintf("channel=C03&ts=1700000000.%06d&text=edited", n))
	}
}

// The preset, driven for ten minutes against an emulator of Slack's
// documented limits, is refused nothing and uses at least 85% of each: one
// message a second in each of five channels, 50 a minute for each Tier 3
// method.
func TestPresetAgainstTheEmulator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server := emu.New()
		client := pacer.New(emulator.Transport(server), slack.Preset(nil)).Client()
		const run = 10 * time.Minute
		statuses := providertest.Drive(client, 16, run, workload)
		t.Logf("statuses %v", statuses)
		if refused := server.Tally.Refused(); len(refused) > 0 {
			t.Errorf("refused: %v", refused)
		}
		for _, ch := range channels {
			ceiling := float64(emu.PostMessagePerSecondPerChannel) * run.Seconds()
			if got := server.Tally.Accepted(emu.KeyPostMessage(ch)); float64(got) < 0.85*ceiling {
				t.Errorf("%d messages to %s in %v, want at least 85%% of %.0f", got, ch, run, ceiling)
			}
		}
		for _, m := range []string{"conversations.history", "reactions.add", "chat.update"} {
			ceiling := float64(emu.PerMinute(emu.Methods[m])) * run.Minutes()
			if got := server.Tally.Accepted(m); float64(got) < 0.85*ceiling {
				t.Errorf("%d %s calls in %v, want at least 85%% of %.0f", got, m, run, ceiling)
			}
		}
	})
}

// A tier set too high meets the emulator's 429: its Retry-After pauses the
// method until the window has room, so the refusals stay few, the method
// keeps most of its limit, and the other methods are not slowed.
func TestRetryAfterFromTheEmulator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server := emu.New()
		tiers := slack.MethodTiers()
		tiers["conversations.history"] = slack.Tier4 // wrong: Slack's page says Tier 3
		client := pacer.New(emulator.Transport(server), slack.Preset(tiers)).Client()
		const run = 10 * time.Minute
		statuses := providertest.Drive(client, 4, run, func(w, n int) *http.Request {
			if w < 2 {
				return webAPI("conversations.history", "channel=C01")
			}
			return webAPI("reactions.add", fmt.Sprintf("channel=C02&name=eyes&timestamp=1700000000.%06d", n))
		})
		refused := server.Tally.Refused()
		t.Logf("statuses %v, refused %v", statuses, refused)
		if refused["conversations.history"] == 0 {
			t.Fatal("no 429 for a method paced at twice its tier: the emulator does not limit it")
		}
		if refused["conversations.history"] > int(run.Minutes())*2 {
			t.Errorf("%d refusals in %v: pacer did not wait out the Retry-After", refused["conversations.history"], run)
		}
		if len(refused) > 1 {
			t.Errorf("another method was refused: %v", refused)
		}
		ceiling := float64(emu.Tier3PerMinute) * run.Minutes()
		if got := server.Tally.Accepted("conversations.history"); float64(got) < 0.85*ceiling {
			t.Errorf("%d conversations.history calls in %v, want at least 85%% of %.0f", got, run, ceiling)
		}
	})
}

func TestFiguresHaveSources(t *testing.T) {
	fs := slack.Figures()
	if err := figures.Check(fs); err != nil {
		t.Fatal(err)
	}
	for m := range slack.MethodTiers() {
		if _, ok := figures.Find(fs, "slack", m); !ok {
			t.Errorf("%s is in MethodTiers but not in the source table", m)
		}
	}
}

// The preset's figures are the emulator's documented ones, each checked on
// its own: a tier above Slack's can hide behind a 429's Retry-After in a run.
func TestFiguresMatchTheEmulator(t *testing.T) {
	fs := slack.Figures()
	want := map[string]float64{
		"slack/Tier 1":                       emu.Tier1PerMinute,
		"slack/Tier 2":                       emu.Tier2PerMinute,
		"slack/Tier 3":                       emu.Tier3PerMinute,
		"slack/Tier 4":                       emu.Tier4PerMinute,
		"slack/chat.postMessage per channel": emu.PostMessagePerSecondPerChannel,
	}
	for m, tier := range emu.Methods {
		want["slack/"+m] = float64(emu.PerMinute(tier))
		// The emulator serves only what was read on Slack's pages.
		if f, _ := figures.Find(fs, "slack", m); !f.Verified() {
			t.Errorf("%s: the emulator carries its tier, the table says it is unverified", m)
		}
	}
	if err := figures.Compare(fs, want); err != nil {
		t.Error(err)
	}
	tiers := slack.MethodTiers()
	for m, tier := range emu.Methods {
		if got := tiers[m].Limit(); got != pacer.PerMinute(emu.PerMinute(tier)) {
			t.Errorf("%s paces at %v, the emulator allows %d a minute (Tier %d)", m, got, emu.PerMinute(tier), tier)
		}
	}
}
