package pace

import (
	"testing"
	"time"
)

// observeRoute has r observe count round trips of base plus up to jitter,
// from the n-th of route_test's draws (spread), and returns the draw
// after the last.
func observeRoute(r *RoundTrips, n, count int, base, jitter time.Duration) int {
	for range count {
		r.Observe(int64(base + spread(n, 0, jitter)))
		n++
	}
	return n
}

// A stall is no spread: a route of 200–400 ms that held 64 calls for three
// seconds and let them go together leaves the floor and the spread about
// where the route had them, so that the margin the spread sets is not a
// stall's. Taken in full, the stall's round trips raised the floor to two
// seconds and the spread to over one; behind a sliding window of 40 a
// second, 50 ms away each way, a stall of three seconds took the margin
// to 17 of its 40 calls, and the scope spent about 20 a second for the
// seconds it took to wear off.
func TestAStallIsNoSpread(t *testing.T) {
	var r RoundTrips
	n := observeRoute(&r, 0, 200, 200*time.Millisecond, 200*time.Millisecond)
	floor, spread := r.Floor, r.Spread
	observeRoute(&r, n, 64, 3200*time.Millisecond, 100*time.Millisecond)
	t.Logf("before the stall: floor %v, spread %v; after: %v, %v", time.Duration(floor), time.Duration(spread), time.Duration(r.Floor), time.Duration(r.Spread))
	if r.Floor > floor+int64(100*time.Millisecond) || r.Spread > 2*spread {
		t.Errorf("after the stall: floor %v, spread %v; want the floor within 100 ms of %v, the spread under twice %v",
			time.Duration(r.Floor), time.Duration(r.Spread), time.Duration(floor), time.Duration(spread))
	}
}

// A route that got longer for good is followed, a stall's bound on each
// round trip notwithstanding: from 200–400 ms to 2–2.4 s, within 400 round
// trips.
func TestARouteThatGrewIsFollowed(t *testing.T) {
	var r RoundTrips
	n := observeRoute(&r, 0, 200, 200*time.Millisecond, 200*time.Millisecond)
	observeRoute(&r, n, 400, 2*time.Second, 400*time.Millisecond)
	t.Logf("floor %v, spread %v", time.Duration(r.Floor), time.Duration(r.Spread))
	if r.Floor < int64(1500*time.Millisecond) || r.Spread < float64(100*time.Millisecond) {
		t.Errorf("after 400 round trips of 2–2.4 s: floor %v, spread %v; want 1.5 s and 100 ms at least", time.Duration(r.Floor), time.Duration(r.Spread))
	}
}
