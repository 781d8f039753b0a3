package pacer

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/observe"
)

// How the calls waiting through a live change end.
const (
	endAdmitted  = "admitted"  // the holder lets them in, in order
	endCancelled = "cancelled" // their contexts end
	endMixed     = "mixed"     // the first is cancelled between two changes, the others admitted
)

var liveChangeEnds = []string{endAdmitted, endCancelled, endMixed}

// liveWaiters starts n calls that wait on tr, each with a context of its
// own, and returns their cancels and the channel on which each says, in
// the order they end, its index and its error.
type liveResult struct {
	i   int
	err error
}

func liveWaiters(t *testing.T, tr *Transport, ctx context.Context, n int, charges ...Charge) ([]context.CancelFunc, chan liveResult) {
	t.Helper()
	cancels := make([]context.CancelFunc, n)
	results := make(chan liveResult, n)
	for i := range n {
		cctx, cancel := context.WithCancel(ctx)
		cancels[i] = cancel
		go func() {
			p, err := tr.Acquire(cctx, charges...)
			results <- liveResult{i, err} // before Done: in the order admitted
			if err == nil {
				p.Accept()
			}
		}()
		synctest.Wait() // queued, in order
	}
	return cancels, results
}

// cancelledBy returns which waiters an end cancels: none when a change
// admitted them all before it; else all, or the first (mixed).
func cancelledBy(end string, admittedByChanges bool) func(i int) bool {
	return func(i int) bool {
		return !admittedByChanges && (end == endCancelled || end == endMixed && i == 0)
	}
}

// checkEnds reads the n results and checks each: admitted ones in arrival
// order, cancelled ones with the context's error.
func checkEnds(t *testing.T, results chan liveResult, n int, isCancelled func(i int) bool, within time.Duration) {
	t.Helper()
	timeout := time.After(within)
	next := 0 // the next waiter to be admitted, in arrival order
	for next < n && isCancelled(next) {
		next++
	}
	for range n {
		var r liveResult
		select {
		case r = <-results:
		case <-timeout:
			t.Fatalf("a waiter had not ended %v after the end (virtual time)", within)
		}
		cancelled := isCancelled(r.i)
		switch {
		case cancelled && !errors.Is(r.err, context.Canceled):
			t.Errorf("waiter %d, cancelled: err = %v, want context.Canceled", r.i, r.err)
		case !cancelled && r.err != nil:
			t.Errorf("waiter %d: err = %v, want it admitted", r.i, r.err)
		case !cancelled && r.i != next:
			t.Errorf("waiter %d admitted when waiter %d was next: a change lost the waiters' places", r.i, next)
		}
		if !cancelled {
			next = r.i + 1
		}
	}
}

// Every live change of a workload (its MaxWaiting to 0, from 0, up, down,
// over and over, with its policy and shares) with calls waiting, which are
// then admitted or cancelled: nothing panics, each waiter ends as it
// should and keeps its place, the bound counts exactly the calls waiting
// whenever they began, and after the changes the last bound holds for
// newcomers.
func TestSetWorkloadWhileWaiting(t *testing.T) {
	mw := func(n int) Workload { return Workload{MaxWaiting: n} }
	for _, tc := range []struct {
		name    string
		start   Workload
		steps   []Workload
		waiters int
	}{
		{"to 0", mw(2), []Workload{mw(0)}, 1},
		{"from 0", mw(0), []Workload{mw(2)}, 2},
		{"from 0 below the calls waiting", mw(0), []Workload{mw(1)}, 3},
		{"up", mw(2), []Workload{mw(5)}, 2},
		{"down", mw(2), []Workload{mw(1)}, 2},
		{"through 0", mw(2), []Workload{mw(0), mw(2)}, 1},
		{"through 0 full", mw(2), []Workload{mw(0), mw(2)}, 2},
		{"repeated", mw(2), []Workload{mw(0), mw(2), mw(0), mw(3), mw(1), mw(0), mw(2), mw(2)}, 2},
		{"shed lowest through 0", Workload{MaxWaiting: 2, ShedLowest: true},
			[]Workload{{ShedLowest: true}, {MaxWaiting: 2, ShedLowest: true}}, 2},
		{"policy and shares", mw(2), []Workload{
			{ShedLowest: true, Reserve: 0.5}, {MaxWaiting: 3, Max: 0.5}, mw(0), {MaxWaiting: 1, ShedLowest: true}}, 2},
	} {
		for _, end := range liveChangeEnds {
			t.Run(tc.name+"/"+end, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					tr := New(nil, WithConcurrency(1), WithWorkload("w", tc.start))
					mustNotErr(t, tr.Err())
					ctx := ContextWithWorkload(context.Background(), "w")
					q := &tr.workloads["w"].waiting
					holder := mustAcquire(t, tr, ctx)
					cancels, results := liveWaiters(t, tr, ctx, tc.waiters)
					waiting := tc.waiters
					for i, w := range tc.steps {
						mustNotErr(t, tr.SetWorkload("w", w))
						synctest.Wait()
						if i == 0 && end == endMixed {
							cancels[0]()
							synctest.Wait()
							waiting--
						}
						if got := q.Len(); got != waiting {
							t.Errorf("after change %d to %+v: %d calls counted as waiting, want the %d waiting", i+1, w, got, waiting)
						}
					}
					if end == endCancelled {
						for _, cancel := range cancels {
							cancel()
						}
						synctest.Wait()
					}
					holder.Accept()
					checkEnds(t, results, tc.waiters, cancelledBy(end, false), time.Hour)
					if n := q.Len(); n != 0 {
						t.Errorf("%d calls counted as waiting, with none waiting", n)
					}
					checkBound(t, tr, ctx, tc.steps[len(tc.steps)-1].MaxWaiting)
				})
			})
		}
	}
}

// checkBound checks that the workload of ctx, with no call waiting and its
// one slot free, lets bound calls wait and refuses one more of the lowest
// priority at once (when bound is 0, any number wait).
func checkBound(t *testing.T, tr *Transport, ctx context.Context, bound int) {
	t.Helper()
	holder := mustAcquire(t, tr, ctx)
	n := bound
	if n == 0 {
		n = 3
	}
	_, results := liveWaiters(t, tr, ctx, n)
	// Refused at once beyond the bound; with none, it waits out its
	// deadline.
	extra, cancel := context.WithTimeout(ContextWithCall(ctx, Call{Priority: -maxRank}), time.Second)
	defer cancel()
	_, err := tr.Acquire(extra)
	switch {
	case err == nil:
		t.Fatalf("a call admitted while the one slot is held")
	case bound > 0 && asThrottled(t, err).Reason != observe.ReasonQueueFull:
		t.Errorf("a call beyond MaxWaiting %d: err = %v, want a full queue", bound, err)
	case bound == 0 && !errors.Is(err, context.DeadlineExceeded):
		t.Errorf("a call waiting under no bound: err = %v, want its deadline", err)
	}
	holder.Accept()
	checkEnds(t, results, n, cancelledBy(endAdmitted, false), time.Hour)
}

// Every live change of a scope's Limit (to none, from none, up, down, over
// and over, below what a waiter costs) with calls waiting on it, which are
// then admitted or cancelled: each waiter ends as it should, in its place,
// paced by the limit last set; a change to no limit admits them at once;
// one that no longer fits the burst is told so at once.
func TestSetLimitWhileWaiting(t *testing.T) {
	l := func(count int, per time.Duration, burst int) Limit {
		return Limit{Count: count, Per: per, Burst: burst}
	}
	for _, tc := range []struct {
		name    string
		start   Limit
		steps   []Limit
		cost    int64 // each waiter's cost; 0 means one request
		want    error // every waiter's error, whatever the end
		admitAt int   // the change (from 1) that admits the waiters; 0 if none does
	}{
		{name: "to 0", start: l(1, 10*time.Second, 1), steps: []Limit{{}}, admitAt: 1},
		{name: "from 0", start: Limit{}, steps: []Limit{l(1, 10*time.Second, 1)}},
		{name: "up", start: l(1, 10*time.Second, 1), steps: []Limit{l(10, time.Second, 1)}},
		{name: "down", start: l(10, time.Second, 1), steps: []Limit{l(1, 10*time.Second, 1)}},
		{name: "repeated", start: l(1, 10*time.Second, 1), steps: []Limit{
			l(1, time.Minute, 1), l(5, time.Second, 2), l(1, time.Hour, 3), l(1, 2*time.Second, 1), l(1, 2*time.Second, 1)}},
		{name: "repeated through 0", start: l(1, 10*time.Second, 1), steps: []Limit{
			l(1, time.Minute, 1), {}, l(5, time.Second, 2), {}, l(1, 2*time.Second, 1)}, admitAt: 2},
		{name: "below a waiter's cost", start: l(5, time.Second, 5), steps: []Limit{l(5, time.Second, 2)}, cost: 5, want: ErrExceedsCapacity},
	} {
		for _, end := range liveChangeEnds {
			t.Run(tc.name+"/"+end, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					// One slot, held while the scope has no limit to hold
					// the waiters back.
					tr := New(nil, WithLimit(tc.start), WithHeadroom(1), WithConcurrency(1))
					mustNotErr(t, tr.Err())
					ctx := context.Background()
					var charges []Charge
					if tc.cost > 0 {
						charges = []Charge{{Scope: DefaultScope, Cost: tc.cost}}
					}
					holder := mustAcquire(t, tr, ctx, charges...) // the burst's tokens, or none
					if !tc.start.IsZero() {
						holder.Accept()
					}
					const waiters = 2
					cancels, results := liveWaiters(t, tr, ctx, waiters, charges...)
					for i, lim := range tc.steps {
						mustNotErr(t, tr.SetLimit(DefaultScope, lim))
						synctest.Wait()
						if i == 0 && end == endMixed && tc.admitAt != 1 {
							cancels[0]()
							synctest.Wait()
						}
					}
					if end == endCancelled {
						for _, cancel := range cancels {
							cancel()
						}
						synctest.Wait()
					}
					if tc.start.IsZero() {
						holder.Accept()
					}
					last := tc.steps[len(tc.steps)-1]
					if tc.want != nil {
						for range waiters {
							if r := <-results; !errors.Is(r.err, tc.want) && !errors.Is(r.err, context.Canceled) {
								t.Errorf("waiter %d: err = %v, want %v", r.i, r.err, tc.want)
							}
						}
						return
					}
					// At the last limit, the waiters' tokens refill within
					// one period each.
					isCancelled := cancelledBy(end, tc.admitAt > 0)
					if end == endMixed && tc.admitAt > 1 {
						isCancelled = cancelledBy(end, false) // the first, before the change that admits the other
					}
					checkEnds(t, results, waiters, isCancelled, time.Duration(waiters)*last.Per+time.Nanosecond)
					if s := tr.scopes[DefaultScope].shared; s.waiting.Load() != 0 {
						t.Errorf("%d calls still queued on the scope", s.waiting.Load())
					}
				})
			})
		}
	}
}

// A pause that ends while its scope paces nothing (SetLimit to the zero
// Limit) leaves no debt for a limit set later: the bucket is empty, not
// owing, when the pause ends, whatever the pace then. The debt repaid at
// the new, slower pace had stopped the scope for ten maximum waits.
func TestAPauseEndedWhileUnpacedLeavesNoDebt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const maxWait = 5 * time.Second
		var refuse atomic.Bool
		api := &stubAPI{clock: clock.System, respond: func(req *http.Request) (*http.Response, error) {
			if refuse.Swap(false) {
				h := http.Header{"Retry-After": {"2"}}
				return &http.Response{StatusCode: http.StatusTooManyRequests, Header: h, Body: http.NoBody, Request: req}, nil
			}
			return okResponse(req), nil
		}}
		tr := New(api, WithLimit(PerSecond(50)), WithMaxWait(maxWait), WithoutRetry())
		ctx := context.Background()
		refuse.Store(true)
		get(tr, ctx, "http://api.test/") // paused for 2 s, owing 2 s of the pace
		mustNotErr(t, tr.SetLimit(DefaultScope, Limit{}))
		time.Sleep(3 * time.Second)
		mustNotErr(t, get(tr, ctx, "http://api.test/")) // the pause has ended; nothing paces
		mustNotErr(t, tr.SetLimit(DefaultScope, PerSecond(5)))
		start := time.Now()
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		mustNotErr(t, get(tr, wctx, "http://api.test/"))
		// One call's interval at the new pace, even cut (about 0.4 s): not
		// the old pause's debt repaid at it.
		if waited := time.Since(start); waited > time.Second {
			t.Fatalf("after the pause ended unpaced, a call under the new limit waited %v; want at most one call's interval", waited)
		}
	})
}
