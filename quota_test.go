package pacer

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/internal/pace"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/store"
)

// windowAPI is a server-side limiter in virtual time, as go-chi/httprate
// is one: limit calls per window, either a sliding-window counter (the
// previous window's count weighted by how much of it still overlaps) or a
// fixed window. Windows start offset past the second, as httprate aligns
// them to its own start. Every response says X-RateLimit-Limit (no
// window), -Remaining, and -Reset as Unix seconds, with a Date header,
// both truncated to the second; a 429 adds Retry-After: the window.
type windowAPI struct {
	limit      int
	window     time.Duration
	offset     time.Duration
	sliding    bool
	retryAfter bool                 // a 429 says Retry-After: the window, in seconds
	quiet      bool                 // no headers but that: a bare 429, as nginx sends
	unstated   bool                 // no X-RateLimit-Limit: what remains and when it resets, not of how many
	down       func(time.Time) bool // while true, a 429 to everything
	// lag, when set, delays pacer's n-th answer after the server counted
	// its call: answers that come back late and out of order, as on a
	// loaded machine.
	lag func(n int) time.Duration

	mu       sync.Mutex
	n        int
	start    time.Time // of the current window
	cur      int
	prev     int
	accepted map[string][]time.Time
	rejected map[string][]time.Time
}

func (a *windowAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	resp := a.answer(req)
	if a.lag != nil && req.Header.Get("X-Client") == "" {
		a.mu.Lock()
		a.n++
		n := a.n
		a.mu.Unlock()
		time.Sleep(a.lag(n))
	}
	return resp, nil
}

func (a *windowAPI) answer(req *http.Request) *http.Response {
	who := req.Header.Get("X-Client")
	if who == "" {
		who = "pacer"
	}
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.accepted == nil {
		a.accepted, a.rejected = map[string][]time.Time{}, map[string][]time.Time{}
	}
	ws := now.Add(-a.offset).Truncate(a.window).Add(a.offset)
	if !ws.Equal(a.start) {
		if ws.Sub(a.start) == a.window {
			a.prev = a.cur
		} else {
			a.prev = 0
		}
		a.cur, a.start = 0, ws
	}
	used := float64(a.cur)
	if a.sliding {
		used += float64(a.prev) * (1 - float64(now.Sub(ws))/float64(a.window))
	}
	rate := int(math.Round(used))
	h := http.Header{}
	status, remaining := http.StatusOK, a.limit-rate-1
	switch {
	case a.down != nil && a.down(now):
		a.rejected[who] = append(a.rejected[who], now)
		if a.retryAfter {
			h.Set("Retry-After", strconv.Itoa(int(a.window/time.Second)))
		}
		return &http.Response{StatusCode: http.StatusTooManyRequests, Header: h, Body: http.NoBody, Request: req}
	case rate+1 <= a.limit:
		a.cur++
		a.accepted[who] = append(a.accepted[who], now)
	default:
		status, remaining = http.StatusTooManyRequests, a.limit-rate
		a.rejected[who] = append(a.rejected[who], now)
		if a.retryAfter {
			h.Set("Retry-After", strconv.Itoa(int(a.window/time.Second)))
		}
	}
	if !a.quiet {
		h.Set("Date", now.UTC().Format(http.TimeFormat))
		if !a.unstated {
			h.Set("X-RateLimit-Limit", strconv.Itoa(a.limit))
		}
		h.Set("X-RateLimit-Reset", strconv.FormatInt(ws.Add(a.window).Unix(), 10))
		if remaining >= 0 {
			h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
		}
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader("")), Request: req}
}

// lagUpTo returns a windowAPI lag that spreads answers over [0, max],
// the same for every run.
func lagUpTo(max time.Duration) func(n int) time.Duration {
	return func(n int) time.Duration {
		x := uint64(n) * 0x9E3779B97F4A7C15 // a multiplicative hash: n's order is not the lag's
		x ^= x >> 29
		return time.Duration(x % uint64(max+1))
	}
}

func (a *windowAPI) counts(who string, from, to time.Time) (accepted, rejected int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return between(a.accepted[who], from, to), between(a.rejected[who], from, to)
}

// toPresent moves the bubble's clock from 2000 to 2026: a reset written as
// Unix seconds from before September 2001 reads as a delay in seconds.
func toPresent() {
	time.Sleep(time.Until(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)))
}

// hammer runs callers goroutines that call through rt as fast as it lets
// them until end. A call that fails at once ends its goroutine's turn
// for a millisecond, so that virtual time moves on.
func hammer(rt http.RoundTripper, callers int, end time.Time) {
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for time.Now().Before(end) {
				if get(rt, context.Background(), "http://api.test/") != nil {
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
}

// neighbour calls api every 1/rate s until end, as a client pacer does
// not control, on the same key.
func neighbour(api http.RoundTripper, rate float64, end time.Time) {
	for time.Now().Before(end) {
		req, _ := http.NewRequest(http.MethodGet, "http://api.test/", nil)
		req.Header.Set("X-Client", "neighbour")
		if resp, err := api.RoundTrip(req); err == nil {
			resp.Body.Close()
		}
		time.Sleep(time.Duration(float64(time.Second) / rate))
	}
}

// check fails t unless accepted is at least want of the ceiling and the
// 429s at most 1% of the calls.
func check(t *testing.T, what string, accepted, rejected int, ceiling, want float64) {
	t.Helper()
	t.Logf("%s: %d accepted (%.3f of %.0f), %d 429s", what, accepted, float64(accepted)/ceiling, ceiling, rejected)
	if float64(accepted) < want*ceiling {
		t.Errorf("%s: %d accepted, want at least %.2f of %.0f", what, accepted, want, ceiling)
	}
	if float64(rejected) > 0.01*float64(accepted+rejected) {
		t.Errorf("%s: %d 429s of %d calls, want at most 1%%", what, rejected, accepted+rejected)
	}
}

// With the limit known and the server reporting live remaining counts,
// pacer aims at the edge (the limit itself), not at the blind 90%. A window that ends
// 990 ms past the second makes almost every reset in whole seconds read as
// now: those are reports too. Answers that come back up to 20 ms late and
// out of order (a loaded machine) change little.
func TestKnownLimitWithRemainingIsSpentToTheEdge(t *testing.T) {
	for _, tt := range []struct {
		offset, lag time.Duration
	}{{370 * time.Millisecond, 0}, {990 * time.Millisecond, 0}, {370 * time.Millisecond, 20 * time.Millisecond}} {
		t.Run(tt.offset.String()+"+lag"+tt.lag.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				toPresent()
				api := &windowAPI{limit: 100, window: time.Second, offset: tt.offset, sliding: true, retryAfter: true}
				if tt.lag > 0 {
					api.lag = lagUpTo(tt.lag)
				}
				tr := New(api, WithLimit(PerSecond(100)), WithoutRetry())
				start := time.Now()
				hammer(tr, 16, start.Add(22*time.Second))
				a, r := api.counts("pacer", start.Add(2*time.Second), start.Add(22*time.Second))
				check(t, "sliding window, 100/s", a, r, 2000, 0.97)
			})
		})
	}
}

// A limit published without a window (X-RateLimit-Limit: 100) is learned
// from the resets, which move on by one window each time: a Transport
// configured at twice the limit then paces by the server's.
func TestWindowlessLimitIsLearnedFromTheResets(t *testing.T) {
	for _, ra := range []bool{false, true} {
		t.Run("retry-after="+strconv.FormatBool(ra), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				toPresent()
				api := &windowAPI{limit: 100, window: time.Second, offset: 370 * time.Millisecond, sliding: true, retryAfter: ra}
				tr := New(api, WithLimit(PerSecond(200)), WithoutRetry(), WithLogger(slogTo(io.Discard)))
				start := time.Now()
				hammer(tr, 16, start.Add(3*time.Second))
				if p := tr.defaultScope.shared.published(); p == nil || p.Raw != 100 {
					t.Fatalf("learned %+v after 3 s, want the published 100 a second", p)
				}
				hammer(tr, 16, start.Add(23*time.Second))
				a, r := api.counts("pacer", start.Add(3*time.Second), start.Add(23*time.Second))
				check(t, "told 2×", a, r, 2000, 0.95)
			})
		})
	}
}

// A fixed window with a far reset, as GitHub's hourly primary limit: what
// remains is spread until the reset, not spent at the configured pace and
// then waited out, and each window is used to the edge.
func TestFixedWindowIsSpreadUntilItsReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		api := &windowAPI{limit: 3600, window: time.Hour, offset: 17 * time.Minute}
		tr := New(api, WithLimit(PerHour(3600)), WithoutRetry(), WithMaxWait(time.Hour))
		start := time.Now()
		hammer(tr, 16, start.Add(3*time.Hour+20*time.Minute))
		for w := range 3 {
			from := start.Add(17*time.Minute + time.Duration(w)*time.Hour)
			a, r := api.counts("pacer", from, from.Add(time.Hour))
			check(t, "window "+strconv.Itoa(w+1), a, r, 3600, 0.97)
			if half, _ := api.counts("pacer", from, from.Add(30*time.Minute)); half > a*55/100 {
				t.Errorf("window %d: %d of %d calls in its first half, want them spread", w+1, half, a)
			}
		}
	})
}

// None remaining with a reset an hour off (GitHub) pauses until the reset
// when the maximum wait allows; by default the pause ends at MaxWait with
// one probe, which learns the reset is still ahead and pauses again. The
// calls such a pause holds back are refused at once, with the reset and
// the time the scope probes (farreset.go): here each waits that out and
// calls again.
func TestHourlyResetPausesUntilItOrProbesAtMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		reset := time.Now().Add(40 * time.Minute)
		github := func(status int) scripted {
			return scripted{status, map[string]string{"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0",
				"X-RateLimit-Reset": strconv.FormatInt(reset.Unix(), 10), "X-RateLimit-Resource": "core"}}
		}
		api := &scriptedAPI{steps: []scripted{github(200), github(http.StatusForbidden), github(http.StatusForbidden), github(http.StatusForbidden)}}
		tr := New(api, WithLimit(PerHour(5000)), WithoutRetry())
		start := time.Now()
		for len(api.sentTimes()) < 5 && time.Since(start) < time.Hour {
			var te *ThrottledError
			if err := get(tr, context.Background(), "http://api.test/"); errors.As(err, &te) {
				if !te.Reset.Equal(reset) {
					t.Errorf("refused with Reset %v, want the reset %v", te.Reset, reset)
				}
				time.Sleep(te.RetryAfter)
			}
		}
		sent := api.sentTimes()
		for i, want := range []time.Duration{0, 10 * time.Minute, 20 * time.Minute, 30 * time.Minute, 40 * time.Minute} {
			// Each pause ends with an empty bucket: a restart paced at 5,000 an
			// hour at 90%, 0.8 s a call.
			if got := sent[i].Sub(start); got < want || got > want+4*time.Second {
				t.Errorf("call %d went at %v, want %v: a pause at most MaxWait, then a probe", i+1, got, want)
			}
		}
	})
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		reset := time.Now().Add(40 * time.Minute)
		api := &scriptedAPI{steps: []scripted{{200, map[string]string{"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0",
			"X-RateLimit-Reset": strconv.FormatInt(reset.Unix(), 10)}}}}
		tr := New(api, WithLimit(PerHour(5000)), WithoutRetry(), WithMaxWait(2*time.Hour))
		start := time.Now()
		get(tr, context.Background(), "http://api.test/")
		get(tr, context.Background(), "http://api.test/")
		if got := api.sentTimes()[1].Sub(start); got < 40*time.Minute || got > 40*time.Minute+2*time.Second {
			t.Errorf("with MaxWait 2 h the next call went at %v, want at the reset, 40 min", got)
		}
	})
}

// openAIBucket is a requests bucket as OpenAI describes its limits: a
// token bucket that refills continuously, reporting the time until it is
// full as a Go duration ("6m0s"). Its capacity is 600 but it refills only
// 100 a minute, while the headers' limit reads as 600 a minute.
type openAIBucket struct {
	mu       sync.Mutex
	level    float64
	at       time.Time
	accepted []time.Time
	rejected []time.Time
}

func (b *openAIBucket) RoundTrip(req *http.Request) (*http.Response, error) {
	const capacity, perSecond = 600.0, 100.0 / 60
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if b.at.IsZero() {
		b.level = capacity
	}
	if !b.at.IsZero() {
		b.level = min(capacity, b.level+now.Sub(b.at).Seconds()*perSecond)
	}
	b.at = now
	status := http.StatusOK
	if b.level >= 1 {
		b.level--
		b.accepted = append(b.accepted, now)
	} else {
		status = http.StatusTooManyRequests
		b.rejected = append(b.rejected, now)
	}
	h := http.Header{}
	h.Set("X-Ratelimit-Limit-Requests", "600")
	h.Set("X-Ratelimit-Remaining-Requests", strconv.Itoa(int(b.level)))
	full := time.Duration((capacity - b.level) / perSecond * float64(time.Second)).Round(100 * time.Millisecond)
	h.Set("X-Ratelimit-Reset-Requests", full.String())
	return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: req}, nil
}

// OpenAI-style resets ("6m0s" until full) on a bucket that refills slower
// than its stated limit: pacer spends what remains and what the bucket
// adds back, and no more.
func TestOpenAIStyleResetsArePacedByWhatIsAddedBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		api := &openAIBucket{}
		tr := New(api, WithoutRetry(), WithScope(Scope{Name: DefaultScope, Limit: PerMinute(600), Provisional: true}))
		start := time.Now()
		hammer(tr, 16, start.Add(30*time.Minute))
		check(t, "600 at once, then 100 a minute", len(api.accepted), len(api.rejected), 600+100*30, 0.95)
	})
}

// No single response stops a scope beyond MaxWait, whatever it claims: the
// scope probes again, and a corrected server teaches it back.
func TestHostileHeadersNeverStopAScopeBeyondMaxWait(t *testing.T) {
	corrected := scripted{200, map[string]string{"RateLimit-Policy": `"p";q=100;w=1`, "RateLimit": `"p";r=99;t=1`}}
	for _, tt := range []struct {
		name   string
		header map[string]string
	}{
		{"zero limit, none left, reset in the year 5138", map[string]string{"X-RateLimit-Limit": "0", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "99999999999"}},
		{"a one-year policy", map[string]string{"RateLimit-Policy": `"p";q=1;w=31536000`}},
		{"a one-year window in X-RateLimit-Limit", map[string]string{"X-RateLimit-Limit": "1, 1;w=31536000"}},
		{"one left for a year", map[string]string{"X-RateLimit-Limit": "1", "X-RateLimit-Remaining": "1", "X-RateLimit-Reset": "31536000"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				toPresent()
				api := &scriptedAPI{steps: []scripted{{200, tt.header}, {200, tt.header}, corrected}}
				tr := New(api, WithLimit(PerSecond(100)), WithMaxWait(time.Minute), WithoutRetry(), WithLogger(slogTo(io.Discard)))
				for len(api.sentTimes()) < 3 {
					// A pause claimed beyond MaxWait is said at once, with the
					// time the scope probes again (farreset.go): wait that out.
					var te *ThrottledError
					if err := get(tr, context.Background(), "http://api.test/"); errors.As(err, &te) && !te.Reset.IsZero() {
						time.Sleep(te.RetryAfter)
					} else {
						mustNotErr(t, err)
					}
				}
				sent := api.sentTimes()
				for i := 1; i < 3; i++ {
					if gap := sent[i].Sub(sent[i-1]); gap > time.Minute+time.Second {
						t.Fatalf("call %d went %v after the one before, want a probe within MaxWait (1 min)", i+1, gap)
					}
				}
				// Taught back: 100 calls within about a second.
				t0 := time.Now()
				for range 100 {
					mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
				}
				if took := time.Since(t0); took > 1500*time.Millisecond {
					t.Errorf("100 calls took %v after the corrected answer, want about 1 s", took)
				}
			})
		})
	}
}

// One rejection measures the server's capacity: behind a bare-429 limiter
// (a token bucket of 50 a second, as nginx's limit_req), a Transport
// configured above it converges in one or two cuts, not in many 0.85
// steps, and keeps near the limit.
func TestOneRejectionMeasuresTheCapacity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		api := &limitedAPI{limit: 50, burst: 10, mode: "bare-429"}
		var mu sync.Mutex
		cuts := 0
		tr := New(api, WithLimit(PerSecond(60)), WithoutRetry(), WithObserver(observe.Func(func(e observe.Event) {
			if e.Kind == observe.EventPaceChanged && strings.Contains(e.Why, "refused") {
				mu.Lock()
				cuts++
				mu.Unlock()
			}
		})))
		start := time.Now()
		hammer(tr, 16, start.Add(20*time.Second))
		a, r := between(api.accepted, start.Add(5*time.Second), start.Add(20*time.Second)), between(api.rejected, start, start.Add(20*time.Second))
		check(t, "nginx-like, 50/s", a, r, 50*15, 0.95)
		if cuts > 3 {
			t.Errorf("%d cuts in 20 s, want at most 3", cuts)
		}
	})
}

// After a minute of bare 429s (an incident) the pace is back within a
// bounded time, however many cuts the incident made. So it is after a
// minute of 429s that each say Retry-After: 1: each pauses the scope, but
// at the floor an incident leaves it at, a second's pause costs about the
// one call a second the scope sends, as a bare 429 does, and the climb is
// priced as a bare 429's. Priced by the pause alone, the climb from the
// floor took two minutes: 0.11 of the pace 55 s after the incident.
func TestRecoveryAfterAnIncidentIsBoundedInTime(t *testing.T) {
	for _, retryAfter := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			toPresent()
			start := time.Now()
			api := &windowAPI{limit: 1000, window: time.Second, quiet: true, retryAfter: retryAfter,
				down: func(now time.Time) bool { return now.Sub(start) >= 10*time.Second && now.Sub(start) < 70*time.Second }}
			tr := New(api, WithLimit(PerSecond(100)), WithoutRetry(), WithLogger(slogTo(io.Discard)))
			hammer(tr, 16, start.Add(130*time.Second))
			_, r := api.counts("pacer", start.Add(10*time.Second), start.Add(70*time.Second))
			a, _ := api.counts("pacer", start.Add(125*time.Second), start.Add(130*time.Second))
			t.Logf("Retry-After %v: %d 429s during the incident; %d accepted from 55 s to 60 s after it", retryAfter, r, a)
			if a < 90*5*9/10 {
				t.Errorf("Retry-After %v: %d accepted 55 s after the incident, want at least 0.9 of the configured 90 a second", retryAfter, a)
			}
		})
	}
}

// What a rejection costs prices the probing back: after a bare 429 the pace
// is back in full within pace.CheapRecovery; after a 429 that paused the scope it
// climbs more slowly.
func TestProbingIsPricedByWhatARejectionCosts(t *testing.T) {
	for _, tt := range []struct {
		header map[string]string
		full   bool
	}{{nil, true}, {map[string]string{"Retry-After": "1"}, false}} {
		synctest.Test(t, func(t *testing.T) {
			toPresent()
			api := &scriptedAPI{steps: []scripted{{http.StatusTooManyRequests, tt.header}}}
			tr := New(api, WithLimit(PerSecond(100)), WithoutRetry())
			get(tr, context.Background(), "http://api.test/")
			time.Sleep(pace.CheapRecovery)
			if f := tr.Stats().Scopes[0].Factor; (f == 1) != tt.full {
				t.Errorf("429 with %v: factor %v after %v", tt.header, f, pace.CheapRecovery)
			}
		})
	}
}

// On a key shared with an unpaced client, pacer spends only what remains:
// the neighbour is not pushed into 429s.
func TestUnpacedNeighbourKeepsItsShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		api := &windowAPI{limit: 100, window: time.Second, offset: 370 * time.Millisecond, sliding: true, retryAfter: true}
		tr := New(api, WithLimit(PerSecond(100)), WithoutRetry())
		start := time.Now()
		end := start.Add(25 * time.Second)
		go neighbour(api, 40, end)
		hammer(tr, 16, end)
		a, r := api.counts("pacer", start.Add(5*time.Second), end)
		// 0.90 and more without the race detector; one 429 (and its
		// Retry-After pause) costs 0.05 under its scheduling.
		check(t, "pacer", a, r, 60*20, 0.85)
		na, nr := api.counts("neighbour", start.Add(5*time.Second), end)
		check(t, "neighbour", na, nr, 40*20, 0.99)
	})
}

// Every pace change is an event with its reason, and Stats says why.
func TestPaceChangesAreObservable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		api := &scriptedAPI{steps: []scripted{
			{200, map[string]string{"RateLimit-Policy": `"p";q=50;w=1`}},
			{http.StatusTooManyRequests, nil},
		}}
		var reasons []string
		tr := New(api, WithLimit(PerSecond(100)), WithoutRetry(), WithLogger(slogTo(io.Discard)),
			WithObserver(observe.Func(func(e observe.Event) {
				if e.Kind == observe.EventPaceChanged {
					reasons = append(reasons, e.Why)
				}
			})))
		get(tr, context.Background(), "http://api.test/")
		if why := tr.Stats().Scopes[0].Why; why != "the provider's published limit" {
			t.Errorf("Why = %q after a published limit", why)
		}
		get(tr, context.Background(), "http://api.test/")
		if why := tr.Stats().Scopes[0].Why; why != "recovering from a refusal" {
			t.Errorf("Why = %q after a 429", why)
		}
		time.Sleep(pace.CheapRecovery)
		get(tr, context.Background(), "http://api.test/")
		want := []string{"the provider published its limit", "the provider refused a call", "recovered from a cut"}
		if strings.Join(reasons, "; ") != strings.Join(want, "; ") {
			t.Errorf("reasons %q, want %q", reasons, want)
		}
	})
}

// A reset in whole seconds that is the response's own second (httprate
// near the end of its window) says quota comes back within the second: a
// report like any other, not one left unsaid, and — with none left — no
// reason to stop.
func TestResetWithinTheSecondIsAReport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		time.Sleep(700 * time.Millisecond)
		now := time.Now()
		header := func(remaining int) map[string]string {
			return map[string]string{"Date": now.UTC().Format(http.TimeFormat), "X-RateLimit-Limit": "100",
				"X-RateLimit-Remaining": strconv.Itoa(remaining), "X-RateLimit-Reset": strconv.FormatInt(now.Unix(), 10)}
		}
		api := &scriptedAPI{steps: []scripted{{200, header(0)}}}
		tr := New(api, WithLimit(PerSecond(100)), WithoutRetry())
		mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		if why := tr.Stats().Scopes[0].Why; why != "what the provider reports remains" {
			t.Errorf("Why = %q after a report whose reset is within the second, want it taken", why)
		}
		if s := tr.defaultScope.shared; s.cooldown.Load() > time.Now().UnixNano() {
			t.Errorf("none left with a reset within the second paused the scope until %v", time.Unix(0, s.cooldown.Load()))
		}
	})
}

// Behind nginx's limit_req (100 r/s, burst 20) with "Retry-After: 1" on
// its 429s, told twice the limit: once a rejection has measured the
// capacity, a later one pauses only the call it answers, so the scope
// keeps ≥ 0.93 of the ceiling over 20 s (each full pause cost 0.05).
func TestBriefRetryAfterOnAMeasuredScopePausesOnlyItsCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		api := &limitedAPI{limit: 100, burst: 20, mode: "retry-after"}
		tr := New(api, WithLimit(PerSecond(200)))
		start := time.Now()
		hammer(tr, 16, start.Add(20*time.Second))
		check(t, "nginx, Retry-After: 1", len(api.accepted), len(api.rejected), 100*20+20, 0.93)
	})
}

// Behind a window that says nothing but 429 and "Retry-After: 1" (a fixed
// second and a sliding one), told twice its limit: the refusals of calls
// sent after a measured cut, within its window, are the window the pace
// before the cut spent, not news that the measure was too high, and each
// pauses only its call (pace.Cuts.Refused). Each paused the scope for a
// second: over four phases of the second, 0.883 of the ceiling (fixed)
// and 0.893 (sliding), against 0.948 and 0.946.
func TestABriefRetryAfterWithinAMeasuredCutsWindowPausesOnlyItsCall(t *testing.T) {
	for _, sliding := range []bool{false, true} {
		accepted, refused := 0, 0
		for phase := range 4 {
			synctest.Test(t, func(t *testing.T) {
				toPresent()
				api := &windowAPI{limit: 100, window: time.Second, offset: time.Duration(phase) * 230 * time.Millisecond,
					sliding: sliding, retryAfter: true, quiet: true}
				tr := New(api, WithLimit(PerSecond(200)), WithoutRetry(), WithLogger(slogTo(io.Discard)))
				start := time.Now()
				hammer(tr, 16, start.Add(20*time.Second))
				a, r := api.counts("pacer", start, start.Add(20*time.Second))
				accepted, refused = accepted+a, refused+r
			})
		}
		name := map[bool]string{false: "a fixed second", true: "a sliding second"}[sliding]
		check(t, name+", four phases", accepted, refused, 4*100*20, 0.93)
	}
}

// idAPI answers 200, but 429 with Retry-After to its reject-th call, and
// records when each call (by its X-Id) was sent.
type idAPI struct {
	reject     int
	retryAfter string

	mu   sync.Mutex
	n    int
	sent map[string][]time.Time
	at   time.Time // of the 429
	id   string    // of the call refused
}

func (a *idAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	id := req.Header.Get("X-Id")
	if a.sent == nil {
		a.sent = map[string][]time.Time{}
	}
	a.sent[id] = append(a.sent[id], time.Now())
	h := http.Header{}
	status := http.StatusOK
	if a.n == a.reject {
		status, a.at, a.id = http.StatusTooManyRequests, time.Now(), id
		h.Set("Retry-After", a.retryAfter)
	}
	return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: req}, nil
}

// A brief Retry-After on a scope whose pace a rejection measured pauses
// only the call it answers: that call's retry goes no sooner than asked,
// the other callers go on. A longer one still pauses every caller.
func TestRetryAfterIsHonouredByTheRetryAndPausesTheScopeUnlessBrief(t *testing.T) {
	for _, tt := range []struct {
		retryAfter string
		scope      bool // the other callers pause too
	}{{"1", false}, {"5", true}} {
		t.Run("Retry-After: "+tt.retryAfter, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := &idAPI{reject: 150, retryAfter: tt.retryAfter}
				tr := New(api, WithLimit(PerSecond(100)))
				end := time.Now().Add(8 * time.Second)
				var wg sync.WaitGroup
				for c := range 4 {
					wg.Go(func() {
						for i := 0; time.Now().Before(end); i++ {
							req, _ := http.NewRequest(http.MethodGet, "http://api.test/", nil)
							req.Header.Set("X-Id", strconv.Itoa(c)+"-"+strconv.Itoa(i))
							if resp, err := tr.RoundTrip(req); err == nil {
								resp.Body.Close()
							}
						}
					})
				}
				wg.Wait()
				wait, _ := strconv.Atoi(tt.retryAfter)
				pause := time.Duration(wait) * time.Second
				sent := api.sent[api.id]
				if len(sent) != 2 || sent[1].Sub(sent[0]) < pause {
					t.Fatalf("the refused call was sent at %v, want once more, %v later", sent, pause)
				}
				others := 0
				for id, ts := range api.sent {
					for _, at := range ts {
						if id != api.id && at.After(api.at) && at.Before(api.at.Add(pause)) {
							others++
						}
					}
				}
				t.Logf("Retry-After %s: %d other calls during it", tt.retryAfter, others)
				if tt.scope && others > 0 {
					t.Errorf("%d other calls went during a %v Retry-After, want the scope paused", others, pause)
				}
				if !tt.scope && others < 60*wait {
					t.Errorf("%d other calls went during a brief Retry-After on a measured scope, want the pace to go on", others)
				}
			})
		})
	}
}

// slowThenRefuse answers its first call after a second, publishing a limit
// far below the configured one, and its second at once with a 429 that asks
// for a pause of ten seconds; then 200s.
type slowThenRefuse struct {
	mu   sync.Mutex
	n    int
	sent []time.Time
}

func (a *slowThenRefuse) RoundTrip(req *http.Request) (*http.Response, error) {
	a.mu.Lock()
	a.n++
	n := a.n
	a.sent = append(a.sent, time.Now())
	a.mu.Unlock()
	h := http.Header{}
	status := http.StatusOK
	switch n {
	case 1:
		time.Sleep(time.Second)
		h.Set("RateLimit-Policy", `"p";q=60;w=60`)
	case 2:
		status = http.StatusTooManyRequests
		h.Set("Retry-After", "10")
	}
	return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: req}, nil
}

// A pause leaves a debt in the bucket, set at the pace of its time; a pace
// lowered during the pause (here a published limit of one a second, 60
// times lower) must not stretch the pause by as much: the next call goes
// when the Retry-After ends, paced from there.
func TestAPauseIsRepaidAtThePaceItWasSetAt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &slowThenRefuse{}
		tr := New(api, WithLimit(PerSecond(100)), WithoutRetry(), WithMaxWait(time.Minute), WithLogger(slogTo(io.Discard)))
		start := time.Now()
		go get(tr, context.Background(), "http://api.test/") // answered at 1 s
		time.Sleep(10 * time.Millisecond)
		get(tr, context.Background(), "http://api.test/") // the 429, at 10 ms
		time.Sleep(2 * time.Second)
		mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		got := api.sent[2].Sub(start)
		t.Logf("the call after the pause went at %v", got)
		if got > 12*time.Second {
			t.Errorf("the call after a 10 s pause went at %v, want by 12 s: the debt repaid at the pace it was set at", got)
		}
	})
}

// The first seconds after an idle sliding window: a reset that reads as
// now (the window ends within the Date's second) is spread over the rest
// of the second at most, not over a whole one, so the first windows are
// spent, not a tenth of them lost.
func TestFirstWindowsAfterIdleAreSpent(t *testing.T) {
	for _, offset := range []time.Duration{370 * time.Millisecond, 700 * time.Millisecond} {
		t.Run(offset.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				toPresent()
				api := &windowAPI{limit: 100, window: time.Second, offset: offset, sliding: true, retryAfter: true}
				tr := New(api, WithLimit(PerSecond(100)), WithoutRetry())
				start := time.Now()
				hammer(tr, 16, start.Add(3*time.Second))
				a, r := api.counts("pacer", start, start.Add(3*time.Second))
				check(t, "the first 3 s", a, r, 300, 0.88)
			})
		})
	}
}

// wire is the network between pacer and a server: every call takes a
// millisecond there and back, but reaches the server up to 900 µs into
// it, so that calls sent together are counted in another order than they
// were sent in, and answered in the order they were sent — as 16 callers'
// first calls are, on loopback.
type wire struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    int
}

func (w *wire) RoundTrip(req *http.Request) (*http.Response, error) {
	w.mu.Lock()
	w.n++
	n := w.n
	w.mu.Unlock()
	start := time.Now()
	time.Sleep(lagUpTo(900 * time.Microsecond)(n))
	resp, err := w.next.RoundTrip(req)
	time.Sleep(time.Until(start.Add(time.Millisecond + time.Duration(min(n, 64))*time.Microsecond)))
	return resp, err
}

// fromTheFirstCall runs 16 callers for d through a Transport configured at
// rate a second, behind a sliding window of 100 a second reached over a
// wire, starting off past the second, and checks what the server accepted
// from the first call on against want of the ceiling.
func fromTheFirstCall(t *testing.T, what string, off time.Duration, rate int, d time.Duration, want float64) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		time.Sleep(off)
		api := &windowAPI{limit: 100, window: time.Second, sliding: true}
		tr := New(&wire{next: api}, WithLimit(PerSecond(rate)), WithLogger(slogTo(io.Discard)))
		start := time.Now()
		hammer(tr, 16, start.Add(d))
		a, r := api.counts("pacer", start, start.Add(d))
		check(t, what, a, r, 100*d.Seconds(), want)
	})
}

// The first calls of 16 callers go out together and are counted by the
// server in another order than they were sent in; their answers, a few
// microseconds apart, must not read as the provider giving back thousands
// of calls a second. They did, and a Transport told twice the limit sent at
// its configured pace for two seconds, into 98–146 429s (scenario 8 of
// pacerbench, one run in three or more). Refused calls are not spent
// either: a 429's remaining count that does not move is not quota given
// back.
func TestFirstCallsAnsweredOutOfOrderAreNotSupply(t *testing.T) {
	for _, off := range []time.Duration{0, 348 * time.Millisecond, 700 * time.Millisecond} {
		t.Run(off.String(), func(t *testing.T) {
			fromTheFirstCall(t, "told 2×, 20 s from the first call", off, 200, 20*time.Second, 0.95)
		})
	}
}

// A 429 that says none remains, in answer to calls sent one after the
// other, is not the provider giving back a call each time: the refused
// calls were never counted. Taken as spent, they read as quota given back
// as fast as the scope sends into the refusals, which kept a scope sending
// at its full pace while every call was refused.
func TestRefusedCallsAreNotQuotaGivenBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(http.DefaultTransport, WithLimit(PerSecond(200)))
		s := tr.defaultScope.shared
		report := func(refused int64) {
			s.reportRemaining(time.Now(), pace.Count{Remaining: 0, Reset: time.Second, Limit: 100, Mark: s.spent.Add(1), Refused: refused, Local: true, Fleet: false}, defaultMaxWait)
		}
		report(0) // the last call that was accepted
		for range 200 {
			time.Sleep(5 * time.Millisecond) // 200 calls a second, all refused
			report(1)
		}
		s.mu.Lock()
		supply, _ := s.reports.Supply()
		s.mu.Unlock()
		if supply > 5 {
			t.Errorf("after a second of refusals with none remaining, the provider is measured to give back %.0f calls a second, want none", supply)
		}
		if rate, _ := s.pace(); rate > 90 {
			t.Errorf("pace %.0f a second while every call is refused, want half the blind 180", rate)
		}
	})
}

// A fixed window of 100 a second that starts on the second, publishing
// limit, remaining and reset, reached over a wire: with the limit known,
// pacer spends it to the edge, as it does a sliding window's. Every reset
// reads as a second away (reset and Date both whole seconds), so spread
// over a second the pace followed what was left down, and a fifth of each
// window went unspent: 0.80. From the first call, the first windows are
// paced blind (pace.TrustAfter) and cost a few points.
func TestFixedWindowOnTheSecondIsSpentToTheEdge(t *testing.T) {
	for _, off := range []time.Duration{0, 348 * time.Millisecond, 700 * time.Millisecond} {
		t.Run(off.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				toPresent()
				time.Sleep(off)
				api := &windowAPI{limit: 100, window: time.Second}
				tr := New(&wire{next: api}, WithLimit(PerSecond(100)), WithLogger(slogTo(io.Discard)))
				start := time.Now()
				hammer(tr, 16, start.Add(22*time.Second))
				a, r := api.counts("pacer", start, start.Add(20*time.Second))
				check(t, "fixed window, 20 s from the first call", a, r, 2000, 0.94)
				a, r = api.counts("pacer", start.Add(2*time.Second), start.Add(22*time.Second))
				check(t, "fixed window, from 2 s to 22 s", a, r, 2000, 0.97)
			})
		})
	}
}

// againstHTTPRate runs 16 callers for d through a Transport configured at
// rate a second, over a wire, behind a sliding window of 100 a second
// whose windows start with the server, a moment before the first call —
// as go-chi/httprate's do in pacerbench — off past the second, with an
// unpaced neighbour at neighbourRate a second on the same key from the
// start (none if 0). It returns what the server did with each one's calls.
func againstHTTPRate(t *testing.T, off time.Duration, rate int, neighbourRate float64, d time.Duration) (a, r, na, nr int) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		time.Sleep(off)
		api := &windowAPI{limit: 100, window: time.Second, offset: off, sliding: true, retryAfter: true}
		tr := New(&wire{next: api}, WithLimit(PerSecond(rate)), WithLogger(slogTo(io.Discard)))
		start := time.Now()
		if neighbourRate > 0 {
			go neighbour(api, neighbourRate, start.Add(d))
		}
		hammer(tr, 16, start.Add(d))
		a, r = api.counts("pacer", start, start.Add(d))
		na, nr = api.counts("neighbour", start, start.Add(d))
		var per []int
		for i := range 20 {
			_, x := api.counts("neighbour", start.Add(time.Duration(i)*time.Second), start.Add(time.Duration(i+1)*time.Second))
			per = append(per, x)
		}
		t.Logf("neighbour 429s by second %v", per)
	})
	return a, r, na, nr
}

// With the limit known, the first windows are spent too, not only those
// after what the provider gives back is measured. Each report in them
// said the reset was a second away (whole seconds), when it may be a
// moment away: spreading what was left over the whole second slowed the
// pace at each report, and the first two seconds lost a fifth of their
// calls (74–84 and 81–85 of 100; 0.957–0.964 over 20 s, scenario 6 of
// pacerbench 0.958).
func TestKnownLimitIsSpentToTheEdgeFromTheFirstCall(t *testing.T) {
	for _, off := range []time.Duration{0, 348 * time.Millisecond, 700 * time.Millisecond} {
		t.Run(off.String(), func(t *testing.T) {
			a, r, _, _ := againstHTTPRate(t, off, 100, 0, 20*time.Second)
			check(t, "limit known, 20 s from the first call", a, r, 2000, 0.97)
			first, _, _, _ := againstHTTPRate(t, off, 100, 0, 2*time.Second)
			check(t, "the first two seconds", first, 0, 200, 0.93)
		})
	}
}

// The first windows are spent at the blind pace only while nobody else is
// seen spending on the key: with an unpaced neighbour at 40 % from the
// first call, the count falls faster than pacer spends, and pacer spreads
// what is left as before. Spending it at the blind pace pushed the
// neighbour into 10–11 429s in the first second.
func TestFirstWindowsLeaveAnUnpacedNeighbourItsShare(t *testing.T) {
	for _, off := range []time.Duration{0, 348 * time.Millisecond, 700 * time.Millisecond} {
		t.Run(off.String(), func(t *testing.T) {
			a, r, na, nr := againstHTTPRate(t, off, 100, 40, 20*time.Second)
			check(t, "pacer", a, r, 60*20, 0.90)
			check(t, "neighbour", na, nr, 40*20, 0.98)
		})
	}
}

// Told twice the limit, a Transport's blind pace is not the provider's:
// the first windows are spread over the reset as before, not spent at the
// blind pace, which drew 429s whose Retry-After paused the scope (0.926).
func TestToldTwiceTheFirstWindowsAreNotSpentAtTheBlindPace(t *testing.T) {
	for _, off := range []time.Duration{0, 348 * time.Millisecond, 700 * time.Millisecond} {
		t.Run(off.String(), func(t *testing.T) {
			a, r, _, _ := againstHTTPRate(t, off, 200, 0, 20*time.Second)
			check(t, "told 2×, 20 s from the first call", a, r, 2000, 0.95)
		})
	}
}

// againstHTTPRateAsAFleet is againstHTTPRate for n processes sharing one
// store (a fleetStore), callers goroutines each, every Transport
// configured at rate a second, beside an unpaced neighbour at
// neighbourRate a second (none if 0). It returns what the server did with
// the fleet's calls and the neighbour's, from the first second on and
// from the second after.
func againstHTTPRateAsAFleet(t *testing.T, n, callers, rate int, neighbourRate float64, d time.Duration) (a, r, na, nr, laterNA, laterNR int) {
	return againstHTTPRateAsAFleetOn(t, fleetStore{store.NewMemory()}, n, callers, rate, neighbourRate, d)
}

// againstHTTPRateAsAFleetOn is againstHTTPRateAsAFleet with the fleet
// sharing the store given.
func againstHTTPRateAsAFleetOn(t *testing.T, shared store.Store, n, callers, rate int, neighbourRate float64, d time.Duration) (a, r, na, nr, laterNA, laterNR int) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		api := &windowAPI{limit: 100, window: time.Second, sliding: true, retryAfter: true}
		var trs []*Transport
		for range n {
			trs = append(trs, New(&wire{next: api}, WithLimit(PerSecond(rate)), WithStore(shared, store.Policy{}), WithLogger(slogTo(io.Discard))))
		}
		start := time.Now()
		if neighbourRate > 0 {
			go neighbour(api, neighbourRate, start.Add(d))
		}
		var wg sync.WaitGroup
		for _, tr := range trs {
			wg.Go(func() { hammer(tr, callers, start.Add(d)) })
		}
		wg.Wait()
		a, r = api.counts("pacer", start, start.Add(d))
		na, nr = api.counts("neighbour", start, start.Add(d))
		laterNA, laterNR = api.counts("neighbour", start.Add(time.Second), start.Add(d))
		var fleet, neighbour []int
		for i := range int(d / time.Second) {
			from, to := start.Add(time.Duration(i)*time.Second), start.Add(time.Duration(i+1)*time.Second)
			x, _ := api.counts("pacer", from, to)
			_, y := api.counts("neighbour", from, to)
			fleet, neighbour = append(fleet, x), append(neighbour, y)
		}
		t.Logf("by second: the fleet's calls accepted %v, the neighbour's 429s %v", fleet, neighbour)
	})
	return a, r, na, nr, laterNA, laterNR
}

// A fleet of four sharing one bucket, with the limit known, behind a
// sliding window that publishes what remains: each report's reset is a
// second away in whole seconds. The shared store says, with each take,
// what the whole fleet has taken from the bucket (store.Decision.Taken),
// so each process tells what the fleet spent between two reports from
// what a neighbour took, measures what the provider gives back as one
// process does, and paces at the edge. Without the fleet's total, the
// other processes' calls read as a neighbour's, and the fleet kept its
// blind pace: 0.884 here, 0.904 in pacerbench's scenario 14.
func TestFleetWithRemainingCountsPacesAtTheEdge(t *testing.T) {
	a, r, _, _, _, _ := againstHTTPRateAsAFleet(t, 4, 4, 100, 0, 20*time.Second)
	check(t, "4 processes, limit known, 20 s", a, r, 2000, 0.96)
}

// Beside an unpaced neighbour at 40 %, such a fleet takes what is left and
// leaves the neighbour its share from the first window on: the count
// falling faster than the fleet spends is the neighbour. Without the
// fleet's total, nothing told the neighbour apart from the fleet's own
// processes until the window turned, and the neighbour's last calls in
// the first window were refused (12–14 of 40). A process that hears a
// report only every second or two measures what came back over that span
// as supply, not as a fixed window's refill: unmeasured, its pace stayed
// where an early report left it, and its takes refilled the shared bucket
// at that pace (0.85–0.875 of what was left).
func TestFleetLeavesAnUnpacedNeighbourItsShare(t *testing.T) {
	a, r, na, nr, _, _ := againstHTTPRateAsAFleet(t, 4, 4, 100, 40, 20*time.Second)
	check(t, "the fleet", a, r, 60*20, 0.90)
	check(t, "the neighbour, from the first window on", na, nr, 40*20, 0.99)
}

// uncountedStore is a shared store whose takes do not say what the fleet
// took (store.Decision.Taken): one of an earlier version, or a lease.
type uncountedStore struct{ fleetStore }

func (u uncountedStore) Take(ctx context.Context, now time.Time, ds []store.Demand) (store.Decision, error) {
	d, err := u.fleetStore.Take(ctx, now, ds)
	d.Taken = 0
	return d, err
}

// Behind a store that does not say what the fleet took, a fleet cannot
// tell its own processes from a neighbour: it keeps its blind pace, the
// shared bucket clamped to what remains, as before the total (spread over
// the reset, what was left had set its pace at half the limit, 0.495). In
// its first window it leaves an unpaced neighbour short (12–14 of its 40
// refused), and from the second on, the neighbour keeps its share. Beside
// the neighbour a run takes 0.98 of what is left on an idle host, but
// four processes' goroutines woken at one instant run in another order on
// a loaded one, and CI saw 0.897 against a bound of 0.90: the bounds sit
// lower, far above the 0.495 this keeps out.
func TestFleetWithoutTheTotalKeepsItsBlindPace(t *testing.T) {
	a, r, _, _, _, _ := againstHTTPRateAsAFleetOn(t, uncountedStore{fleetStore{store.NewMemory()}}, 4, 4, 100, 0, 20*time.Second)
	check(t, "4 processes, limit known, 20 s", a, r, 2000, 0.86)
	a, r, _, _, na, nr := againstHTTPRateAsAFleetOn(t, uncountedStore{fleetStore{store.NewMemory()}}, 4, 4, 100, 40, 20*time.Second)
	check(t, "beside a neighbour", a, r, 60*20, 0.86)
	check(t, "the neighbour, from the second window on", na, nr, 40*19, 0.98)
}

// A shared store that forgets a full bucket starts its total again at
// zero. A scope that took the lower totals that follow for answers
// overtaken by later ones ignored every report until the total grew past
// the last it had seen; it measures afresh instead.
func TestAFleetTotalThatStartsAgainIsMeasuredAfresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(http.DefaultTransport, WithLimit(PerSecond(100)), WithStore(fleetStore{store.NewMemory()}, store.Policy{}))
		s := tr.defaultScope.shared
		var total int64 = 5000
		for range 20 {
			time.Sleep(10 * time.Millisecond)
			total++
			s.reportRemaining(time.Now(), pace.Count{Remaining: 50, Reset: time.Second, Limit: 100, Mark: total, Refused: 0, Local: false, Fleet: true}, defaultMaxWait)
		}
		time.Sleep(time.Second)
		total = 1 // the bucket was forgotten, and started again
		if v, _ := s.reportRemaining(time.Now(), pace.Count{Remaining: 50, Reset: time.Second, Limit: 100, Mark: total, Refused: 0, Local: false, Fleet: true}, defaultMaxWait); v.Rate == 0 {
			t.Fatal("a report after the total started again was taken for old news")
		}
		// The totals that follow are measured from the new one.
		time.Sleep(10 * time.Millisecond)
		if v, _ := s.reportRemaining(time.Now(), pace.Count{Remaining: 50, Reset: time.Second, Limit: 100, Mark: total + 1, Refused: 0, Local: false, Fleet: true}, defaultMaxWait); v.Rate == 0 {
			t.Error("the report after the total started again was taken for old news against the total before")
		}
	})
}

// The marks a scope measures from change unit when its store starts to say
// what the fleet took (the first takes, a store that stops counting): the
// fleet's total against the scope's own spent would read as thousands of
// calls given back, or, below a refill's jump, as a supply that is not
// there. The scope measures afresh from the first report in the new unit.
func TestMarksThatChangeUnitAreMeasuredAfresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(http.DefaultTransport, WithLimit(PerSecond(100)), WithStore(fleetStore{store.NewMemory()}, store.Policy{}))
		s := tr.defaultScope.shared
		for range 5 { // the scope's own spent, no total
			time.Sleep(50 * time.Millisecond)
			s.reportRemaining(time.Now(), pace.Count{Remaining: 50, Reset: time.Second, Limit: 100, Mark: s.spent.Add(1), Refused: 0, Local: false, Fleet: false}, defaultMaxWait)
		}
		time.Sleep(200 * time.Millisecond)
		// What the fleet took, less than a refill's jump beyond the scope's
		// own spent: as a gain, 25 calls in 0.2 s.
		s.reportRemaining(time.Now(), pace.Count{Remaining: 50, Reset: time.Second, Limit: 100, Mark: s.spent.Load() + 25, Refused: 0, Local: false, Fleet: true}, defaultMaxWait)
		s.mu.Lock()
		supply, known := s.reports.Supply()
		s.mu.Unlock()
		if known {
			t.Errorf("the first report in the fleet's total measured a supply of %.0f a second from marks in the scope's own spent", supply)
		}
	})
}

// In an outage of bare 429s nothing is accepted, so each cut finds no
// capacity and leaves the scope at its floor. From the least factor the
// climb took about 7 s to send a call (a 100/s scope), so a provider that
// healed waited that long for the first call that would find it healthy:
// 244 of 1,000 calls in the 10 s after a minute's outage (pacerbench
// scenario 12 the same). The scope now probes about once a second, where
// that is a small part of its pace: 788, for 35 more 429s in the minute.
func TestAnOutageIsProbedAboutOnceASecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		start := time.Now()
		api := &windowAPI{limit: 100, window: time.Second, sliding: true, retryAfter: true, offset: 348 * time.Millisecond,
			down: func(now time.Time) bool { return now.Sub(start) < time.Minute }}
		tr := New(&wire{next: api}, WithLimit(PerSecond(100)), WithMaxWait(2*time.Minute), WithLogger(slogTo(io.Discard)))
		hammer(tr, 16, start.Add(70*time.Second))
		_, during := api.counts("pacer", start, start.Add(time.Minute))
		after, r := api.counts("pacer", start.Add(time.Minute), start.Add(70*time.Second))
		t.Logf("%d 429s in the minute's outage; %d accepted and %d refused in the 10 s after it", during, after, r)
		if after < 700 {
			t.Errorf("%d accepted in the 10 s after the outage, want at least 700 of 1,000", after)
		}
		if during > 4*60 {
			t.Errorf("%d 429s in a minute's outage, want about a probe a second", during)
		}
	})
}
