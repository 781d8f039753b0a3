package anthropic_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/anthropic"
	"github.com/pacer-go/pacer/providers/internal/providertest"
)

// fakeClaude is an in-memory Claude API in virtual time: three continuously
// refilled buckets per model class, Anthropic's header family with RFC 3339
// resets, and its error bodies. It charges input by words and punctuation,
// not the preset's characters, and output by what each call produces, as
// Anthropic counts it ("The max_tokens parameter does not factor into OTPM
// rate limit calculations"). Every answer runs to its max_tokens, which a
// call may produce only if the bucket holds that much.
type fakeClaude struct {
	rpm, itpm, otpm float64

	mu       sync.Mutex
	level    [3]float64
	at       time.Time
	accepted []time.Time
	rejected int
	calls    int
	script   func(n int) *http.Response
}

func newFakeClaude(rpm, itpm, otpm int) *fakeClaude {
	return &fakeClaude{rpm: float64(rpm), itpm: float64(itpm), otpm: float64(otpm),
		level: [3]float64{float64(rpm), float64(itpm), float64(otpm)}}
}

func (f *fakeClaude) RoundTrip(req *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(req.Body)
	req.Body.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.script != nil {
		if resp := f.script(f.calls); resp != nil {
			return resp, nil
		}
	}
	var r struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
		MaxTokens int `json:"max_tokens"`
	}
	if json.Unmarshal(b, &r) != nil {
		return respond(400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"bad json"}}`), nil
	}
	in := 0
	for _, m := range r.Messages {
		in += 3 + len(strings.Fields(m.Content)) + strings.Count(m.Content, ",") + strings.Count(m.Content, ".")
	}
	now := time.Now()
	if !f.at.IsZero() {
		mins := now.Sub(f.at).Minutes()
		for i, lim := range []float64{f.rpm, f.itpm, f.otpm} {
			f.level[i] = min(lim, f.level[i]+mins*lim)
		}
	}
	f.at = now
	out := r.MaxTokens
	cost := [3]float64{1, float64(in), float64(out)}
	for i := range cost {
		if f.level[i] < cost[i] {
			f.rejected++
			h := f.headers(now)
			h.Set("retry-after", "1")
			return respond(429, h, `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your organization's rate limit."}}`), nil
		}
	}
	for i := range cost {
		f.level[i] -= cost[i]
	}
	f.accepted = append(f.accepted, now)
	return respond(200, f.headers(now), `{"id":"msg_fake","type":"message","role":"assistant","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":`+strconv.Itoa(in)+`,"output_tokens":`+strconv.Itoa(out)+`}}`), nil
}

func (f *fakeClaude) headers(now time.Time) http.Header {
	h := http.Header{}
	for i, kind := range []string{"requests", "input-tokens", "output-tokens"} {
		lim := []float64{f.rpm, f.itpm, f.otpm}[i]
		h.Set("anthropic-ratelimit-"+kind+"-limit", strconv.Itoa(int(lim)))
		h.Set("anthropic-ratelimit-"+kind+"-remaining", strconv.Itoa(int(max(f.level[i], 0))))
		full := now.Add(time.Duration((lim - f.level[i]) / lim * float64(time.Minute)))
		h.Set("anthropic-ratelimit-"+kind+"-reset", full.UTC().Format(time.RFC3339))
	}
	return h
}

func respond(status int, h http.Header, body string) *http.Response {
	if h == nil {
		h = http.Header{}
	}
	h.Set("Content-Type", "application/json")
	h.Set("request-id", "req_fake")
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))}
}

var small = anthropic.Limits{Default: anthropic.ModelLimits{RPM: 50, ITPM: 4_000, OTPM: 8_000}}

func send(t *testing.T, c *http.Client, body string) (*http.Response, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "https://api.anthropic.com/v1/messages", bytes.NewReader([]byte(body)))
	return providertest.Do(c, req)
}

const question = `{"model":"claude-sonnet-4-5-20250929","max_tokens":300,"system":"You answer briefly.","messages":[{"role":"user","content":"How should a client react to a 529 overloaded error from an API, and how is it different from a 429?"}]}`

func TestPresetNeverExceedsTheLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFakeClaude(50, 4_000, 8_000)
		c := pacer.New(fake, anthropic.PresetLimits(small)).Client()
		start := time.Now()
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for time.Since(start) < 2*time.Minute {
					if _, err := send(t, c, question); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if fake.rejected > 0 {
			t.Errorf("the provider refused %d calls", fake.rejected)
		}
		for i, a := range fake.accepted {
			n := 0
			for _, b := range fake.accepted[i:] {
				if b.Sub(a) < time.Minute {
					n++
				}
			}
			if n > 50 {
				t.Fatalf("%d requests in the minute from %v", n, a.Sub(start))
			}
		}
		// OTPM binds: 8,000 at once and 8,000 a minute, 300 a call: about
		// 80 calls in two minutes at full speed.
		if len(fake.accepted) < 60 {
			t.Errorf("only %d calls in two minutes", len(fake.accepted))
		}
	})
}

func TestPresetHeadersMoveTheBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFakeClaude(50, 4_000, 8_000)
		var arrivals []time.Time
		fake.script = func(n int) *http.Response {
			arrivals = append(arrivals, time.Now())
			if n > 1 {
				return nil
			}
			h := fake.headers(time.Now())
			h.Set("anthropic-ratelimit-input-tokens-remaining", "0")
			h.Set("anthropic-ratelimit-input-tokens-reset", time.Now().Add(45*time.Second).UTC().Format(time.RFC3339))
			return respond(200, h, `{}`)
		}
		c := pacer.New(fake, anthropic.PresetLimits(small)).Client()
		for range 2 {
			if _, err := send(t, c, question); err != nil {
				t.Fatal(err)
			}
		}
		if got := arrivals[1].Sub(arrivals[0]); got < 45*time.Second {
			t.Errorf("the second call went %v after the first; the reset was 45s away", got)
		}
	})
}

func TestPresetRetryRules(t *testing.T) {
	overloaded := func() *http.Response {
		return respond(529, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	}
	spendCap := func() *http.Response {
		return respond(429, nil, `{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your API usage limits: your organization has crossed its monthly API usage threshold, set based on your organization's API tier. You will regain access on 2026-12-01 at 00:00 UTC.","details":{"error_code":"enforced_spend_limit_reached"}},"request_id":"req_018EeWyXxfu5pfWkrYcMdjWG"}`)
	}
	credit := func() *http.Response {
		return respond(400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}`)
	}
	rateLimited := func() *http.Response {
		h := http.Header{}
		h.Set("retry-after", "3")
		return respond(429, h, `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your organization's rate limit of 50 requests per minute."}}`)
	}
	noRetry := func() *http.Response {
		h := http.Header{}
		h.Set("x-should-retry", "false")
		return respond(529, h, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	}
	for _, tc := range []struct {
		name   string
		first  func() *http.Response
		calls  int
		budget bool
		minGap time.Duration
	}{
		{"529 overloaded: retried", overloaded, 2, false, 0},
		{"429 rate limit: retried after retry-after", rateLimited, 2, false, 3 * time.Second},
		{"429 spend limit: a budget error, once", spendCap, 1, true, 0},
		{"400 credit balance: a budget error, once", credit, 1, true, 0},
		{"x-should-retry false: once", noRetry, 1, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := newFakeClaude(50, 4_000, 8_000)
				var arrivals []time.Time
				fake.script = func(n int) *http.Response {
					arrivals = append(arrivals, time.Now())
					if n == 1 {
						return tc.first()
					}
					return nil
				}
				tr := pacer.New(fake, anthropic.PresetLimits(small))
				_, err := send(t, tr.Client(), question)
				if tc.budget != errors.Is(err, pacer.ErrBudgetExhausted) {
					t.Errorf("err = %v; budget error wanted: %v", err, tc.budget)
				}
				if fake.calls != tc.calls {
					t.Errorf("the provider saw %d calls, want %d", fake.calls, tc.calls)
				}
				if len(arrivals) > 1 && arrivals[1].Sub(arrivals[0]) < tc.minGap {
					t.Errorf("retried after %v, want at least %v", arrivals[1].Sub(arrivals[0]), tc.minGap)
				}
			})
		})
	}
}

// 529 slows the class down: after an overload, calls that went back to
// back are spaced out.
func TestPreset529SlowsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFakeClaude(50, 400_000, 800_000)
		fake.script = func(n int) *http.Response {
			if n == 1 {
				return respond(529, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			}
			return nil
		}
		c := pacer.New(fake, anthropic.PresetLimits(anthropic.Limits{Default: anthropic.ModelLimits{RPM: 50, ITPM: 400_000, OTPM: 800_000}})).Client()
		start := time.Now()
		for range 4 {
			if _, err := send(t, c, question); err != nil {
				t.Fatal(err)
			}
		}
		// Unthrottled, the 5-request burst would let all four through at
		// once; the overload empties the bucket, so they come paced, about
		// 1.3s apart at 45 a minute.
		if got := time.Since(start); got < 3*time.Second {
			t.Errorf("four calls after an overload took %v; the overload did not slow them", got)
		}
	})
}

// A request whose input alone exceeds the class's input bucket fails at
// once, naming the scope. (Its max_tokens cannot: output is charged at the
// estimate, TestMaxTokensAboveTheOutputLimitIsSent.)
func TestPresetRequestLargerThanTheBucketFailsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFakeClaude(50, 4_000, 8_000)
		c := pacer.New(fake, anthropic.PresetLimits(small)).Client()
		start := time.Now()
		_, err := send(t, c, `{"model":"claude-haiku-4-5","max_tokens":100,"messages":[{"role":"user","content":"`+strings.Repeat("abcd", 5_000)+`"}]}`)
		if !errors.Is(err, pacer.ErrExceedsCapacity) || time.Since(start) != 0 || fake.calls != 0 {
			t.Errorf("after %v, %d calls: %v", time.Since(start), fake.calls, err)
		}
		if err != nil && !strings.Contains(err.Error(), anthropic.ScopeInputTokens) {
			t.Errorf("the error does not name the scope: %v", err)
		}
	})
}

func TestEstimateTokens(t *testing.T) {
	e, err := anthropic.EstimateTokens([]byte(`{"model":"claude-opus-4-1","max_tokens":100,"system":[{"type":"text","text":"abcdefgh","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}},{"type":"text","text":"abcd"}]}]}`))
	if err != nil || e.Model != "claude-opus-4-1" || e.Input != 2+1+4+1600 || e.Output != 100 {
		t.Errorf("%+v, %v", e, err)
	}
	// Output is charged at the estimate, not max_tokens.
	e, err = anthropic.EstimateTokens([]byte(`{"model":"claude-opus-4-7","max_tokens":64000,"messages":[]}`))
	if err != nil || e.MaxTokens != 64_000 || e.Output != anthropic.DefaultOutputEstimate {
		t.Errorf("%+v, %v", e, err)
	}
	if _, err := anthropic.EstimateTokens([]byte(`nope`)); err == nil {
		t.Error("no error for a body that is not JSON")
	}
}

func TestTiers(t *testing.T) {
	if got := anthropic.Start.Limits().Default; got != (anthropic.ModelLimits{RPM: 1_000, ITPM: 500_000, OTPM: 100_000}) {
		t.Errorf("Start = %+v", got)
	}
	for _, tier := range []anthropic.Tier{anthropic.Start, anthropic.Scale} {
		if err := pacer.New(nil, anthropic.Preset(tier, anthropic.WithModel("claude-opus-4", anthropic.ModelLimits{RPM: 10}))).Err(); err != nil {
			t.Error(err)
		}
	}
	if got := anthropic.Tier(7).Limits(); got.Default != (anthropic.ModelLimits{}) {
		t.Errorf("unknown tier: %+v", got)
	}
}

// Under Preset the tier's figures give way to what Anthropic publishes for
// the organization, up as well as down; figures set WithModel (here for
// the class of claude-sonnet-4-5, given by another of its models) or
// PresetLimits are paced as given.
func TestPresetFollowsThePublishedLimits(t *testing.T) {
	own := anthropic.ModelLimits{RPM: 60, ITPM: 1_000_000, OTPM: 1_000_000}
	for _, tc := range []struct {
		name     string
		preset   pacer.Option
		min, max int // accepted in the first minute
	}{
		// Start is 1,000 requests and 100,000 output tokens a minute: about
		// 630 calls of 300 output tokens in the first minute. Anthropic
		// publishes 4,000 and 800,000: output binds at about 2,700 a
		// minute, and the bucket grows to the published size at once (a
		// minute's worth, as the server's is), so the first minute holds
		// up to twice that.
		{"tier figures", anthropic.Preset(anthropic.Start), 2_000, 5_400},
		// The organization's own figure, 60 a minute: 54 and a burst of 6.
		{"WithModel", anthropic.Preset(anthropic.Start, anthropic.WithModel("claude-sonnet-4-6", own)), 55, 60},
		{"PresetLimits", anthropic.PresetLimits(anthropic.Limits{Default: own}), 55, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := newFakeClaude(4_000, 4_000_000, 800_000)
				c := pacer.New(fake, tc.preset, pacer.WithLogger(slog.New(slog.DiscardHandler))).Client()
				start := time.Now()
				var wg sync.WaitGroup
				for range 8 {
					wg.Go(func() {
						for time.Since(start) < time.Minute {
							if _, err := send(t, c, question); err != nil {
								t.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				n := 0
				for _, a := range fake.accepted {
					if a.Sub(start) < time.Minute {
						n++
					}
				}
				if fake.rejected > 0 || n < tc.min || n > tc.max {
					t.Errorf("%d accepted in the first minute and %d refused; want %d to %d and none refused", n, fake.rejected, tc.min, tc.max)
				}
			})
		})
	}
}
