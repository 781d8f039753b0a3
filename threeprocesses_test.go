package pacer

import (
	"io"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Three processes each told the whole limit of a token bucket — 600 a
// minute, 10 a second with room for 50 — and no store to share it through.
// Each measures what the bucket gives back net of the others' take (about
// 3.3 a second: to one process the others look like a slower refill, and
// it looks alone), and paces there with the bucket near empty. Below its
// margin, a count's floor was half the blind pace, 4.5 a second, more than
// came back: whichever process fell below its margin sent into the others'
// share. Here that refused 1–4 calls past the first seconds in each of
// twenty runs; the bench's virtual throttled GCRA, 22 of 1,200 (the
// first seconds, when each process reads the whole bucket as its own, are
// left out). The floor is what comes back now, and none is refused. On
// loopback and over a 40–60 ms round trip.
func TestThreeProcessesOnOneBucketWithoutAStore(t *testing.T) {
	for _, net := range []network{
		onLoopback,
		{"rtt 40-60ms", func(rt http.RoundTripper) http.RoundTripper {
			return &farWire{next: rt, base: 20 * time.Millisecond, jitter: 10 * time.Millisecond}
		}, 32},
	} {
		t.Run(net.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				toPresent()
				api := &bucketAPI{rate: 10, burst: 50}
				start := time.Now()
				const d, skip = 120 * time.Second, 5 * time.Second
				var wg sync.WaitGroup
				for range 3 {
					tr := New(net.wrap(api), WithLimit(Limit{Count: 600, Per: time.Minute}), WithLogger(slogTo(io.Discard)), WithoutRetry())
					wg.Go(func() { hammer(tr, 32, start.Add(d)) }) // 32 callers each, as many as the bench's
				}
				wg.Wait()
				a, r := api.counts("pacer", start.Add(skip), start.Add(d))
				check(t, "three processes", a, r, 10*(d-skip).Seconds(), 0.97)
				if r > 0 {
					t.Errorf("%d refused after the first %v, want none: each process paces at what comes back to it", r, skip)
				}
			})
		})
	}
}
