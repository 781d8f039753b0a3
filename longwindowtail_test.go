package pacer

import (
	"io"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Three processes each told a sliding window's whole 600 a minute, with no
// shared store, reach it over a 200–400 ms route; the server answers a call
// sent into none left with Retry-After: its window, a minute (httprate).
// In the minute's last seconds its reset is a second or two, which a count
// that gives back as it goes may read as a bucket's time to be full; each
// process then spent what it saw left within half a second, together three
// times it, and six calls into the minute's last second cost each process
// the next minute (0.511 of the quota over two; here, four refused a run).
// Beside others on the key, that reset is the window's end coming (pace's
// reading.bucketReset), and none is refused.
func TestALongWindowsLastSecondsAreNotABucketsBesideOthers(t *testing.T) {
	for _, off := range []time.Duration{0, 370 * time.Millisecond, 700 * time.Millisecond} {
		synctest.Test(t, func(t *testing.T) {
			toPresent()
			time.Sleep(off)
			api := &windowAPI{limit: 600, window: time.Minute, sliding: true, retryAfter: true}
			start := time.Now()
			end := start.Add(2 * time.Minute)
			var wg sync.WaitGroup
			for range 3 {
				wg.Go(func() {
					tr := New(overTheInternet.wrap(api), WithLimit(PerMinute(600)), WithoutRetry(), WithLogger(slogTo(io.Discard)))
					hammer(tr, overTheInternet.callers/3, end)
				})
			}
			wg.Wait()
			a, r := api.counts("pacer", start, end)
			check(t, "three processes", a, r, 1200, 0.9)
			if r > 0 {
				t.Errorf("%d calls refused, each answered with Retry-After: 60; want none sent into none left", r)
			}
		})
	}
}
