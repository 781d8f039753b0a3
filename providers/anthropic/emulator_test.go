package anthropic_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/anthropic"
	"github.com/pacer-go/pacer/providers/figures"
	"github.com/pacer-go/pacer/providers/internal/emulator"
	emu "github.com/pacer-go/pacer/providers/internal/emulator/anthropic"
	"github.com/pacer-go/pacer/providers/internal/providertest"
)

// A paragraph of a user's question: 60 words, about 330 characters.
var paragraph = strings.Repeat("Please summarise the attached support ticket and suggest a reply, ", 6)

// messages is a chat integration's traffic: each worker sends questions of
// one to four paragraphs to one of models, asking for up to maxTokens; the
// model answers with the length answer gives, which the emulator reads
// back from the request's metadata. Every third call streams.
func messages(models []string, maxTokens int, answer func(w, n int) int) func(w, n int) *http.Request {
	return func(w, n int) *http.Request {
		body, _ := json.Marshal(map[string]any{
			"model":      models[(w+n)%len(models)],
			"max_tokens": maxTokens,
			"stream":     n%3 == 2,
			"system":     "You are a helpful support assistant.",
			"metadata":   map[string]string{"user_id": "answer-" + strconv.Itoa(answer(w, n))},
			"messages":   []map[string]string{{"role": "user", "content": strings.Repeat(paragraph, 1+(w+n)%4)}},
		})
		req, _ := http.NewRequest(http.MethodPost, "https://api.anthropic.com/v1/messages", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		return req
	}
}

// answerOf reads the answer's length back from a request's metadata.
func answerOf(body []byte) int {
	var r struct {
		Metadata struct {
			UserID string `json:"user_id"`
		} `json:"metadata"`
	}
	json.Unmarshal(body, &r)
	n, _ := strconv.Atoi(strings.TrimPrefix(r.Metadata.UserID, "answer-"))
	return n
}

// spread returns answers from lo to hi tokens, spread evenly over the calls.
func spread(lo, hi int) func(w, n int) int {
	return func(w, n int) int { return lo + (w*7919+n*104729)%(hi-lo+1) }
}

// The preset, driven by messages whose answers are generated in real time
// against an emulator of the documented limits, is refused nothing and
// uses at least 85% of the limit that binds.
func TestPresetAgainstTheEmulator(t *testing.T) {
	cases := []struct {
		name      string
		tier      anthropic.Tier
		emuTier   string
		models    []string
		class     string
		opts      []anthropic.Option
		maxTokens int
		answer    func(w, n int) int
		binds     func(emu.Limits) (what string, per int, unit string)
	}{
		{
			// Sonnet 4.5 and 4.6 share one bucket; answers of 500 to 1,500
			// tokens (the default estimate's) against max_tokens of 8,192:
			// output binds, at 400,000 a minute.
			name: "Start, Sonnet 4.x: output binds", tier: anthropic.Start, emuTier: "Start",
			models: []string{"claude-sonnet-4-5-20250929", "claude-sonnet-4-6"}, class: emu.Sonnet4,
			maxTokens: 8_192, answer: spread(500, 1_500),
			binds: func(l emu.Limits) (string, int, string) { return "output", l.OTPM, "output tokens" },
		},
		{
			// Haiku 3.5's row is a fifth of the one the preset once applied
			// to every class: output binds, at 20,000 a minute.
			name: "Start, Haiku 3.5: output binds", tier: anthropic.Start, emuTier: "Start",
			models: []string{"claude-3-5-haiku-20241022"}, class: emu.Haiku35,
			maxTokens: 4_096, answer: spread(500, 1_500),
			binds: func(l emu.Limits) (string, int, string) { return "output", l.OTPM, "output tokens" },
		},
		{
			// Short answers, 50 to 150 tokens, charged the default estimate
			// of 1,000 up front: each call's output tokens are settled on
			// what it produced, so requests bind, at 1,000 a minute, not
			// the reserved output (400 calls a minute of 1,000 tokens).
			name: "Start, Sonnet 4.x, short answers: settled on the output, requests bind", tier: anthropic.Start, emuTier: "Start",
			models: []string{"claude-sonnet-4-6"}, class: emu.Sonnet4,
			maxTokens: 8_192, answer: spread(50, 150),
			binds: func(l emu.Limits) (string, int, string) { return "", l.RPM, "requests" },
		},
		{
			// Opus 4.5 and 4.7, one bucket; short answers: requests bind at
			// Build's 5,000 a minute.
			name: "Build, Opus 4.x: requests bind", tier: anthropic.Build, emuTier: "Build",
			models: []string{"claude-opus-4-7", "claude-opus-4-5-20251101"}, class: emu.Opus4,
			opts: []anthropic.Option{anthropic.WithOutputEstimate(40)}, maxTokens: 512, answer: spread(20, 60),
			binds: func(l emu.Limits) (string, int, string) { return "", l.RPM, "requests" },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				providertest.Today()
				server := emu.New(c.emuTier)
				server.Output = answerOf
				client := pacer.New(emulator.Transport(server), anthropic.Preset(c.tier, c.opts...)).Client()
				const run = 5 * time.Minute
				statuses := providertest.Drive(client, 160, run, messages(c.models, c.maxTokens, c.answer))
				t.Logf("statuses %v; calls %d, input %d, output %d; refused %v", statuses, server.Tally.Accepted(c.class),
					server.Tally.Units(c.class+" input"), server.Tally.Units(c.class+" output"), server.Tally.Refused())
				if n := statuses[http.StatusTooManyRequests]; n > 0 || len(server.Tally.Refused()) > 0 {
					t.Errorf("%d calls refused with 429: %v", n, server.Tally.Refused())
				}
				what, per, unit := c.binds(emu.Tables[c.emuTier][c.class])
				key := c.class
				if what != "" {
					key += " " + what
				}
				got := server.Tally.Units(key)
				if what == "" {
					got = int64(server.Tally.Accepted(key))
				}
				if want := 0.85 * float64(per) * run.Minutes(); float64(got) < want {
					t.Errorf("%d %s in %v, want at least %.0f (85%% of %d a minute)", got, unit, run, want, per)
				}
			})
		})
	}
}

// A request whose max_tokens exceeds the class's whole output limit is
// sent: Anthropic counts the tokens produced, not max_tokens.
func TestMaxTokensAboveTheOutputLimitIsSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		providertest.Today()
		server := emu.New("Start")
		client := pacer.New(emulator.Transport(server), anthropic.Preset(anthropic.Start)).Client()
		body := fmt.Sprintf(`{"model":"claude-fable-5","max_tokens":%d,"messages":[{"role":"user","content":"Write the report."}]}`,
			2*emu.Tables["Start"][emu.Fable5].OTPM)
		req, _ := http.NewRequest(http.MethodPost, "https://api.anthropic.com/v1/messages", strings.NewReader(body))
		resp, err := providertest.Do(client, req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("resp %v, err %v", resp, err)
		}
	})
}

func TestFiguresHaveSources(t *testing.T) {
	if err := figures.Check(anthropic.Figures()); err != nil {
		t.Fatal(err)
	}
}

// Each figure's quote holds its value, as the page writes it; a figure in
// unit "scope" states which scope a limit is on, and holds no number.
func TestQuotesHoldTheFigures(t *testing.T) {
	for _, f := range anthropic.Figures() {
		if f.Verified() && f.Unit != "tokens" && f.Unit != "scope" && !strings.Contains(f.Quote, " "+comma(int(f.Value))) {
			t.Errorf("%v: the quote %q does not hold the figure", f, f.Quote)
		}
	}
}

func comma(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// The preset's figures are the emulator's documented ones, class by class
// and tier by tier: a figure above Anthropic's can hide behind pacer's
// headroom and the headers in a run, so each is checked on its own.
func TestFiguresMatchTheEmulator(t *testing.T) {
	classes := map[string]string{
		anthropic.ClassFable5: emu.Fable5, anthropic.ClassOpus4: emu.Opus4, anthropic.ClassSonnet5: emu.Sonnet5,
		anthropic.ClassSonnet4: emu.Sonnet4, anthropic.ClassHaiku45: emu.Haiku45, anthropic.ClassHaiku35: emu.Haiku35,
	}
	fs := anthropic.Figures()
	for _, tier := range []anthropic.Tier{anthropic.Start, anthropic.Build, anthropic.Scale} {
		limits := tier.Limits()
		for class, emuClass := range classes {
			want := emu.Tables[tier.String()][emuClass]
			got := limits.Models[class]
			if got != (anthropic.ModelLimits{RPM: want.RPM, ITPM: want.ITPM, OTPM: want.OTPM}) {
				t.Errorf("%v %s: preset %+v, emulator's documented %+v", tier, class, got, want)
			}
			for dim, v := range map[string]int{"requests": want.RPM, "input-tokens": want.ITPM, "output-tokens": want.OTPM} {
				if f, ok := figures.Find(fs, "anthropic "+tier.String(), class+" "+dim); !ok || f.Value != float64(v) {
					t.Errorf("%v %s %s: table %v, emulator's documented %d", tier, class, dim, f.Value, v)
				}
			}
		}
		// A model of no table gets the tier's lowest current row.
		if d, fable := limits.Default, emu.Tables[tier.String()][emu.Fable5]; d != (anthropic.ModelLimits{RPM: fable.RPM, ITPM: fable.ITPM, OTPM: fable.OTPM}) {
			t.Errorf("%v: default %+v, want Fable 5's %+v", tier, d, fable)
		}
	}
	// The Evaluation tier is below every standard one.
	ev := anthropic.Evaluation.Limits().Default
	for _, tier := range emu.Tables {
		for class, l := range tier {
			if ev.RPM >= l.RPM || ev.ITPM >= l.ITPM || ev.OTPM >= l.OTPM {
				t.Errorf("Evaluation %+v is not below %s's %+v", ev, class, l)
			}
		}
	}
}

// Model IDs count against the classes the tables name.
func TestModelClass(t *testing.T) {
	for model, want := range map[string]string{
		"claude-opus-4-7":            anthropic.ClassOpus4,
		"claude-opus-4-5-20251101":   anthropic.ClassOpus4,
		"claude-sonnet-4-5-20250929": anthropic.ClassSonnet4,
		"claude-sonnet-4-6":          anthropic.ClassSonnet4,
		"claude-sonnet-5":            anthropic.ClassSonnet5,
		"claude-haiku-4-5-20251001":  anthropic.ClassHaiku45,
		"claude-3-5-haiku-latest":    anthropic.ClassHaiku35,
		"claude-fable-5":             anthropic.ClassFable5,
		"claude-sonnet-5-5":          "claude-sonnet-5-5", // not Sonnet 5: a model of its own
		"claude-opus-4-1-20250805":   "claude-opus-4-1",   // not in the tables
		"claude-next":                "claude-next",
	} {
		if got := anthropic.ModelClass(model); got != want {
			t.Errorf("ModelClass(%q) = %q, want %q", model, got, want)
		}
		if emuClass := emu.ClassOf(model); (emuClass == emu.Unlisted) != (strings.HasPrefix(want, "claude-opus-4-1") || want == "claude-next" || want == "claude-sonnet-5-5") {
			t.Errorf("%s: the emulator's class %q disagrees with the preset's %q", model, emuClass, want)
		}
	}
}
