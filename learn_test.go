package pacer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/internal/pace"
	"github.com/pacer-go/pacer/observe"
)

// limitedAPI is a fake provider in virtual time: a token bucket of limit a
// second with a burst, answering 429 past it. What it says about its limit
// depends on its feedback mode.
type limitedAPI struct {
	limit, burst float64
	mode         string // "ratelimit-headers", "retry-after", "bare-429"

	mu       sync.Mutex
	tokens   float64
	last     time.Time
	accepted []time.Time
	rejected []time.Time
}

func (a *limitedAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	if a.last.IsZero() {
		a.tokens, a.last = a.burst, now
	}
	a.tokens = min(a.burst, a.tokens+now.Sub(a.last).Seconds()*a.limit)
	a.last = now
	h := http.Header{}
	status := http.StatusOK
	if a.tokens >= 1 {
		a.tokens--
		a.accepted = append(a.accepted, now)
	} else {
		status = http.StatusTooManyRequests
		a.rejected = append(a.rejected, now)
	}
	switch {
	case a.mode == "ratelimit-headers":
		h.Set("RateLimit-Policy", fmt.Sprintf(`"api";q=%d;w=1`, int(a.limit)))
		h.Set("RateLimit", fmt.Sprintf(`"api";r=%d;t=1`, int(a.tokens)))
	case a.mode == "retry-after" && status == http.StatusTooManyRequests:
		h.Set("Retry-After", "1")
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

// between counts the times in [from, to).
func between(ts []time.Time, from, to time.Time) (n int) {
	for _, t := range ts {
		if !t.Before(from) && t.Before(to) {
			n++
		}
	}
	return n
}

// TestConvergesOnAnUnknownLimit runs 16 goroutines as fast as pacer lets
// them against a server whose limit the client does not know, for each way a
// server can say it is overloaded. After warm-up, goodput must be within 10%
// of the server's limit and 429s under 1% of requests.
func TestConvergesOnAnUnknownLimit(t *testing.T) {
	const limit = 50
	tests := []struct {
		mode   string
		opts   []Option
		warmUp time.Duration
	}{
		// The server publishes its limit: nothing configured, pacer learns it.
		{"ratelimit-headers", nil, 5 * time.Second},
		// Configured at twice the real limit; the server says only when to retry.
		{"retry-after", []Option{WithLimit(PerSecond(2 * limit))}, 20 * time.Second},
		// Configured at twice the real limit; the server says nothing but 429.
		{"bare-429", []Option{WithLimit(PerSecond(2 * limit))}, 20 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := &limitedAPI{limit: limit, burst: 10, mode: tt.mode}
				tr := New(api, tt.opts...)
				start := time.Now()
				from, end := start.Add(tt.warmUp), start.Add(tt.warmUp+60*time.Second)
				var wg sync.WaitGroup
				for range 16 {
					wg.Go(func() {
						for time.Now().Before(end) {
							get(tr, context.Background(), "http://api.test/")
						}
					})
				}
				wg.Wait()
				accepted := between(api.accepted, from, end)
				rejected := between(api.rejected, from, end)
				goodput := float64(accepted) / end.Sub(from).Seconds()
				share := float64(rejected) / float64(accepted+rejected)
				t.Logf("goodput %.1f/s of %d/s; %d 429s of %d requests (%.2f%%)", goodput, limit, rejected, accepted+rejected, 100*share)
				if goodput < 0.895*limit || goodput > 1.1*limit {
					t.Errorf("goodput %.1f/s, want within 10%% of %d/s", goodput, limit)
				}
				if share >= 0.01 {
					t.Errorf("%.2f%% of requests got 429, want under 1%%", 100*share)
				}
			})
		})
	}
}

// scriptedAPI answers each request with the next of its responses' headers
// and statuses, then 200 with no headers.
type scriptedAPI struct {
	mu    sync.Mutex
	steps []scripted
	sent  []time.Time
}

type scripted struct {
	status int
	header map[string]string
}

func (a *scriptedAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sent = append(a.sent, time.Now())
	step := scripted{status: http.StatusOK}
	if len(a.steps) > 0 {
		step, a.steps = a.steps[0], a.steps[1:]
	}
	h := http.Header{}
	for k, v := range step.header {
		h.Set(k, v)
	}
	return &http.Response{StatusCode: step.status, Header: h, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

func (a *scriptedAPI) sentTimes() []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]time.Time(nil), a.sent...)
}

// refusedFirst returns a Transport without retries at limit, over an API
// whose first answer is a 429 with Retry-After: retryAfter and every later
// one a 200, once that first call is answered; and when it was sent.
func refusedFirst(retryAfter string, limit Limit) (*scriptedAPI, *Transport, time.Time) {
	api := &scriptedAPI{steps: []scripted{{http.StatusTooManyRequests, map[string]string{"Retry-After": retryAfter}}}}
	tr := New(api, WithLimit(limit), WithoutRetry())
	start := time.Now()
	get(tr, context.Background(), "http://api.test/")
	return api, tr, start
}

func TestOne429PausesEveryCallerThenRestartsPaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api, tr, start := refusedFirst("5", PerSecond(10)) // 9 a second, a burst of 1
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() { mustNotErr(t, get(tr, context.Background(), "http://api.test/")) })
		}
		wg.Wait()
		sent := api.sentTimes()[1:]
		if first := sent[0].Sub(start); first < 5*time.Second {
			t.Fatalf("a call went out %v after a 429 that asked for 5 s", first)
		}
		// Paced: the 429 also cut the rate — with no history to measure the
		// server's capacity by, to half of 9 a second, climbing back slowly
		// since each 429 pauses every caller — so 16 calls take about 3 s
		// after the pause, not 0.
		if in := between(sent, start, start.Add(6*time.Second)); in > 6 {
			t.Errorf("%d calls went out in the first second after the pause; want them paced at about 4.5/s", in)
		}
		if last := sent[len(sent)-1].Sub(start); last < 7500*time.Millisecond || last > 8500*time.Millisecond {
			t.Errorf("the last call went out at %v, want about 5 s + 16/5 s", last)
		}
	})
}

// A pause leaves the bucket empty when it ends, whatever the pace did
// meanwhile: a cut climbs back fastest just after it is made, and refilled
// at the pace it had climbed to, the bucket was full again when the pause
// ended and its burst went out at once into the server that had asked for
// the pause.
func TestAPauseEndsWithAnEmptyBucketThoughTheCutClimbs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api, tr, start := refusedFirst("2", PerSecond(100)) // 90 a second, a burst of 10
		hammer(tr, 16, start.Add(3*time.Second))
		sent := api.sentTimes()[1:]
		if len(sent) == 0 || sent[0].Sub(start) < 2*time.Second {
			t.Fatalf("calls sent %v, want none before the 2 s the 429 asked for", sent)
		}
		// At the cut's pace (half of 90 a second, climbing), from empty:
		// a call every 20 ms or so, not the burst of 10 at once.
		if in := between(sent, start, start.Add(2*time.Second+50*time.Millisecond)); in > 4 {
			t.Errorf("%d calls went out in the first 50 ms after the pause, want the pace's few from an empty bucket", in)
		}
	})
}

func TestRemainingClampsTheBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Pacer thinks it has a burst of 100; the provider says 2 are left.
		api := &scriptedAPI{steps: []scripted{{http.StatusOK, map[string]string{"X-RateLimit-Remaining": "2", "X-RateLimit-Reset": "60"}}}}
		tr := New(api, WithLimit(Limit{Count: 1000, Per: time.Minute, Burst: 100}), WithFailFast())
		mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		if err := get(tr, context.Background(), "http://api.test/"); asThrottled(t, err).Reason != observe.ReasonRate {
			t.Errorf("err = %v, want throttled for rate: the provider said 2 were left", err)
		}
	})
}

// A success that took the last call pauses the scope until the reset. A
// reset in whole seconds (Unix seconds, or a Date header, truncate) may be
// up to a second later: in a window of a minute, waiting that second out
// costs little of the window, and a call sent into none left may cost the
// next minute, so the pause runs to the reset's slack. In a window of
// seconds the slack is a large share of every window: "1s" may already be
// here, and does not stop the scope, which goes on at half its pace until
// the next answer says more.
func TestNoneRemainingWaitsWhileTheResetMayLieAhead(t *testing.T) {
	for _, tt := range []struct {
		reset string
		per   time.Duration
		want  time.Duration
	}{
		{"3s", time.Minute, 4 * time.Second},
		{"1.5s", time.Minute, 1500 * time.Millisecond},
		{"6m0s", time.Minute, 6*time.Minute + time.Second},
		{"1s", time.Minute, 2 * time.Second},
		{"3s", 4 * time.Second, 3 * time.Second},
		{"1s", 4 * time.Second, 0},
	} {
		synctest.Test(t, func(t *testing.T) {
			api := &scriptedAPI{steps: []scripted{{http.StatusOK, map[string]string{
				"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": tt.reset}}}}
			// 75 a second at the headroom, whatever the window.
			tr := New(api, WithLimit(Limit{Count: int(tt.per / (12 * time.Millisecond)), Per: tt.per}))
			start := time.Now()
			mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
			mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
			waited := time.Since(start)
			if tt.want == 0 {
				// No pause: the scope goes on at half its pace (37.5 a
				// second) until the next answer says more.
				if waited > 30*time.Millisecond {
					t.Errorf("reset %s in a window of %v: the next call went out after %v, want no pause", tt.reset, tt.per, waited)
				}
				return
			}
			// The bucket is empty when the pause ends: the first token comes
			// 1/75 s later.
			tt.want += time.Second / 75
			if waited < tt.want || waited > tt.want+time.Millisecond {
				t.Errorf("reset %s in a window of %v: the next call went out after %v, want %v", tt.reset, tt.per, waited, tt.want)
			}
		})
	}
}

// Below the margin at a minute's turn, a count says the window is spent
// and the turn may already be here (a reset of "1s" may be up to a second
// later): whether it brought anything back is unknown, and a refusal may
// cost the next minute. The scope learns it one call at a time — not at
// half its blind pace, and not with the burst a waiting call woke to as
// the report ran out (the bucket refills at the pace it is asked at, over
// all the time since it was last taken from). In a window of a second the
// turn costs a call at most, and half the blind pace goes on.
//
// The server here says "1s" at every answer: its reset never comes. Once
// the soonest reset it named is past its slack, the count is no turn, and
// half the blind pace goes on there too, not a call a second for good.
//
// The calls of the first instant are left out: sixteen callers race the
// first answer, and how many are admitted before it is read (its burst
// allows them all) is the scheduler's, not the rule's.
func TestBelowTheMarginAtALongTurnOneCallAtATime(t *testing.T) {
	for _, tt := range []struct {
		name  string
		limit Limit
		most  int // calls sent after the first instant, in the first two seconds
		least int // calls sent from the third second to the sixth
	}{
		{"a minute's window", Limit{Count: 600, Per: time.Minute}, 1, 10},
		{"a second's window", Limit{Count: 10, Per: time.Second}, 20, 10},
	} {
		synctest.Test(t, func(t *testing.T) {
			var early, late atomic.Int64
			start := time.Now()
			api := roundTripFunc(func(req *http.Request) (*http.Response, error) {
				switch at := time.Since(start); {
				case at == 0:
				case at < 2*time.Second:
					early.Add(1)
				case at >= 3*time.Second && at < 6*time.Second:
					late.Add(1)
				}
				h := http.Header{}
				h.Set("x-ratelimit-reset-requests", "1s")
				if tt.limit.Per == time.Minute {
					// OpenAI's headers: requests a minute, and 2 left, below
					// the margin of 6.
					h.Set("x-ratelimit-limit-requests", "600")
					h.Set("x-ratelimit-remaining-requests", "2")
				} else {
					h.Set("x-ratelimit-remaining-requests", "0")
				}
				return &http.Response{StatusCode: http.StatusOK, Header: h, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
			})
			tr := New(api, WithLimit(tt.limit), WithMaxWait(time.Minute))
			hammer(tr, 16, start.Add(6*time.Second))
			if n := int(early.Load()); n > tt.most {
				t.Errorf("%s: %d calls sent after the first instant in the first two seconds, at the turn, want at most %d", tt.name, n, tt.most)
			}
			if n := int(late.Load()); n < tt.least {
				t.Errorf("%s: %d calls sent from 3 s to 6 s though the reset never came, want %d or more", tt.name, n, tt.least)
			}
		})
	}
}

func TestHeadersCannotParkACallerForever(t *testing.T) {
	for _, tt := range []struct {
		retryAfter string
		opts       []Option
		want       time.Duration
	}{
		{"999999999", nil, defaultMaxWait},
		{"999999999", []Option{WithMaxWait(time.Second)}, time.Second},
		{"-5", nil, 0},
		{"soon", nil, 0},
		{"Sun, 06 Nov 1994 08:49:37 GMT", nil, 0}, // in the past (the bubble starts in 2000)
	} {
		synctest.Test(t, func(t *testing.T) {
			api := &scriptedAPI{steps: []scripted{{http.StatusTooManyRequests, map[string]string{"Retry-After": tt.retryAfter}}}}
			tr := New(api, append([]Option{WithLimit(Limit{Count: 1000, Per: time.Second, Burst: 100}), WithoutRetry()}, tt.opts...)...)
			start := time.Now()
			get(tr, context.Background(), "http://api.test/")
			if tt.want > 0 {
				// A pause beyond the maximum wait is said at once, with
				// when the provider says the quota returns (farreset.go);
				// the scope probes again after the maximum wait.
				te := asThrottled(t, get(tr, context.Background(), "http://api.test/"))
				if te.Reset.IsZero() || te.RetryAfter != tt.want || time.Since(start) != 0 {
					t.Errorf("Retry-After: %s: refused after %v with Reset %v, RetryAfter %v; want at once, with a reset, and %v",
						tt.retryAfter, time.Since(start), te.Reset, te.RetryAfter, tt.want)
				}
				time.Sleep(te.RetryAfter)
			}
			mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
			// A pause ends with the emptied bucket's first token: 1/450 s, at
			// the pace the 429 halved.
			if waited := time.Since(start); waited < tt.want || waited > tt.want+3*time.Millisecond {
				t.Errorf("Retry-After: %s: the next call waited %v, want %v", tt.retryAfter, waited, tt.want)
			}
		})
	}
}

func TestPublishedLimitOverridesAHigherConfiguredOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logged strings.Builder
		api := &limitedAPI{limit: 10, burst: 10, mode: "ratelimit-headers"}
		tr := New(api, WithLimit(PerSecond(100)), WithLogger(slogTo(&logged)))
		start := time.Now()
		for time.Since(start) < 10*time.Second {
			get(tr, context.Background(), "http://api.test/")
		}
		// The provider reports live remaining counts: they pace the scope,
		// to the edge of the published 10 a second (all of it, not the
		// blind 90 %), and a call beyond it where the server's bucket still
		// holds one; no 429.
		if n := between(api.accepted, start.Add(time.Second), start.Add(10*time.Second)); n < 87 || n > 92 {
			t.Errorf("%d accepted in 9 s, want about 9.8 to 10 a second: the edge of the published 10", n)
		}
		if len(api.rejected) > 0 {
			t.Errorf("%d 429s, want none", len(api.rejected))
		}
		if !strings.Contains(logged.String(), "lower limit") || !strings.Contains(logged.String(), "10/1s") {
			t.Errorf("no log line says the configured limit was overridden: %q", logged.String())
		}
	})
}

func TestConfiguredLimitBelowThePublishedOneStays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &limitedAPI{limit: 100, burst: 10, mode: "ratelimit-headers"}
		tr := New(api, WithLimit(PerSecond(10)))
		start := time.Now()
		for time.Since(start) < 10*time.Second {
			mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		}
		// The configured 10/s at 90%, not at its edge (a limit set below the
		// published one keeps its headroom), less a call or two while the
		// first remaining count is spread before the next shows the refill.
		if n := len(api.accepted); n < 89 || n > 91 {
			t.Errorf("%d sent in 10 s, want 91: the configured 10/s at 90%%", n)
		}
	})
}

// policyHeaders publish a limit of n requests a minute, as OpenAI's
// x-ratelimit-limit-requests does.
func policyHeaders(n int) map[string]string {
	return map[string]string{"X-Ratelimit-Limit-Requests": strconv.Itoa(n), "X-Ratelimit-Remaining-Requests": strconv.Itoa(n - 1)}
}

// A provider that lowers its published limit and then raises it again (a
// tier upgrade, an incident over) is followed back up to the configured
// limit: a lower figure learned once does not stay for good.
func TestPublishedLimitThatRisesAgainGivesBackTheConfiguredOne(t *testing.T) {
	api := &scriptedAPI{steps: []scripted{{http.StatusOK, policyHeaders(600)}, {http.StatusOK, policyHeaders(6000)}}}
	tr := New(api, WithLimit(PerMinute(3000)), WithLogger(slogTo(io.Discard)))
	mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
	if rate, _ := tr.defaultScope.shared.pace(); rate != 9 {
		t.Fatalf("pace %v/s after 600 a minute was published, want 9/s", rate)
	}
	mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
	if rate, _ := tr.defaultScope.shared.pace(); rate != 45 {
		t.Fatalf("pace %v/s after 6,000 a minute was published, want the configured 3,000 a minute at 90%%: 45/s", rate)
	}
}

// A published limit whose reset is further off than its window does not
// count that window (a day's figure beside a per-minute limit): it does not
// raise a provisional limit.
func TestProvisionalLimitIgnoresALongerPeriodsFigure(t *testing.T) {
	day := policyHeaders(10_000)
	day["X-Ratelimit-Reset-Requests"] = "13h20m0s"
	api := &scriptedAPI{steps: []scripted{{http.StatusOK, day}}}
	tr := New(api, WithLogger(slogTo(io.Discard)),
		WithScope(Scope{Name: DefaultScope, Limit: PerMinute(3000), Provisional: true}))
	mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
	// The 9,999 left until the reset 13 hours off still pace the scope, by
	// spreading them; the figure itself is not taken as the limit.
	if p := tr.defaultScope.shared.published(); p != nil {
		t.Fatalf("learned %+v after 10,000 with a reset 13 hours off, want the provisional limit kept", p)
	}
	if rate, _ := tr.defaultScope.shared.pace(); rate > 45 {
		t.Fatalf("pace %v/s, want at most the provisional 45/s", rate)
	}
}

// A provisional limit is a stand-in until the provider publishes its own,
// which then replaces it higher as well as lower.
func TestProvisionalLimitFollowsThePublishedOne(t *testing.T) {
	api := &scriptedAPI{steps: []scripted{{http.StatusOK, policyHeaders(6000)}, {http.StatusOK, policyHeaders(600)}, {http.StatusOK, policyHeaders(3000)}}}
	tr := New(api, WithLogger(slogTo(io.Discard)),
		WithScope(Scope{Name: DefaultScope, Limit: PerMinute(3000), Provisional: true}))
	mustNotErr(t, tr.Err())
	mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
	if rate, burst := tr.defaultScope.shared.pace(); rate != 90 || burst != 600 {
		t.Fatalf("pace %v/s, burst %v, after 6,000 a minute was published; want 90/s and the configured shape, 600", rate, burst)
	}
	mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
	if rate, _ := tr.defaultScope.shared.pace(); rate != 9 {
		t.Fatalf("pace %v/s after 600 a minute was published, want 9/s", rate)
	}
	mustNotErr(t, get(tr, context.Background(), "http://api.test/")) // the provisional figure itself
	if rate, _ := tr.defaultScope.shared.pace(); rate != 45 || tr.defaultScope.shared.published() != nil {
		t.Fatalf("pace %v/s, learned %v, after the provisional 3,000 a minute was published; want the configured 45/s", rate, tr.defaultScope.shared.published())
	}
}

func TestLearnedLimitKeepsTheConfiguredBurstShape(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A tokens scope whose bucket holds a full minute, as LLM presets
		// configure it; the provider publishes half the configured limit.
		api := &scriptedAPI{steps: []scripted{{http.StatusOK, map[string]string{
			"RateLimit-Policy": `"tokens";q=50000;w=60;qu="tokens"`, "RateLimit": `"tokens";r=50000;t=60`}}}}
		tr := New(api, WithLogger(slogTo(io.Discard)),
			WithScope(Scope{Name: "tokens", Unit: "tokens", Limit: Limit{Count: 100000, Per: time.Minute, Burst: 100000}}),
			WithRoute(func(_ *http.Request, c []Charge) []Charge { return append(c, Charge{Scope: "tokens"}) }))
		ctx := ContextWithCost(context.Background(), "tokens", 1000)
		mustNotErr(t, get(tr, ctx, "http://api.test/"))
		p := tr.scopes["tokens"].shared.published()
		if rate, burst := p.Rate, p.Burst; rate != 750 || burst != 50000 {
			t.Errorf("learned pace %v/s, burst %v; want 750/s (90%% of 50,000 a minute) and a full minute, 50,000", rate, burst)
		}
		time.Sleep(time.Minute)
		if err := get(tr, ContextWithCost(context.Background(), "tokens", 40000), "http://api.test/"); err != nil {
			t.Errorf("a request within the published limit failed: %v", err)
		}
	})
}

// TestRemainingCountsTheCostSentSince: a token quota's remaining is settled
// against the tokens admitted after the reporting call, not their number.
func TestRemainingCountsTheCostSentSince(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var first sync.Once
		api := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			h := http.Header{}
			isFirst := false
			first.Do(func() { isFirst = true })
			if isFirst {
				<-release // answers after a second call was admitted
				h.Set("X-Ratelimit-Remaining-Tokens", "5000")
			}
			return &http.Response{StatusCode: 200, Header: h, Body: http.NoBody, Request: req}, nil
		})
		tr := New(api, WithFailFast(),
			WithScope(Scope{Name: "tokens", Unit: "tokens", Limit: Limit{Count: 100000, Per: time.Hour, Burst: 100000}, FailFast: true}),
			WithRoute(func(_ *http.Request, c []Charge) []Charge { return append(c, Charge{Scope: "tokens"}) }))
		done := make(chan error)
		go func() { done <- get(tr, ContextWithCost(context.Background(), "tokens", 100), "http://api.test/") }()
		synctest.Wait()
		mustNotErr(t, get(tr, ContextWithCost(context.Background(), "tokens", 3000), "http://api.test/"))
		close(release)
		mustNotErr(t, <-done)
		// 5,000 reported, less the 3,000 admitted since: 2,000 left.
		if err := get(tr, ContextWithCost(context.Background(), "tokens", 2500), "http://api.test/"); !errors.Is(err, ErrThrottled) {
			t.Errorf("err = %v, want throttled: only 2,000 tokens are left", err)
		}
		mustNotErr(t, get(tr, ContextWithCost(context.Background(), "tokens", 1900), "http://api.test/"))
	})
}

// A bucket grows with a published limit above a provisional one only
// beside a count, which clamps it next: an answer that publishes a larger
// limit and says nothing of what remains leaves the bucket as empty as it
// was — it never believes it has more than the provider last reported.
func TestAPublishedLimitWithoutACountDoesNotFillTheBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &scriptedAPI{} // plain 200s, saying nothing of limits
		tr := New(api, WithLogger(slogTo(io.Discard)), WithoutRetry(),
			WithScope(Scope{Name: DefaultScope, Limit: PerMinute(3000), Provisional: true, FailFast: true}))
		sent := 0
		for get(tr, context.Background(), "http://api.test/") == nil && sent < 600 {
			sent++ // the provisional bucket, to empty
		}
		if st := tr.Stats().Scopes[0]; !st.TokensKnown || st.Tokens > 1 {
			t.Fatalf("after %d calls, %v tokens (known %v), want an empty bucket", sent, st.Tokens, st.TokensKnown)
		}
		api.steps = []scripted{{http.StatusOK, map[string]string{"X-Ratelimit-Limit-Requests": "6000"}}}
		time.Sleep(50 * time.Millisecond) // two tokens back at 45/s: the next call goes, and its answer publishes the limit
		mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		if st := tr.Stats().Scopes[0]; st.Tokens > 5 {
			t.Errorf("%v tokens after a larger limit was published without a count, want the bucket still about empty (it never believes more than was reported)", st.Tokens)
		}
	})
}

// A refusal that paused the scope for seconds makes none left a pause to
// the reset's slack (pace.Scope.CostlyRefusals) for sixty times that
// pause, not for good; an outage's 503 does not teach it at all. In a
// window of a second, where the slack is not waited out without it.
func TestACostlyRefusalIsRememberedForAWhile(t *testing.T) {
	for _, tt := range []struct {
		name    string
		refusal int
		after   time.Duration
		costly  bool
	}{
		{"6 s after a 429 asking for 5 s", http.StatusTooManyRequests, 6 * time.Second, true},
		{"5 min after a 429 asking for 5 s", http.StatusTooManyRequests, pace.CostlyFor(5*time.Second) + time.Second, false},
		{"6 s after a 503 asking for 5 s", http.StatusServiceUnavailable, 6 * time.Second, false},
	} {
		synctest.Test(t, func(t *testing.T) {
			api := &scriptedAPI{steps: []scripted{
				{tt.refusal, map[string]string{"Retry-After": "5"}},
				{http.StatusOK, map[string]string{"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1"}},
			}}
			tr := New(api, WithLimit(PerSecond(10)), WithoutRetry(), WithLogger(slogTo(io.Discard)))
			get(tr, context.Background(), "http://api.test/")
			time.Sleep(tt.after)
			get(tr, context.Background(), "http://api.test/")
			// A reset "1 s" away may be here already: waited out only
			// while a refusal is known to cost more than the call.
			if d := tr.Stats().Scopes[0].Cooldown; (d > time.Second) != tt.costly {
				t.Errorf("%s: none left a second before the reset paused the scope %v; want a pause to the reset's slack: %v", tt.name, d, tt.costly)
			}
		})
	}
}
