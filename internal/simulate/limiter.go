package simulate

import "time"

// A Limiter decides, request by request, whether a call may go out now, and
// rejects it otherwise. The token bucket and the two windows are Limiters;
// pacer is not, because it makes a call wait instead of rejecting it (see
// RunPacer).
//
// Callers must pass times that never go backwards, to Allow and Level alike.
type Limiter interface {
	// Allow reports whether a request arriving at now is allowed, and if so
	// counts it.
	Allow(now time.Duration) bool
	// Level is the state a whiteboard would draw at now, without changing
	// it: the tokens left in a bucket, or the requests counted in a window.
	Level(now time.Duration) float64
}
