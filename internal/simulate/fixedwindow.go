package simulate

import "time"

// FixedWindow allows Allowance requests in each window of the run: [0, W),
// [W, 2W), … The count starts again at every boundary, which is why a
// client can send up to twice the allowance in a short span around one.
type FixedWindow struct {
	allowance int
	window    time.Duration
	current   int64 // the index of the window count belongs to
	count     int
}

// NewFixedWindow returns a limiter of allowance requests per window, with
// windows aligned to the start of the run. Both must be positive.
func NewFixedWindow(allowance int, window time.Duration) *FixedWindow {
	return &FixedWindow{allowance: allowance, window: window}
}

// Allow implements Limiter.
func (f *FixedWindow) Allow(now time.Duration) bool {
	if i := int64(now / f.window); i != f.current {
		f.current, f.count = i, 0
	}
	if f.count >= f.allowance {
		return false
	}
	f.count++
	return true
}

// Level implements Limiter: the requests counted in the window holding now.
func (f *FixedWindow) Level(now time.Duration) float64 {
	if int64(now/f.window) != f.current {
		return 0
	}
	return float64(f.count)
}
