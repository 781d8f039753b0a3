package pacer

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The hot path checks the common case inline and calls out for the rest
// (BENCHMARKS.md, "The hot path after session 3"). These tests hold the
// rest to what it did before: each fails if its inline check takes the
// common case for one that is not.

// A new call queues behind a call already waiting on the scope, even when
// the bucket holds enough for the newcomer but not yet for the waiter: calls
// that were here first go first. admit checks for waiters before it tries.
func TestANewCallQueuesBehindAWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &scriptedAPI{}
		tr := New(api, WithHeadroom(1), WithLimit(Limit{Count: 1, Per: time.Second, Burst: 2}))
		mustNotErr(t, tr.Err())
		ctx := context.Background()
		start := time.Now()
		mustNotErr(t, get(tr, ContextWithCost(ctx, UnitRequests, 2), "http://api.test/a")) // empties the bucket
		var wg sync.WaitGroup
		wg.Go(func() { // needs 2 tokens: waits until start+2s
			mustNotErr(t, get(tr, ContextWithCost(ctx, UnitRequests, 2), "http://api.test/b"))
		})
		time.Sleep(1500 * time.Millisecond) // 1.5 tokens: enough for a call of 1
		mustNotErr(t, get(tr, ContextWithCost(ctx, UnitRequests, 1), "http://api.test/c"))
		wg.Wait()
		sent := api.sentTimes()
		want := []time.Duration{0, 2 * time.Second, 3 * time.Second}
		if len(sent) != len(want) {
			t.Fatalf("%d calls sent, want %d", len(sent), len(want))
		}
		for i, at := range sent {
			if got := at.Sub(start); got != want[i] {
				t.Errorf("call %d sent at %v, want %v: the call of 1 waits behind the call of 2 that came first", i, got, want[i])
			}
		}
	})
}

// A limit the provider publishes without a count of what remains (no live
// pace, no cut) paces the calls that follow, not the configured limit.
// setDemands reads the configured pace inline only when nothing was
// published.
func TestAPublishedLimitAloneRepacesTheCallsThatFollow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &scriptedAPI{steps: []scripted{{http.StatusOK, map[string]string{"X-Ratelimit-Limit-Requests": "600"}}}}
		tr := New(api, WithLimit(PerMinute(3000)), WithLogger(slogTo(io.Discard))) // 45/s, burst 300
		mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		if m := tr.defaultScope.shared.model.Load(); m == nil || m.Live.Until != 0 || m.Published == nil {
			t.Fatal("the published limit was not learned alone; the test no longer sets up its case")
		}
		start := time.Now()
		for time.Since(start) < 10*time.Second {
			mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		}
		// 600 a minute at 90%: 9/s after a burst of 60, so 60 + 90 in
		// 10 s; at the configured pace it would be 300 + 450.
		if n := between(api.sentTimes(), start, start.Add(10*time.Second)); n < 148 || n > 151 {
			t.Errorf("%d calls sent in the 10 s after 600 a minute was published, want 150 (9/s after a burst of 60)", n)
		}
	})
}
