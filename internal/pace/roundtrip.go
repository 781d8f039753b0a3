package pace

import (
	"math"
	"time"
)

// RoundTrips keeps the shortest round trip of late: the floor under the
// jitter of the network and the lateness of a busy host. A count made by
// the server is dated at the call's admission plus half the floor — when
// the server counted — not when a busy host read the answer. The zero
// value has seen none.
type RoundTrips struct {
	Floor  int64   // nanoseconds; 0 until a first is seen
	Spread float64 // nanoseconds by which a round trip exceeds the floor, on average
	seen   int     // round trips the spread averages, up to spreadTrips
}

// spreadTrips is how many round trips the spread averages: it follows a
// route whose jitter changed in a few hundred calls.
const spreadTrips = 64

// Observe takes one round trip of d nanoseconds. A shorter one lowers the
// floor at once; a longer one raises it by 1/64 of the difference, so that
// the floor follows a route that got longer, in a few hundred calls.
//
// The spread is the mean excess over the floor of the round trips seen,
// until spreadTrips are, then an average that moves by 1/spreadTrips of
// each. Moved by 1/64 from nothing from the first, it read a tenth of a
// 200–400 ms route's jitter over its first dozen answers: the first
// burst's, whose disorder the spread is there to excuse (neighbourNoise).
//
// Once the spread is settled, a round trip more than stallSpread spreads
// above the floor is a stall or a queue the call waited in, not the
// route's jitter: it counts as that much, and a quarter as much as one
// within it. A stall that held every caller's call for three seconds and
// let them go together moved a 200–400 ms route's floor to two seconds and
// its spread to a second, and the margin the spread sets (Record.margin)
// left a sliding window of 40 a second half unspent for seconds after;
// a route that got longer for good is still followed, in a few hundred
// calls.
func (r *RoundTrips) Observe(d int64) {
	if d <= 0 {
		return // unknown
	}
	most := r.most()
	held := r.held(d)
	switch {
	case r.Floor == 0 || d < r.Floor:
		r.Floor = d
	case held:
		r.Floor += int64(most / 4 / 64)
	default:
		r.Floor += (d - r.Floor) / 64
	}
	r.seen = min(r.seen+1, spreadTrips)
	if held {
		r.Spread += (most - r.Spread) / 4 / float64(r.seen)
		return
	}
	r.Spread += (float64(d-r.Floor) - r.Spread) / float64(r.seen)
}

// stallSpread is how many spreads above the floor a round trip may be and
// still be the route's jitter (Observe).
const stallSpread = 3

// most is the most a round trip may exceed the floor by and be the route's
// jitter, in nanoseconds: without bound until the spread is settled.
func (r *RoundTrips) most() float64 {
	if r.seen < spreadTrips {
		return math.Inf(1)
	}
	return stallSpread * max(r.Spread, float64(time.Millisecond))
}

// held reports whether a round trip of d nanoseconds was held on its way,
// a stall or a queue beyond the route's jitter (Observe).
func (r *RoundTrips) held(d int64) bool {
	return r.Floor != 0 && float64(d-r.Floor) > r.most()
}
