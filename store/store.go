// Package store is what a Store implementer needs: the Store interface a
// pacer Transport takes its tokens from (pacer.WithStore), the Demand and
// Decision it exchanges, the optional interfaces a store may add, and
// Memory, the in-memory store every Transport uses unless given another.
// A caller of pacer who keeps the default store never imports it.
//
// # The contract
//
// A store keeps token buckets, one per (Demand.Scope, Demand.Key), whose
// shape (Rate, Burst, Window) travels with every demand, so a store needs no
// configuration and a limit learned from a provider applies at once:
//
//   - Take is atomic across the demands of one call: it grants every demand
//     or none, and a take that would leave a bucket below the demand's Floor
//     is refused. A refused Take says which demand waits longest (Blocked),
//     and for how long (Wait): Never if no wait will grant it, and at most
//     LongestWait otherwise. A remote store decides each call in one round
//     trip.
//   - Refund gives back what an earlier granted Take of the same demands
//     took, up to each bucket's Burst.
//   - Clamp lowers a bucket to at most a level and never raises it: a
//     provider that says fewer remain than the bucket believes wins.
//   - Adjust (the optional Adjuster) settles a call's cost after the fact,
//     whatever the bucket holds: a bucket may go below zero, an overdraft
//     later takes wait out.
//   - Level (the optional LevelReader) reads what a bucket holds, refill
//     applied, and changes nothing: a bucket not held reads as full.
//
// A demand's Group places its bucket and does not name it: the buckets of
// demands with the same non-empty Group are kept together where a store
// shards, so one Take over them is one atomic step, and a store that does
// not shard ignores it (the same Scope and Key are the same bucket whatever
// the Group). A store that shards may key a bucket by its Group, so a
// caller gives each bucket the same Group every time, as a Transport does.
//
// A store that answers but refuses a value it cannot hold returns an error
// matching ErrInvalidDemand; any other error is a failure of the store,
// handled as Policy.OnFailure says. storetest.Run checks a store
// against the whole contract; store/redisstore and store/pgstore pass it.
//
// # What a fleet spends
//
// A store may report, with each granted Take, the running total of units
// taken from the first demand's bucket (Decision.Taken), so that a fleet
// pacing by a provider's remaining count knows what all of it spent
// between two counts, as one process knows its own. The total counts what
// Take and a positive Adjust take. Refund and a negative Adjust give
// tokens back but do not lower it, and Clamp leaves it alone: a total that
// could fall would make the spending between two reports negative, and
// make an answer look overtaken by a later one. A unit given back is then
// read as one the provider gave back, an error as small as the refunds
// are few (a call admitted, then not sent). The total grows only while
// the store holds the bucket: a store that forgets a full bucket (as
// every store here does) forgets its total with it, and the bucket starts
// again at zero, which a Transport, once the fall is clear, takes as the
// start of a new measure. A
// store that keeps no total reports zero, and a fleet behind it cannot
// tell its own calls from a neighbour's. storetest.Run checks the total
// (storetest.WithoutTotal for a store that keeps none).
//
// # What a fleet learns
//
// A store may also keep, beside the buckets, what the fleet learns about
// its scopes (LimitStore, for Policy.LimitSync): each scope's published
// limit, and its pace record — a cut a refusal made, and the climb back
// from it, that one instance publishes so that the others apply it instead
// of being refused in turn. Each is kept under a version from one
// sequence, and a store reads them all in one round trip. A pace record
// is pacer's own, short printable ASCII (CheckPaceRecord): a store keeps
// it as given, and need not understand it. storetest.PaceRecords and
// storetest.CutSync check a LimitStore.
package store

import (
	"context"
	"errors"
	"fmt"
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
// by the store timeout (Policy.Timeout). A store that honours its context
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
	// Group, when not empty, says which buckets belong together: a store
	// that shards its buckets (store/redisstore on a Redis Cluster) keeps
	// the buckets of demands with the same Group on one shard, so that a
	// Take over them is one atomic step, one round trip, rather than a
	// step per shard. A pool gives each member's own buckets the member's
	// name. A store that does not shard ignores it: the bucket is still
	// the one (Scope, Key) names. A store that shards may make the Group
	// part of the bucket's key, so a bucket must be named with the same
	// Group every time: the same (Scope, Key) under two Groups may be two
	// buckets.
	Group string

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

// Validate returns an error matching ErrInvalidDemand if d holds a number no
// store can compute with: a Rate, Burst, Cost or Floor that is NaN or
// infinite. A remote store calls it before it makes a round trip.
func (d *Demand) Validate() error {
	for _, f := range [...]struct {
		name string
		v    float64
	}{{"Rate", d.Rate}, {"Burst", d.Burst}, {"Cost", d.Cost}, {"Floor", d.Floor}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return fmt.Errorf("%w: its %s is %v", ErrInvalidDemand, f.name, f.v)
		}
	}
	return nil
}

// A Decision is a store's answer to Take.
type Decision struct {
	OK bool // every demand was granted
	// When OK is false, Blocked is the index of the demand that would wait
	// longest, and Wait how long until it could be granted if nobody else
	// takes in the meantime: Never if it cannot be granted at all (its cost
	// and floor exceed the bucket's capacity, or the bucket never refills).
	// A wait that is finite but longer than LongestWait (a limit of one per
	// 290 years, a rate too small to divide by) is LongestWait: every store
	// saturates it the same way, and none reports it as Never.
	Blocked int
	Wait    time.Duration
	// Taken, when OK, is the running total of units taken from the bucket
	// of the first demand, this take's included: what the whole fleet
	// sharing the bucket has spent from it. A Transport in a shared store
	// measures what a provider gives back from it (see "What a fleet
	// spends"). Zero says the store keeps no total, or the first demand
	// cost nothing; a granted take of a positive cost from a store that
	// keeps one never reports zero.
	Taken float64
}

// Never is the wait of a demand that no amount of waiting will grant.
const Never = time.Duration(math.MaxInt64)

// LongestWait is the longest wait a store reports for a demand that waiting
// will grant: 2^62 ns, about 146 years. Longer waits saturate to it, so that
// no store's arithmetic overflows a Duration (or, in a remote store, its
// reply), and a caller can still tell "very long" from Never. It is a power
// of two so that every store's floating point holds it exactly.
const LongestWait = time.Duration(1 << 62)

// ErrInvalidDemand is matched by the error of a store call that failed
// because of what the call asked, not because the store is unavailable: the
// store answered, and refused a value it cannot hold. A Transport returns
// such an error to the request that made the call, and does not count it
// as a failure of the store (see Policy.OnFailure): one request's bad input
// must not take the store away from every other request.
var ErrInvalidDemand = errors.New("pacer: the store refused the demand")

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
// The common case, enough tokens, is small enough to be inlined.
func (b *bucketLevel) wait(d *Demand, now time.Duration) time.Duration {
	if d.Cost <= 0 || b.tokens >= d.Cost+d.Floor {
		return 0
	}
	return b.waitShort(d, now)
}

// waitShort is wait for a level without the tokens d needs. It is not
// inlined, so that wait, which calls it, stays small enough to be.
//
//go:noinline
func (b *bucketLevel) waitShort(d *Demand, now time.Duration) time.Duration {
	need := d.Cost + d.Floor
	if need > d.Burst {
		return Never
	}
	if d.Rate <= 0 && d.Window <= 0 {
		return Never
	}
	return saturate(d.Window, now-b.stamp, need-b.tokens, d.Rate)
}

// saturate returns the wait of a demand that waiting will grant, at most
// LongestWait: the rest of the window for a window bucket, else the time to
// refill missing units at rate. Every store computes it this way (the Redis
// script in Lua, the Postgres store in Go).
func saturate(window, elapsed time.Duration, missing, rate float64) time.Duration {
	if window > 0 {
		return min(window-elapsed, LongestWait)
	}
	// A rate so small that the division overflows gives +Inf, which
	// saturates like any other wait too long to hold.
	ns := math.Ceil(missing / rate * float64(time.Second))
	if ns >= float64(LongestWait) {
		return LongestWait
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

// An Adjuster is a Store that can settle a call's cost after the fact: a
// call reserves an estimate with Take, and once the provider says what it
// billed, the difference is charged or given back. Every store in this
// repository is one; a Transport whose store is not gives back what a call
// overestimated (with Refund), and charges nothing for what it
// underestimated.
type Adjuster interface {
	// Adjust takes each demand's Cost from its bucket whatever the bucket
	// holds, and whatever its Floor: the call was made, so what it cost is
	// owed, and a bucket may fall below zero, an overdraft that later takes
	// wait out. A negative Cost gives -Cost back, up to the burst. A zero
	// Cost changes nothing.
	Adjust(ctx context.Context, now time.Time, demands []Demand) error
}

// A LevelReader is a Store that can say what a bucket holds without
// changing it: a budget's level read by every process of a fleet is what
// the fleet has left of it (store.Decision.Taken, a running total that
// never falls, overstates a budget settled below its reservations). Every
// store in this repository is one; a Transport whose store is not says so
// where it would report the fleet's figure, and reports its own.
type LevelReader interface {
	// Level returns what d's bucket holds at now, its refill or window
	// applied as a Take at now would apply it (d's Rate, Burst and Window;
	// its Cost and Floor are ignored), and changes nothing. A bucket the
	// store does not hold reads as full, d.Burst, as a new bucket starts;
	// one overdrawn by Adjust reads below zero. A remote store answers in
	// one round trip, on its own clock as its Take does, and refuses a
	// demand it cannot compute with by an error matching
	// ErrInvalidDemand. It is safe for concurrent use with every other
	// call.
	Level(ctx context.Context, now time.Time, d Demand) (float64, error)
}

// adjust applies a signed settlement to the level: see Adjuster.
func (b *bucketLevel) adjust(d *Demand) {
	b.tokens = min(b.tokens-d.Cost, d.Burst)
}
