package pace

// RoundTrips keeps the shortest round trip of late: the floor under the
// jitter of the network and the lateness of a busy host. A count made by
// the server is dated at the call's admission plus half the floor — when
// the server counted — not when a busy host read the answer. The zero
// value has seen none.
type RoundTrips struct {
	Floor  int64   // nanoseconds; 0 until a first is seen
	Spread float64 // nanoseconds by which a round trip exceeds the floor, on average
}

// Observe takes one round trip of d nanoseconds. A shorter one lowers the
// floor at once; a longer one raises it by 1/64 of the difference, so that
// the floor follows a route that got longer, in a few hundred calls.
func (r *RoundTrips) Observe(d int64) {
	switch {
	case d <= 0:
	case r.Floor == 0 || d < r.Floor:
		r.Floor = d
	default:
		r.Floor += (d - r.Floor) / 64
	}
	r.Spread += (float64(d-r.Floor) - r.Spread) / 64
}
