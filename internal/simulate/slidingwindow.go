package simulate

import (
	"sort"
	"time"
)

// SlidingWindow is a sliding log: it remembers when it allowed each request
// and allows a new one only if fewer than Allowance were allowed in the
// window that ends now. A request allowed at t counts until t + Window, and
// no longer: so any span [x, x+Window) holds at most Allowance allowed
// requests, wherever it starts.
//
// The log is the exact form of a sliding window. The weighted two-window
// estimate (the previous fixed window's count scaled by how much of it still
// overlaps, plus the current one's), popularized by Cloudflare, needs two
// counters instead of a log but can admit a little more or less than the
// allowance; the log is what that estimate approximates, so it is the one
// shown here. Its memory is one timestamp per request in the window.
type SlidingWindow struct {
	allowance int
	window    time.Duration
	log       []time.Duration // times of the allowed requests still in the window, oldest first
}

// NewSlidingWindow returns a sliding log of allowance requests per window.
// Both must be positive.
func NewSlidingWindow(allowance int, window time.Duration) *SlidingWindow {
	return &SlidingWindow{allowance: allowance, window: window}
}

// Allow implements Limiter.
func (s *SlidingWindow) Allow(now time.Duration) bool {
	s.log = s.log[s.expired(now):]
	if len(s.log) >= s.allowance {
		return false
	}
	s.log = append(s.log, now)
	return true
}

// Level implements Limiter: the allowed requests in the window ending at now.
func (s *SlidingWindow) Level(now time.Duration) float64 {
	return float64(len(s.log) - s.expired(now))
}

// expired returns how many entries at the head of the log no longer count
// at now: those allowed at or before now − window.
func (s *SlidingWindow) expired(now time.Duration) int {
	return sort.Search(len(s.log), func(i int) bool { return s.log[i] > now-s.window })
}
