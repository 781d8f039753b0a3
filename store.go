package pacer

import (
	"context"
	"math"
	"time"
)

// A Store keeps the state of the token buckets that pace requests, and
// decides whether a request may take from them.
//
// The in-memory store is the default. A store shared by a fleet (Redis,
// Postgres) lets many processes pace themselves against one bucket.
//
// Each call is atomic across all the demands it is given: Take grants every
// demand or none, so a request never holds tokens on one bucket while it
// waits on another. A remote store must decide each call in one round trip.
// The now argument is the caller's clock; a remote store may use its own
// clock instead, so that instances with skewed clocks agree.
type Store interface {
	// Take takes each demand's Cost from its bucket if every bucket can
	// give it while keeping its Floor, and otherwise takes nothing and says
	// which demand would wait longest, and for how long.
	Take(ctx context.Context, now time.Time, demands []Demand) (Decision, error)

	// Refund gives back what an earlier successful Take of the same demands
	// took, as far as the buckets' capacity allows. A request that was granted
	// tokens and then not sent refunds them.
	Refund(ctx context.Context, now time.Time, demands []Demand) error

	// Clamp lowers the demand's bucket to at most tokens; it never raises it.
	// It keeps the bucket from believing it has more than the provider says.
	Clamp(ctx context.Context, now time.Time, d Demand, tokens float64) error
}

// A ContextStore is a Store that says whether its calls return promptly
// once their context ends. A Transport bounds each call to a shared store
// by the store timeout (WithStoreTimeout). A store that honours its context
// is bounded by the context's deadline alone, and called on the request's
// own goroutine. Any other is called in a goroutine of its own, which is
// abandoned at the deadline: a client that ignores its context (go-redis
// without ContextTimeoutEnabled) must not hold a request past it.
type ContextStore interface {
	Store
	HonoursContext() bool
}

// A Demand is what one request asks of one bucket. The bucket's shape (Rate,
// Burst, Window) travels with each demand, so a store needs no configuration
// of its own and a limit learned from a provider takes effect at once.
type Demand struct {
	Scope string // the scope's name
	Key   string // which bucket within the scope; "" for the scope's only bucket

	Rate  float64 // units added a second; ignored when Window is set
	Burst float64 // the bucket's capacity, and the level a new bucket starts at
	// Window, when positive, makes the bucket a fixed window instead of a
	// refilling one: Burst units per Window, the window starting at the first
	// take after the previous one ended. Spend budgets use it.
	Window time.Duration

	Cost float64 // units to take; zero or less always succeeds and takes nothing
	// Floor is what the take must leave in the bucket: the part of the burst
	// that other workloads have reserved.
	Floor float64
}

// A Decision is a store's answer to Take.
type Decision struct {
	OK bool // every demand was granted
	// When OK is false, Blocked is the index of the demand that would wait
	// longest, and Wait how long until it could be granted if nobody else
	// takes in the meantime: Never if it cannot be granted at all (its cost
	// and floor exceed the bucket's capacity).
	Blocked int
	Wait    time.Duration
}

// Never is the wait of a demand that no amount of waiting will grant.
const Never = time.Duration(math.MaxInt64)

// bucketLevel is the arithmetic every store agrees on; the Redis script and
// the Postgres statement carry the same rules. Times are Durations since an
// epoch the store chose: a time.Time holds a pointer, and writing one on
// every take would cost the garbage collector's write barriers.
type bucketLevel struct {
	tokens float64
	stamp  time.Duration // last refill, or the start of the current window
}

// advance brings the level up to now for a bucket of d's shape.
func (b *bucketLevel) advance(d *Demand, now time.Duration) {
	if d.Window > 0 {
		if now-b.stamp >= d.Window {
			b.tokens, b.stamp = d.Burst, now
		}
	} else if elapsed := now - b.stamp; elapsed > 0 {
		b.tokens += elapsed.Seconds() * d.Rate
		b.stamp = now
	}
	// A burst lowered since the last take (a learned limit) applies at once.
	b.tokens = min(b.tokens, d.Burst)
}

// wait returns how long until d can be granted from this level: 0 if now.
func (b *bucketLevel) wait(d *Demand, now time.Duration) time.Duration {
	if d.Cost <= 0 {
		return 0
	}
	need := d.Cost + d.Floor
	if b.tokens >= need {
		return 0
	}
	if need > d.Burst {
		return Never
	}
	if d.Window > 0 {
		return d.Window - (now - b.stamp)
	}
	if d.Rate <= 0 {
		return Never
	}
	ns := math.Ceil((need - b.tokens) / d.Rate * float64(time.Second))
	if ns >= float64(Never) {
		return Never // a wait of centuries would overflow a Duration
	}
	return time.Duration(ns)
}

// full reports whether the bucket is back where a new one would start, so
// forgetting it changes nothing.
func (b *bucketLevel) full(rate, burst float64, window time.Duration, now time.Duration) bool {
	if window > 0 {
		return now-b.stamp >= window
	}
	return b.tokens+(now-b.stamp).Seconds()*rate >= burst
}
