package pacer

import (
	"testing"
	"testing/synctest"
	"time"
)

// A first app against a server bucket of 100 a second with a burst of 1
// (issue 25): its count reads 0 after every call it accepts, which read as
// scarcity took the pace a little lower at each answer — 600 calls in 56 s,
// then 25 in 15 s. The count has no room for a margin, so it sets no pace:
// the configured limit does, at the burst the count shows the server holds.
// Within 5 s pacer is at 0.9 of the rate, with at most 1 % refused after the
// first second.
//
// On loopback only: over a round trip whose jitter is 0–100 ms each way,
// calls sent 11 ms apart reach the server in a shuffled order, and a bucket
// of one refuses any call that arrives within 10 ms of the one before — no
// client can fill it there without most of its calls refused.
func TestTightServerBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		api := &bucketAPI{rate: 100, burst: 0}
		tr := New(onLoopback.wrap(api), WithLimit(PerSecond(100)), WithoutRetry())
		start := time.Now()
		hammer(tr, onLoopback.callers, start.Add(20*time.Second))
		a, r := api.counts("pacer", start.Add(5*time.Second), start.Add(20*time.Second))
		check(t, "from 5 s", a, r, 1500, 0.89) // 0.900: the configured limit at the default headroom
		a, r = api.counts("pacer", start.Add(time.Second), start.Add(20*time.Second))
		if r*100 > a {
			t.Errorf("from 1 s: %d refused of %d accepted, want at most 1%%", r, a)
		}
		a, r = api.counts("pacer", start, start.Add(time.Second))
		t.Logf("the first second: %d accepted, %d refused", a, r)
	})
}

// Told twice the rate of a server bucket of one, the refusals are the
// lesson, as bare 429s are: the count has none to give. The cut takes the
// pace to what the server accepted, and it climbs back by time.
func TestTightServerBucketToldTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		api := &bucketAPI{rate: 50, burst: 0}
		tr := New(onLoopback.wrap(api), WithLimit(PerSecond(100)), WithoutRetry())
		start := time.Now()
		hammer(tr, onLoopback.callers, start.Add(20*time.Second))
		a, r := api.counts("pacer", start.Add(5*time.Second), start.Add(20*time.Second))
		check(t, "from 5 s", a, r, 750, 0.85)
		a, r = api.counts("pacer", start, start.Add(5*time.Second))
		t.Logf("the first 5 s: %d accepted, %d refused", a, r)
	})
}
