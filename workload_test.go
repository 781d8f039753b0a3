package pacer

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/store"
)

// TestInteractiveIsServedWhileBatchFloods is the property users buy: a batch
// workload floods the scope, an interactive workload with a reserve of 0.3
// sends at 20% of the limit. Interactive calls wait no longer than about one
// token interval, batch gets the rest of the limit (at least 75% of it), the
// total never exceeds the limit — and when interactive goes idle batch takes
// the whole rate, but never the reserved part of the burst.
func TestInteractiveIsServedWhileBatchFloods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const published = 100 // a second; pacer paces at 90 with a burst of 10
		api := &stubAPI{clock: clock.System}
		tr := New(api, WithLimit(PerSecond(published)),
			WithWorkload("interactive", Workload{Reserve: 0.3}),
			WithWorkload("batch", Workload{}))
		const pace, burst = 90, 10
		tokenInterval := time.Second / pace

		start := time.Now()
		phase1 := start.Add(30 * time.Second)  // both workloads
		phase2 := phase1.Add(10 * time.Second) // batch alone

		var wg sync.WaitGroup
		batchCtx, stopBatch := context.WithCancel(ContextWithWorkload(context.Background(), "batch"))
		for range 16 {
			wg.Go(func() {
				for get(tr, batchCtx, "http://api.test/") == nil {
				}
			})
		}
		var waits []time.Duration
		interactive := ContextWithWorkload(context.Background(), "interactive")
		for at := start; at.Before(phase1); at = at.Add(time.Second / 20) {
			time.Sleep(time.Until(at))
			sent := time.Now()
			mustNotErr(t, get(tr, interactive, "http://api.test/"))
			waits = append(waits, time.Since(sent))
		}
		time.Sleep(time.Until(phase2))
		// Interactive comes back: its reserved burst is there at once.
		comeback := time.Now()
		for range 3 {
			mustNotErr(t, get(tr, interactive, "http://api.test/"))
		}
		comebackWait := time.Since(comeback)
		stopBatch()
		wg.Wait()

		var longest time.Duration
		for _, w := range waits {
			longest = max(longest, w)
		}
		if longest > tokenInterval {
			t.Errorf("the longest interactive wait was %v, want at most one token interval (%v)", longest, tokenInterval)
		}
		if comebackWait != 0 {
			t.Errorf("interactive waited %v for its reserved burst after batch ran alone", comebackWait)
		}

		perSecond := map[string][]int{}
		for _, r := range api.requests() {
			if r.at.Before(phase2) {
				s := int(r.at.Sub(start) / time.Second)
				if perSecond[r.workload] == nil {
					perSecond[r.workload] = make([]int, 40)
				}
				perSecond[r.workload][s]++
			}
		}
		sum := func(w string, from, to int) (n int) {
			for _, c := range perSecond[w][from:to] {
				n += c
			}
			return n
		}
		// After a second of warm-up, in phase 1:
		batchRate := float64(sum("batch", 1, 30)) / 29
		interactiveRate := float64(sum("interactive", 1, 30)) / 29
		if batchRate < 0.75*pace {
			t.Errorf("batch got %.1f/s while interactive sent %.1f/s; want at least 75%% of %v", batchRate, interactiveRate, pace)
		}
		if interactiveRate != 20 {
			t.Errorf("interactive got %.1f/s, want all of its 20/s", interactiveRate)
		}
		// In phase 2 batch is alone and work-conserving: the whole rate.
		if alone := float64(sum("batch", 31, 40)) / 9; alone < 0.99*pace {
			t.Errorf("batch alone got %.1f/s, want the whole %v/s", alone, pace)
		}
		// The total never exceeds the limit: burst plus refill in any second.
		for s := range 40 {
			if total := perSecond["batch"][s] + perSecond["interactive"][s]; float64(total) > pace+burst {
				t.Errorf("second %d: %d requests, more than %v", s, total, pace+burst)
			}
		}
		t.Logf("batch %.1f/s, interactive %.1f/s, longest interactive wait %v", batchRate, interactiveRate, longest)
	})
}

// TestBatchQueueDoesNotDelayInteractive guards against the trap of booking
// future tokens in arrival order: with hundreds of batch calls queued, an
// interactive call with no reserve of burst left still goes first.
func TestBatchQueueDoesNotDelayInteractive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &stubAPI{clock: clock.System}
		// A burst of one: no reserve of burst can exist, only priority.
		tr := New(api, WithLimit(PerSecond(10)),
			WithWorkload("interactive", Workload{Reserve: 0.5}))
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range 200 {
			wg.Go(func() { get(tr, ctx, "http://api.test/") })
		}
		synctest.Wait()
		start := time.Now()
		mustNotErr(t, get(tr, ContextWithWorkload(context.Background(), "interactive"), "http://api.test/"))
		if waited, interval := time.Since(start), time.Second/9+time.Millisecond; waited > interval {
			t.Errorf("interactive waited %v behind 200 queued batch calls; want at most a token interval (%v)", waited, interval)
		}
		cancel()
		wg.Wait()
	})
}

func TestMaxCapsAWorkloadsShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &stubAPI{clock: clock.System}
		tr := New(api, WithLimit(PerSecond(100)), WithWorkload("batch", Workload{Max: 0.5}))
		batch := ContextWithWorkload(context.Background(), "batch")
		end := time.Now().Add(10 * time.Second)
		for time.Now().Before(end) {
			mustNotErr(t, get(tr, batch, "http://api.test/"))
		}
		// Half of 90/s, after half of the burst of 10.
		if got, want := api.count(), 5+450; got != want {
			t.Errorf("batch sent %d in 10 s, want %d", got, want)
		}
	})
}

func TestBudgetExhaustion(t *testing.T) {
	clk := newFakeClock()
	api := &stubAPI{clock: clk}
	tr := New(api, withClock(clk), WithWorkload("backfill", Workload{Budget: Budget{Limit: 5, Per: time.Hour}}))
	ctx := ContextWithWorkload(context.Background(), "backfill")
	for range 5 {
		mustNotErr(t, get(tr, ctx, "http://api.test/"))
	}
	clk.Advance(10 * time.Minute)
	body := &trackingBody{Reader: strings.NewReader("{}")}
	req, _ := newPost(ctx, body)
	_, err := tr.RoundTrip(req)
	if !errors.Is(err, ErrBudgetExhausted) {
		t.Fatalf("err = %v, want ErrBudgetExhausted", err)
	}
	var be *BudgetError
	if !errors.As(err, &be) || be.Workload != "backfill" || be.ResetIn != 50*time.Minute {
		t.Errorf("err = %#v, want workload backfill resetting in 50m", be)
	}
	if !body.closed.Load() {
		t.Error("the request body of a call refused for its budget was not closed")
	}
	if api.count() != 5 {
		t.Errorf("sent %d, want 5: nothing past the budget", api.count())
	}
	// Other workloads are not charged to it.
	mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
	clk.Advance(50 * time.Minute)
	mustNotErr(t, get(tr, ctx, "http://api.test/"))
}

func TestBudgetInCostUnits(t *testing.T) {
	clk := newFakeClock()
	api := &stubAPI{clock: clk}
	tr := New(api, withClock(clk), WithWorkload("agent", Workload{Budget: Budget{Limit: 1000, Per: 24 * time.Hour, Unit: "tokens", Stated: true}}))
	ctx := ContextWithCost(ContextWithWorkload(context.Background(), "agent"), "Tokens", 400) // matched whatever its case
	mustNotErr(t, get(tr, ctx, "http://api.test/"))
	mustNotErr(t, get(tr, ctx, "http://api.test/"))
	if err := get(tr, ctx, "http://api.test/"); !errors.Is(err, ErrBudgetExhausted) {
		t.Fatalf("err = %v, want ErrBudgetExhausted after 800 of 1000 tokens and a call of 400", err)
	}
	small := ContextWithCost(ctx, "tokens", 200)
	mustNotErr(t, get(tr, small, "http://api.test/"))
}

func TestBudgetIsRefundedWhenTheCallIsNotSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &stubAPI{clock: clock.System}
		tr := New(api, WithLimit(Limit{Count: 1, Per: time.Minute, Burst: 1}),
			WithWorkload("backfill", Workload{Budget: Budget{Limit: 2, Per: time.Hour}}))
		ctx := ContextWithWorkload(context.Background(), "backfill")
		mustNotErr(t, get(tr, ctx, "http://api.test/"))
		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		for range 3 { // throttled: the rate refills in a minute
			if err := get(tr, short, "http://api.test/"); !errors.Is(err, ErrThrottled) {
				t.Fatalf("err = %v, want throttled", err)
			}
		}
		time.Sleep(time.Minute)
		mustNotErr(t, get(tr, ctx, "http://api.test/")) // the second of two
	})
}

// contextStore is a memory store that refuses a call whose context is done,
// as a network store does before it sends anything.
type contextStore struct{ *store.Memory }

func (s contextStore) Refund(ctx context.Context, now time.Time, ds []store.Demand) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.Memory.Refund(ctx, now, ds)
}

// A caller that gives up while its call waits gets the call's budget back,
// even from a store that honours contexts: the refund must not go out on the
// context that just ended.
func TestBudgetIsRefundedWhenTheCallerCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &stubAPI{clock: clock.System}
		tr := New(api, WithLimit(Limit{Count: 1, Per: time.Minute, Burst: 1}),
			WithStore(contextStore{store.NewMemory()}, store.Policy{}), WithoutRetry(),
			WithWorkload("backfill", Workload{Budget: Budget{Limit: 2, Per: time.Hour}}))
		ctx := ContextWithWorkload(context.Background(), "backfill")
		mustNotErr(t, get(tr, ctx, "http://api.test/"))
		waiting, cancel := context.WithCancel(ctx)
		time.AfterFunc(time.Second, cancel)
		if err := get(tr, waiting, "http://api.test/"); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want the cancellation", err)
		}
		time.Sleep(time.Minute)
		mustNotErr(t, get(tr, ctx, "http://api.test/")) // the second of two
	})
}

func TestWorkloadValidation(t *testing.T) {
	bad := map[string][]Option{
		"reserve above 1":     {WithWorkload("a", Workload{Reserve: 1.5})},
		"negative max":        {WithWorkload("a", Workload{Max: -0.1})},
		"max below reserve":   {WithWorkload("a", Workload{Reserve: 0.5, Max: 0.2})},
		"reserves above 1":    {WithWorkload("a", Workload{Reserve: 0.6}), WithWorkload("b", Workload{Reserve: 0.6})},
		"budget without Per":  {WithWorkload("a", Workload{Budget: Budget{Limit: 10}})},
		"empty workload name": {WithWorkload("", Workload{})},
	}
	for name, opts := range bad {
		tr := New(&stubAPI{clock: clock.System}, opts...)
		if tr.Err() == nil {
			t.Errorf("%s: no configuration error", name)
		}
	}
}

// A reserve on a slow scope (a day's requests) cannot keep the other
// workloads out beyond MaxWait: after a refusal drains the bucket, the
// reserved part refills in hours, and they would wait behind it. What a
// reserve keeps is at most what the scope refills in MaxWait.
func TestReserveOnASlowScopeNeverLocksOthersBeyondMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const maxWait = time.Minute
		var refuse atomic.Bool
		api := &stubAPI{clock: clock.System, respond: func(req *http.Request) (*http.Response, error) {
			if refuse.Swap(false) {
				return &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
			}
			return okResponse(req), nil
		}}
		tr := New(api,
			WithScope(Scope{Name: "day", Limit: Limit{Count: 10000, Per: 24 * time.Hour}}),
			WithRoute(func(_ *http.Request, ch []Charge) []Charge { return []Charge{{Scope: "day"}} }),
			WithMaxWait(maxWait), WithoutRetry(),
			WithWorkload("interactive", Workload{Reserve: 0.3}),
			WithWorkload("batch", Workload{}))
		mustNotErr(t, tr.Err())
		batch := ContextWithWorkload(context.Background(), "batch")
		mustNotErr(t, get(tr, batch, "http://api.test/"))
		refuse.Store(true)
		get(tr, batch, "http://api.test/") // a bare 429: the provider has nothing left
		var interval time.Duration         // one call's at the pace after the cut
		for _, s := range tr.Stats().Scopes {
			if s.Name == "day" {
				interval = time.Duration(float64(time.Second) / s.Rate)
			}
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(batch, maxWait+time.Minute)
		defer cancel()
		if err := get(tr, ctx, "http://api.test/"); err != nil {
			t.Fatalf("after one bare 429, a batch call waited %v and failed: %v", time.Since(start), err)
		}
		// MaxWait and the call's own interval at most: the provider's
		// refill, not the reserve's.
		if waited := time.Since(start); waited > maxWait+interval+time.Second {
			t.Fatalf("after one bare 429, a batch call waited %v; want at most MaxWait (%v) and one call's interval (%v)", waited, maxWait, interval)
		}
	})
}
