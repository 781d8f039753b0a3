package pacer

import (
	"fmt"
	"math"
	"time"

	"github.com/pacer-go/pacer/observe"
)

// A Limit is a provider's published rate limit: Count units per Per, with
// Burst units allowed at once.
//
// The zero Limit means no rate limit.
type Limit struct {
	Count int
	Per   time.Duration
	// Burst is how many units may go out back to back. Zero means the
	// default, (1 − headroom) × Count and at least 1: then in any window of
	// length Per pacer sends at most the burst plus what refills in that
	// window, (1 − headroom) × Count + headroom × Count = Count. The
	// provider's limit holds whether it counts in fixed windows, sliding
	// windows or a token bucket, without pacer having to know which. A
	// Burst above Count over a period longer than a second lets one period
	// carry more than Count; New says so once in the log.
	Burst int
}

// PerSecond returns a limit of n units a second.
func PerSecond(n int) Limit { return Limit{Count: n, Per: time.Second} }

// PerMinute returns a limit of n units a minute.
func PerMinute(n int) Limit { return Limit{Count: n, Per: time.Minute} }

// PerHour returns a limit of n units an hour.
func PerHour(n int) Limit { return Limit{Count: n, Per: time.Hour} }

// IsZero reports whether l sets no limit.
func (l Limit) IsZero() bool { return l.Count == 0 && l.Per == 0 && l.Burst == 0 }

// String returns the limit in the form "100/1m0s burst 10".
func (l Limit) String() string { return observe.Limit(l).String() }

func (l Limit) validate() error {
	if l.IsZero() {
		return nil
	}
	if l.Count <= 0 || l.Per <= 0 {
		return fmt.Errorf("limit %v: Count and Per must both be positive (use PerSecond, PerMinute or PerHour)", l)
	}
	if l.Burst < 0 {
		return fmt.Errorf("limit %v: Burst must not be negative", l)
	}
	return nil
}

// shape returns the refill rate, in units a second, and the bucket's capacity
// that pacer uses for l when it keeps headroom of the provider's limit.
func (l Limit) shape(headroom float64) (rate, burst float64) {
	if l.IsZero() {
		return 0, 0
	}
	rate = float64(l.Count) * headroom / l.Per.Seconds()
	burst = float64(l.Burst)
	if l.Burst == 0 {
		// The small epsilon keeps (1 − 0.9) × 100 at 10, not 9.999….
		burst = math.Max(1, math.Floor((1-headroom)*float64(l.Count)+1e-9))
	}
	return rate, burst
}
