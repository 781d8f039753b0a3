package pacer

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Tests that wait run inside a synctest bubble: time there is virtual and
// moves only when every goroutine in the bubble is blocked, so waits take no
// wall-clock time and the outcome is the same on every run.

func TestHeadroomPacesBelowPublishedLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &stubAPI{clock: SystemClock}
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
			api := &stubAPI{clock: SystemClock}
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
