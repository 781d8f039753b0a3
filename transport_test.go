package pacer

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/observe"
)

// Tests that wait run inside a synctest bubble: time there is virtual and
// moves only when every goroutine in the bubble is blocked, so waits take no
// wall-clock time and the outcome is the same on every run.

func TestHeadroomPacesBelowPublishedLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &stubAPI{clock: clock.System}
		tr := New(api, WithLimit(PerSecond(100)))
		start := time.Now()
		for time.Since(start) < 10*time.Second {
			mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		}
		// 10 tokens of burst at once, then 90 a second: the call that finds
		// the clock at 10 s is the one the 900th refilled token paid for.
		if got, want := api.count(), 10+900; got != want {
			t.Errorf("sent %d requests in 10 s, want %d (burst 10 + 90/s)", got, want)
		}
	})
}

func TestDefaultBurstKeepsEveryWindowWithinTheLimit(t *testing.T) {
	for _, limit := range []Limit{PerSecond(20), PerSecond(3), PerMinute(600)} {
		synctest.Test(t, func(t *testing.T) {
			api := &stubAPI{clock: clock.System}
			tr := New(api, WithLimit(limit))
			var wg sync.WaitGroup
			end := time.Now().Add(5 * limit.Per)
			for range 8 {
				wg.Go(func() {
					for time.Now().Before(end) {
						mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
					}
				})
			}
			wg.Wait()
			sent := api.requests()
			for i := range sent {
				inWindow := 0
				for j := i; j < len(sent) && sent[j].at.Sub(sent[i].at) < limit.Per; j++ {
					inWindow++
				}
				if inWindow > limit.Count {
					t.Fatalf("%v: %d requests in the window of %v from %v; the limit is %d", limit, inWindow, limit.Per, sent[i].at, limit.Count)
				}
			}
			if min := int(5 * 0.9 * float64(limit.Count)); len(sent) < min {
				t.Errorf("%v: only %d requests in 5 periods, want at least %d", limit, len(sent), min)
			}
		})
	}
}

// keyRoute charges every request to the account scope and to the bucket of
// its X-Key header in the key scope.
func keyRoute(req *http.Request, charges []Charge) []Charge {
	return append(charges[:0], Charge{Scope: "account"}, Charge{Scope: "key", Key: req.Header.Get("X-Key")})
}

func getWithKey(rt http.RoundTripper, ctx context.Context, key string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
	req.Header.Set("X-Key", key)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

func TestFanOutAcrossKeysStaysWithinTheAccount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &stubAPI{clock: clock.System}
		tr := New(api,
			WithScope(Scope{Name: "account", Limit: PerSecond(10)}),
			WithScope(Scope{Name: "key", Limit: PerSecond(10)}),
			WithRoute(keyRoute))
		var wg sync.WaitGroup
		end := time.Now().Add(5 * time.Second)
		for i := range 5 {
			key := string(rune('a' + i))
			for range 3 {
				wg.Go(func() {
					for time.Now().Before(end) {
						mustNotErr(t, getWithKey(tr, context.Background(), key))
					}
				})
			}
		}
		wg.Wait()
		sent := 0 // before the end; calls already waiting then go out later
		for _, r := range api.requests() {
			if r.at.Before(end) {
				sent++
			}
		}
		// Five keys could send 5 × 9/s; the account allows 1 + 9/s.
		if got, max := sent, 1+45; got > max {
			t.Errorf("five keys sent %d requests in 5 s; the account allows %d", got, max)
		}
		if got, min := sent, 45; got < min {
			t.Errorf("five keys sent %d requests in 5 s; the account allows %d, want it used", got, min)
		}
	})
}

func TestAdmissionAcrossScopesIsAllOrNothing(t *testing.T) {
	clk := newFakeClock()
	api := &stubAPI{clock: clk}
	tr := New(api, withClock(clk),
		WithScope(Scope{Name: "account", Limit: Limit{Count: 10, Per: time.Hour, Burst: 10}, FailFast: true}),
		WithScope(Scope{Name: "key", Limit: Limit{Count: 1, Per: time.Hour, Burst: 1}, FailFast: true}),
		WithRoute(keyRoute))
	mustNotErr(t, getWithKey(tr, context.Background(), "a"))
	// Key a is spent: these fail on the key scope, and must take nothing
	// from the account.
	for range 5 {
		err := getWithKey(tr, context.Background(), "a")
		if te := asThrottled(t, err); te.Scope != "key" {
			t.Fatalf("throttled on %q, want the key scope", te.Scope)
		}
	}
	// So the account still has 9 tokens for 9 other keys, and no more.
	for _, key := range strings.Split("bcdefghij", "") {
		mustNotErr(t, getWithKey(tr, context.Background(), key))
	}
	if te := asThrottled(t, getWithKey(tr, context.Background(), "k")); te.Scope != "account" {
		t.Fatalf("throttled on %q, want the account scope", te.Scope)
	}
	if got := api.count(); got != 10 {
		t.Errorf("sent %d, want 10", got)
	}
}

func TestCostInUnits(t *testing.T) {
	clk := newFakeClock()
	api := &stubAPI{clock: clk}
	estimate := func(req *http.Request, charges []Charge) []Charge {
		return append(charges, Charge{Scope: "tokens", Cost: 100})
	}
	tr := New(api, withClock(clk),
		// 10,000 tokens a minute: 150 a second at 90%, a burst of 1,000.
		WithScope(Scope{Name: "tokens", Unit: "tokens", Limit: PerMinute(10000), FailFast: true}),
		WithRoute(estimate))
	ctx := ContextWithCost(context.Background(), "tokens", 400)
	mustNotErr(t, get(tr, ctx, "http://api.test/"))
	mustNotErr(t, get(tr, ctx, "http://api.test/"))
	te := asThrottled(t, get(tr, ctx, "http://api.test/"))
	if te.Scope != "tokens" || te.Reason != observe.ReasonRate {
		t.Errorf("throttled on %q for %q, want tokens for rate", te.Scope, te.Reason)
	}
	// 200 left, 400 needed, 150 a second.
	if want := 1333333334 * time.Nanosecond; te.RetryAfter != want {
		t.Errorf("RetryAfter = %v, want %v", te.RetryAfter, want)
	}
	// Without a stated cost the route's estimate of 100 applies.
	mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
	mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
	if te := asThrottled(t, get(tr, context.Background(), "http://api.test/")); te.Scope != "tokens" {
		t.Errorf("throttled on %q, want tokens", te.Scope)
	}
	clk.Advance(time.Second)
	mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
	if got := api.count(); got != 5 {
		t.Errorf("sent %d, want 5", got)
	}
}

func TestRequestLargerThanTheBucketFailsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &stubAPI{clock: clock.System}
		tr := New(api, WithScope(Scope{Name: "tokens", Unit: "tokens", Limit: PerMinute(10000)}),
			WithRoute(func(req *http.Request, charges []Charge) []Charge {
				return append(charges, Charge{Scope: "tokens"})
			}))
		start := time.Now()
		err := get(tr, ContextWithCost(context.Background(), "tokens", 5000), "http://api.test/")
		if !errors.Is(err, ErrExceedsCapacity) || !errors.Is(err, ErrThrottled) {
			t.Fatalf("err = %v, want ErrExceedsCapacity", err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("failed after %v, want at once", waited)
		}
		if api.count() != 0 {
			t.Error("the request was sent")
		}
		if !strings.Contains(err.Error(), "5000") {
			t.Errorf("error %q does not say what the request costs", err)
		}
	})
}

func TestDeadlineThatCannotBeMetFailsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &stubAPI{clock: clock.System}
		// 0.9 a second after a burst of 6.
		tr := New(api, WithLimit(PerMinute(60)))
		for range 6 {
			mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := get(tr, ctx, "http://api.test/")
		if waited := time.Since(start); waited != 0 {
			t.Errorf("failed after %v, want at once", waited)
		}
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrThrottled) {
			t.Fatalf("err = %v, want one matching context.DeadlineExceeded and ErrThrottled", err)
		}
		if te := asThrottled(t, err); te.RetryAfter < 1100*time.Millisecond || te.RetryAfter > 1112*time.Millisecond {
			t.Errorf("RetryAfter = %v, want about 1.11 s", te.RetryAfter)
		}
		// A deadline that the wait fits in is waited for.
		ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		mustNotErr(t, get(tr, ctx, "http://api.test/"))
		if waited := time.Since(start); waited < 1100*time.Millisecond || waited > 1112*time.Millisecond {
			t.Errorf("admitted after %v, want about 1.11 s", waited)
		}
	})
}

func TestDeadlineCountsTheCallsQueuedAhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &stubAPI{clock: clock.System}
		tr := New(api, WithLimit(Limit{Count: 1, Per: time.Second, Burst: 1}), WithHeadroom(1))
		mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		for range 3 { // three calls queue, for 1, 2 and 3 s
			go get(tr, context.Background(), "http://api.test/")
		}
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := get(tr, ctx, "http://api.test/")
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 0 {
			t.Fatalf("err = %v after %v, want DeadlineExceeded at once: three calls are ahead", err, time.Since(start))
		}
		time.Sleep(4 * time.Second) // virtual: let the queue drain
	})
}

func TestFailFastScope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &stubAPI{clock: clock.System}
		tr := New(api, WithLimit(PerSecond(10)), WithFailFast())
		mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		err := get(tr, context.Background(), "http://api.test/")
		te := asThrottled(t, err)
		if te.Reason != observe.ReasonRate || te.RetryAfter <= 0 || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %#v, want a rate throttle with a RetryAfter and no deadline", te)
		}
		time.Sleep(te.RetryAfter)
		mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
	})
}

func TestCancelledWaitTakesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &stubAPI{clock: clock.System}
		tr := New(api, WithLimit(Limit{Count: 1, Per: time.Second, Burst: 1}), WithHeadroom(1))
		mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- get(tr, ctx, "http://api.test/") }()
		time.Sleep(500 * time.Millisecond)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		// The token that refills at 1 s is still there for the next call.
		time.Sleep(500 * time.Millisecond)
		start := time.Now()
		mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		if waited := time.Since(start); waited != 0 {
			t.Errorf("the next call waited %v; the cancelled one took its token", waited)
		}
	})
}

func TestRoundTripDoesNotModifyTheRequest(t *testing.T) {
	api := &stubAPI{clock: clock.System}
	tr := New(api, WithLimit(PerSecond(100)), WithConcurrency(4),
		WithScope(Scope{Name: "key", Limit: PerSecond(10)}), WithRoute(keyRoute),
		WithScope(Scope{Name: "account", Limit: PerSecond(10)}))
	req, _ := http.NewRequest(http.MethodPost, "http://api.test/v1/things?x=1", strings.NewReader(`{"a":1}`))
	req.Header.Set("X-Key", "k1")
	req.Header.Set("Content-Type", "application/json")
	before := req.Clone(context.Background())
	resp, err := tr.RoundTrip(req)
	mustNotErr(t, err)
	resp.Body.Close()
	if req.Method != before.Method || req.URL.String() != before.URL.String() ||
		len(req.Header) != len(before.Header) || req.Header.Get("X-Key") != "k1" ||
		req.ContentLength != before.ContentLength || req.Context() != context.Background() {
		t.Errorf("the request was modified: %+v, was %+v", req, before)
	}
}

func TestRequestBodyIsClosedWhenNotSent(t *testing.T) {
	cases := map[string]*Transport{
		"configuration error": New(&stubAPI{clock: clock.System}, WithHeadroom(1.5)),
		"undeclared scope": New(&stubAPI{clock: clock.System}, WithRoute(func(_ *http.Request, c []Charge) []Charge {
			return append(c, Charge{Scope: "nope"})
		})),
		"fail fast": New(&stubAPI{clock: clock.System}, WithLimit(Limit{Count: 1, Per: time.Hour, Burst: 1}), WithFailFast()),
	}
	for name, tr := range cases {
		if name == "fail fast" {
			mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		}
		body := &trackingBody{Reader: strings.NewReader("{}")}
		req, _ := newPost(context.Background(), body)
		if _, err := tr.RoundTrip(req); err == nil {
			t.Errorf("%s: RoundTrip succeeded", name)
		}
		if !body.closed.Load() {
			t.Errorf("%s: the request body was not closed", name)
		}
	}
}

func TestConfigurationErrorsAreClear(t *testing.T) {
	tr := New(nil, WithHeadroom(0), WithLimit(Limit{Count: 10}), WithScope(Scope{Name: "x", Concurrency: -1}),
		WithScope(Scope{Name: "pacer:budget"}), WithScope(Scope{Name: "huge", Concurrency: math.MaxInt32 + 1}))
	err := tr.Err()
	for _, want := range []string{"WithHeadroom(0)", "Count and Per", `scope "x"`, `"pacer:budget"`, `scope "huge": Concurrency 2147483648`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Err() = %v, want it to mention %s", err, want)
		}
	}
	if New(nil, WithLimit(PerSecond(1))).Err() != nil {
		t.Error("a valid configuration reported an error")
	}
	// An option's bad argument is said in the option's words, and an
	// invalid count draws no warning about its burst on top.
	var log strings.Builder
	err = New(nil, WithConcurrency(-1), WithLimit(Limit{Count: -5, Per: time.Minute}), WithLogger(slogTo(&log))).Err()
	if want := "WithConcurrency(-1): the cap on calls in flight must be at least 0 (0 means no cap)"; err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), `scope "default": Concurrency`) {
		t.Errorf("Err() = %v, want it to say %q, once", err, want)
	}
	if strings.Contains(log.String(), "Burst") {
		t.Errorf("an invalid Count drew a warning about its burst: %s", log.String())
	}
}

func TestUndeclaredScopeIsAClearError(t *testing.T) {
	tr := New(&stubAPI{clock: clock.System}, WithRoute(func(_ *http.Request, c []Charge) []Charge {
		return append(c, Charge{Scope: "tokenz"})
	}))
	err := get(tr, context.Background(), "http://api.test/")
	if err == nil || !strings.Contains(err.Error(), `"tokenz"`) || !strings.Contains(err.Error(), "WithScope") {
		t.Errorf("err = %v, want it to name the scope and say how to declare it", err)
	}
}

func TestLaterOptionsOverrideABundle(t *testing.T) {
	preset := Options(WithLimit(PerSecond(100)), WithScope(Scope{Name: "tokens", Unit: "tokens", Limit: PerMinute(1000)}))
	tr := New(nil, preset, WithScope(Scope{Name: "tokens", Unit: "tokens", Limit: PerMinute(500)}))
	if got := tr.scopes["tokens"].Limit; got != PerMinute(500) {
		t.Errorf("tokens limit = %v, want the later 500/min", got)
	}
	if got := tr.scopes[DefaultScope].Limit; got != PerSecond(100) {
		t.Errorf("default limit = %v, want the bundle's", got)
	}
}
