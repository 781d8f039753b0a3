package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/internal/providertest"
	"github.com/pacer-go/pacer/providers/openai"
	"github.com/pacer-go/pacer/retry"
)

// small are limits small enough to reach in a short virtual run.
var small = openai.Limits{Models: map[string]openai.ModelLimits{
	"gpt-4o-mini": {RPM: 120, TPM: 20_000},
	"gpt-4o":      {RPM: 120, TPM: 20_000},
}, Default: openai.ModelLimits{RPM: 60, TPM: 10_000}}

func post(t *testing.T, c *http.Client, path string, body []byte) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "https://api.openai.com"+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return providertest.Do(c, req)
}

// Many callers sending realistic requests as fast as they can for three
// minutes never exceed the published limits: the fake provider, which
// charges by its own tokenizer, never refuses one, and no minute holds more
// requests than the RPM. And the limit is used, not wasted.
func TestPresetNeverExceedsTheLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFakeOpenAI(120, 20_000)
		tr := pacer.New(fake, openai.PresetLimits(small))
		if err := tr.Err(); err != nil {
			t.Fatal(err)
		}
		c := tr.Client()
		byModel := map[string][]realistic{}
		for _, r := range realisticRequests() {
			var m struct{ Model string }
			json.Unmarshal(r.body, &m)
			byModel[m.Model] = append(byModel[m.Model], r)
		}
		start := time.Now()
		var wg sync.WaitGroup
		for g := range 16 {
			reqs := byModel[[]string{"gpt-4o", "gpt-4o-mini"}[g%2]]
			wg.Go(func() {
				for i := g; time.Since(start) < 3*time.Minute; i++ {
					r := reqs[i%len(reqs)]
					if _, err := post(t, c, r.path, r.body); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		accepted, rejected, _ := fake.snapshot()
		if rejected > 0 {
			t.Errorf("the provider refused %d of %d calls", rejected, len(accepted)+rejected)
		}
		tokens := map[string]int64{}
		for i, a := range accepted {
			if a.at.Sub(start) < 3*time.Minute {
				tokens[a.model] += a.tokens
			}
			n := 0
			for _, b := range accepted[i:] {
				if b.model == a.model && b.at.Sub(a.at) < time.Minute {
					n++
				}
			}
			if n > 120 {
				t.Fatalf("%d requests to %s in the minute from %v", n, a.model, a.at.Sub(start))
			}
		}
		// Each model's bucket allows 20,000 tokens at once and 20,000 a
		// minute after: 80,000 in three minutes. Pacing at 90%, at least
		// 70% of it is used.
		for model, n := range tokens {
			t.Logf("%s: %d tokens in the first three minutes", model, n)
			if n < 56_000 {
				t.Errorf("%s: only %d tokens sent in three minutes; the limit allows 80,000", model, n)
			}
		}
	})
}

// The provider's headers move the bucket: a reported remaining of zero
// tokens (or requests) pauses the next call until the reported reset.
func TestPresetHeadersMoveTheBucket(t *testing.T) {
	for _, tc := range []struct {
		name, header, reset string
		wait                time.Duration
	}{
		{"tokens", "x-ratelimit-remaining-tokens", "6m0s", 6 * time.Minute},
		{"requests", "x-ratelimit-remaining-requests", "1.5s", 1500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := newFakeOpenAI(120, 20_000)
				var arrivals []time.Time
				fake.script = func(n int, req *http.Request) *http.Response {
					arrivals = append(arrivals, time.Now())
					if n > 1 {
						return nil
					}
					h := http.Header{}
					h.Set("x-ratelimit-limit-requests", "120")
					h.Set("x-ratelimit-limit-tokens", "20000")
					h.Set("x-ratelimit-remaining-requests", "119")
					h.Set("x-ratelimit-remaining-tokens", "19000")
					h.Set("x-ratelimit-reset-requests", "500ms")
					h.Set("x-ratelimit-reset-tokens", "3s")
					h.Set(tc.header, "0")
					h.Set(strings.Replace(tc.header, "remaining", "reset", 1), tc.reset)
					return fakeResponse(200, h, `{}`)
				}
				c := pacer.New(fake, openai.PresetLimits(small)).Client()
				r := realisticRequests()[0]
				for range 2 {
					if _, err := post(t, c, r.path, r.body); err != nil {
						t.Fatal(err)
					}
				}
				if got := arrivals[1].Sub(arrivals[0]); got < tc.wait {
					t.Errorf("the second call went %v after the first; the provider said to wait %v", got, tc.wait)
				}
			})
		})
	}
}

// OpenAI's retry rules: x-should-retry decides; a rate limit's 429 is
// retried after its reset, though the call is a POST; insufficient_quota is
// a budget error, never retried; a 500 without the header is not sent twice.
func TestPresetRetryRules(t *testing.T) {
	rateLimited := func() *http.Response {
		h := http.Header{}
		h.Set("x-ratelimit-remaining-requests", "0")
		h.Set("x-ratelimit-reset-requests", "2s")
		return fakeResponse(429, h, `{"error":{"message":"Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 120.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
	}
	noQuota := func() *http.Response {
		h := http.Header{}
		h.Set("x-should-retry", "false")
		return fakeResponse(429, h, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`)
	}
	serverError := func(shouldRetry string) func() *http.Response {
		return func() *http.Response {
			h := http.Header{}
			if shouldRetry != "" {
				h.Set("x-should-retry", shouldRetry)
			}
			return fakeResponse(500, h, `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`)
		}
	}
	for _, tc := range []struct {
		name      string
		first     func() *http.Response
		wantCalls int
		wantErr   error
		minGap    time.Duration
	}{
		{"429 rate limit: retried after the reset", rateLimited, 2, nil, 2 * time.Second},
		{"429 insufficient_quota: a budget error, once", noQuota, 1, pacer.ErrBudgetExhausted, 0},
		{"500 with x-should-retry false: once", serverError("false"), 1, nil, 0},
		{"500 with x-should-retry true: retried", serverError("true"), 2, nil, 0},
		{"500 without the header: a POST is not sent twice", serverError(""), 1, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := newFakeOpenAI(120, 20_000)
				var arrivals []time.Time
				fake.script = func(n int, _ *http.Request) *http.Response {
					arrivals = append(arrivals, time.Now())
					if n == 1 {
						return tc.first()
					}
					return nil
				}
				c := pacer.New(fake, openai.PresetLimits(small)).Client()
				r := realisticRequests()[0]
				_, err := post(t, c, r.path, r.body)
				if tc.wantErr != nil {
					if !errors.Is(err, tc.wantErr) {
						t.Errorf("err = %v, want %v", err, tc.wantErr)
					} else if !strings.Contains(err.Error(), "insufficient_quota") {
						t.Errorf("the error does not say why: %v", err)
					}
				} else if err != nil {
					t.Errorf("err = %v", err)
				}
				if _, _, calls := fake.snapshot(); calls != tc.wantCalls {
					t.Errorf("the provider saw %d calls, want %d", calls, tc.wantCalls)
				}
				if len(arrivals) > 1 && arrivals[1].Sub(arrivals[0]) < tc.minGap {
					t.Errorf("retried after %v, want at least %v", arrivals[1].Sub(arrivals[0]), tc.minGap)
				}
			})
		})
	}
}

// A request estimated at more than the TPM bucket holds fails at once, with
// an error that says so and what to do, and is never sent.
func TestPresetRequestLargerThanTPMFailsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFakeOpenAI(120, 20_000)
		c := pacer.New(fake, openai.PresetLimits(small)).Client()
		body := jsonBody(map[string]any{"model": "gpt-4o-mini", "max_tokens": 25_000,
			"messages": []any{map[string]any{"role": "user", "content": "Write a novel."}}})
		start := time.Now()
		_, err := post(t, c, "/v1/chat/completions", body)
		if !errors.Is(err, pacer.ErrExceedsCapacity) {
			t.Fatalf("err = %v, want ErrExceedsCapacity", err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("waited %v before failing", waited)
		}
		for _, want := range []string{"openai/gpt-4o-mini/tokens", "20000", "make the request smaller"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not say %q: %v", want, err)
			}
		}
		if _, _, calls := fake.snapshot(); calls != 0 {
			t.Errorf("the provider saw %d calls", calls)
		}
	})
}

// A body without GetBody is sent intact and, buffered by pacer so that it
// can be retried, routed by its model like any other; a snapshot is charged
// to its model; an unknown model to the default scopes, a bucket of its own.
func TestPresetRoutes(t *testing.T) {
	fake := newFakeOpenAI(120, 20_000)
	tr := pacer.New(fake, openai.PresetLimits(small))
	c := tr.Client()
	req, _ := http.NewRequest(http.MethodPost, "https://api.openai.com/v1/chat/completions",
		io.NopCloser(strings.NewReader(`{"model":"gpt-4o-mini","messages":[]}`)))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("a body without GetBody: status %d; was it consumed?", resp.StatusCode)
	}
	post(t, c, "/v1/chat/completions", []byte(`{"model":"gpt-4o-2024-08-06","messages":[]}`))
	post(t, c, "/v1/chat/completions", []byte(`{"model":"o3-mini","messages":[]}`))
	post(t, c, "/v1/embeddings", []byte(`{"model":"text-embedding-3-small","input":"hi"}`))
	got := map[string]pacer.ScopeStats{}
	for _, s := range tr.Stats().Scopes {
		got[s.Name] = s
	}
	for _, tc := range []struct {
		scope          string
		admitted, keys int
	}{
		{"openai/gpt-4o/requests", 1, 0}, {"openai/gpt-4o/tokens", 1, 0}, // the snapshot, as its model
		{"openai/gpt-4o-mini/tokens", 1, 0}, // the body without GetBody, read once buffered
		{openai.ScopeTokens, 2, 2},          // o3-mini and the embedding model, keyed
		{openai.ScopeRequests, 2, 2},
		{pacer.DefaultScope, 0, 0},
	} {
		if s := got[tc.scope]; s.Admitted != int64(tc.admitted) || s.Keys != tc.keys {
			t.Errorf("scope %s: admitted %d with %d keys, want %d with %d", tc.scope, s.Admitted, s.Keys, tc.admitted, tc.keys)
		}
	}
	accepted, _, _ := fake.snapshot()
	if len(accepted) != 4 {
		t.Errorf("the provider accepted %d calls, want 4", len(accepted))
	}
}

func TestTierLimits(t *testing.T) {
	l := openai.Tier1.Limits()
	if got := l.Models["gpt-4o"]; got != (openai.ModelLimits{RPM: 500, TPM: 30_000}) {
		t.Errorf("Tier1 gpt-4o = %+v", got)
	}
	if l.Default != (openai.ModelLimits{RPM: 500, TPM: 30_000}) {
		t.Errorf("Tier1 default = %+v, want the smallest of each", l.Default)
	}
	l.Models["gpt-4o"] = openai.ModelLimits{}
	if openai.Tier1.Limits().Models["gpt-4o"].RPM != 500 {
		t.Error("changing a tier's Limits changed the table")
	}
	if got := openai.Tier(9).Limits(); got.Models != nil || got.Default != (openai.ModelLimits{}) {
		t.Errorf("an unknown tier has figures: %+v", got)
	}
	for tier := openai.Tier1; tier <= openai.Tier5; tier++ {
		if err := pacer.New(nil, openai.Preset(tier)).Err(); err != nil {
			t.Errorf("tier %d: %v", tier, err)
		}
	}
	err := pacer.New(nil, openai.Preset(openai.Tier1, openai.WithModel("gpt-4o", openai.ModelLimits{RPM: -1}))).Err()
	if err == nil || !strings.Contains(err.Error(), `openai.WithModel("gpt-4o", {RPM:-1`) {
		t.Errorf("a negative RPM: %v", err)
	}
}

// A deadline shorter than the wait fails at once, as for any scope.
func TestPresetHonoursDeadlines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFakeOpenAI(120, 20_000)
		c := pacer.New(fake, openai.PresetLimits(small)).Client()
		big := jsonBody(map[string]any{"model": "gpt-4o-mini", "max_tokens": 19_000, "messages": []any{}})
		post(t, c, "/v1/chat/completions", big)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.openai.com/v1/chat/completions", bytes.NewReader(big))
		start := time.Now()
		if _, err := c.Do(req); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 0 {
			t.Errorf("after %v: %v", time.Since(start), err)
		}
	})
}

// Under Preset the tier's figures give way to what OpenAI publishes for the
// organization, up as well as down: for a model the table lists and for one
// it does not (which starts at the tier's guessed Default). Figures set
// WithModel or WithDefault are paced as given.
func TestPresetFollowsThePublishedLimits(t *testing.T) {
	const unlisted = "gpt-5.4-mini"
	own := openai.ModelLimits{RPM: 60, TPM: 1_000_000}
	for _, tc := range []struct {
		name     string
		preset   pacer.Option
		model    string
		min, max int // accepted in the first minute
	}{
		// Tier 1 lists gpt-4o at 500 requests and 30,000 tokens a minute,
		// and guesses the same for other models; OpenAI publishes 5,000 and
		// 2,000,000: paced at 90%, 4,500 a minute, or at the limit while its
		// counts say plenty is left, and the bucket grows to the published
		// size at once (its burst of 500 is in the first minute too).
		{"listed model", openai.Preset(openai.Tier1), "gpt-4o", 4_000, 5_500},
		{"unlisted model", openai.Preset(openai.Tier1), unlisted, 4_000, 5_500},
		// The organization's own figure, 60 a minute: 54 and a burst of 6.
		{"WithModel", openai.Preset(openai.Tier1, openai.WithModel(unlisted, own)), unlisted, 55, 60},
		{"WithDefault", openai.Preset(openai.Tier1, openai.WithDefault(own)), unlisted, 55, 60},
		{"PresetLimits", openai.PresetLimits(openai.Limits{Default: own}), unlisted, 55, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := newFakeOpenAI(5_000, 2_000_000)
				tr := pacer.New(fake, tc.preset, pacer.WithLogger(slog.New(slog.DiscardHandler)))
				if err := tr.Err(); err != nil {
					t.Fatal(err)
				}
				c := tr.Client()
				body := []byte(`{"model":"` + tc.model + `","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":100}`)
				start := time.Now()
				var wg sync.WaitGroup
				for range 8 {
					wg.Go(func() {
						for time.Since(start) < time.Minute {
							if _, err := post(t, c, "/v1/chat/completions", body); err != nil {
								t.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				accepted, rejected, _ := fake.snapshot()
				n := 0
				for _, a := range accepted {
					if a.at.Sub(start) < time.Minute {
						n++
					}
				}
				if rejected > 0 || n < tc.min || n > tc.max {
					t.Errorf("%d accepted in the first minute and %d refused; want %d to %d and none refused", n, rejected, tc.min, tc.max)
				}
			})
		})
	}
}

// OpenAI's insufficient_quota 429 is an answer: the *retry.Error says
// its status, and its message is one sentence with OpenAI's words in it.
func TestInsufficientQuotaSaysItsStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFakeOpenAI(120, 20_000)
		fake.script = func(int, *http.Request) *http.Response {
			return fakeResponse(429, http.Header{}, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`)
		}
		c := pacer.New(fake, openai.PresetLimits(small)).Client()
		r := realisticRequests()[0]
		_, err := post(t, c, r.path, r.body)
		var re *retry.Error
		if !errors.As(err, &re) || re.LastStatus != 429 || re.Attempts != 1 {
			t.Fatalf("err = %v, want a retry.Error of 1 attempt, last status 429", err)
		}
		msg := re.Error()
		if strings.Count(msg, "pacer:") != 1 || !strings.Contains(msg, "status 429") || !strings.Contains(msg, "please check your plan and billing details") {
			t.Errorf("err = %q, want one sentence naming the status and OpenAI's words", msg)
		}
	})
}
