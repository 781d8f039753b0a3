package pace

// SlotsCutFloor is the least share of its cap one refusal leaves a scope
// that limits only concurrency: the multiplicative decrease of AIMD.
const SlotsCutFloor = 0.5

// SlotsCut returns the share of a cap of n calls in flight to keep after
// the provider refused a call while held others were in flight, the share
// in use being cur; false when the refusal says nothing new (the cap it
// implies is no lower than the one in use, in whole slots).
//
// Server property: a concurrency cap refuses a call that arrives while it
// holds its cap, and what it held then were calls in flight, so for this
// scope its cap is at most held. The share is a hair over held's, so that
// Slots gives held slots, but never below SlotsCutFloor of cur: a refusal
// that was not the cap's — a rate limit's, an overloaded server's, a
// neighbour's calls — would otherwise take a cap of ten to one at once.
func SlotsCut(held, n int, cur float64) (float64, bool) {
	if n <= 0 || held < 0 {
		return cur, false
	}
	f := max(MinFactor, (float64(held)+1e-6)/float64(n), cur*SlotsCutFloor)
	if Slots(n, f) >= Slots(n, cur) {
		return cur, false
	}
	return f, true
}

// Slots returns share of n slots, rounded down, and at least one.
func Slots(n int, share float64) int {
	if share >= 1 {
		return n
	}
	return max(1, int(float64(n)*share))
}
