package pace

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
func (r *RoundTrips) Observe(d int64) {
	switch {
	case d <= 0:
		return // unknown
	case r.Floor == 0 || d < r.Floor:
		r.Floor = d
	default:
		r.Floor += (d - r.Floor) / 64
	}
	r.seen = min(r.seen+1, spreadTrips)
	r.Spread += (float64(d-r.Floor) - r.Spread) / float64(r.seen)
}
