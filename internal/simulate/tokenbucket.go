package simulate

import "time"

// TokenBucket holds up to Capacity tokens and gains Refill tokens a second;
// each allowed request takes one. It starts full, so a quiet client may send
// Capacity requests back to back, then Refill a second for as long as it
// keeps up the pressure.
type TokenBucket struct {
	capacity, refill float64
	tokens           float64
	last             time.Duration // when tokens was last brought up to date
}

// NewTokenBucket returns a full bucket. Capacity and refill must be positive;
// Config.Validate checks them before a run.
func NewTokenBucket(capacity int, refill float64) *TokenBucket {
	return &TokenBucket{capacity: float64(capacity), refill: refill, tokens: float64(capacity)}
}

// tokenEpsilon absorbs the rounding of adding refill × elapsed in floating
// point: 25 ms at 40/s must make exactly one token, not 0.9999999.
const tokenEpsilon = 1e-9

// Allow implements Limiter.
func (b *TokenBucket) Allow(now time.Duration) bool {
	b.tokens = b.Level(now)
	b.last = now
	if b.tokens < 1-tokenEpsilon {
		return false
	}
	b.tokens = max(0, b.tokens-1)
	return true
}

// Level implements Limiter: the tokens in the bucket at now.
func (b *TokenBucket) Level(now time.Duration) float64 {
	return min(b.capacity, b.tokens+(now-b.last).Seconds()*b.refill)
}
