package store

import (
	"errors"
	"strconv"
	"time"
)

// A Policy says how a Transport uses a shared store (pacer.WithStore):
// what it does while the store does not answer, how long it waits for an
// answer, whether it leases tokens, and whether the fleet shares the
// limits it sets and learns. The zero Policy is the default: FallBackLocal
// with one instance, a one-second timeout, no lease and no limit sync.
// A field that is out of range (a negative Timeout, say) makes the
// Transport's Err name it; nothing is corrected in silence.
//
// The in-memory store cannot fail and has no round trip to save: on it,
// OnFailure, Instances, Timeout and Lease have no effect.
type Policy struct {
	// OnFailure is what the Transport does while the store does not
	// answer: FallBackLocal (the zero value), FailOpen or FailClosed.
	//
	// A call to the store fails when it returns an error or takes longer
	// than Timeout. An error about the call's own values (ErrInvalidDemand)
	// is not a failure: the request that made the call gets it, and the
	// store serves every other request as before. A request whose own
	// context ends first gets its context's error, whatever the policy;
	// when it gives up and the store has answered nobody since its call
	// began, the store is checked once in the background, bounded by
	// Timeout alone, so the policy applies within about Timeout of the
	// store going silent however short the callers' deadlines are.
	//
	// After a failure the store is left alone for a short while, then
	// asked again by one request at a time, the wait growing while it stays
	// down; its first answer ends the failure. Writes nobody waits for (a
	// bucket lowered to what the provider reported, a refund) go to the
	// store from one background goroutine per Transport; at most 4096
	// buckets' writes wait, the rest dropped with an
	// observe.EventStoreFailure, and while the store is known to be down
	// they go to the local fallback at once. Tokens already leased (Lease)
	// are spent while the store is down, whatever the policy.
	//
	// A workload's spend budget (pacer.Budget) is a hard cap, so while the
	// store is down it fails closed whatever OnFailure says, unless the
	// budget sets FollowStoreFailure; then FailClosed refuses, FailOpen
	// spends without the store, and FallBackLocal lets this process spend
	// 1/Instances of the budget's Limit in the period, counting what it
	// spent before. Whatever the policy, a process never spends more than a
	// budget's Limit in one period by its own count, which a store that
	// loses its data (a Redis restarted without persistence) cannot undo;
	// what the other processes spent is lost with such a store. Run Redis
	// with persistence (AOF) or use Postgres where a fleet's budget must
	// hold across a restart.
	OnFailure FailureMode

	// Instances is, for FallBackLocal, how many processes share the store:
	// while it is down each paces at 1/Instances of every limit, its rate,
	// burst and floors, so that together they stay near the limit. Costs
	// are unchanged, so a request that costs more than the shrunk burst
	// fails at once (pacer.ErrExceedsCapacity) until the store is back.
	// 0 means 1: each instance alone at the full limit, which a fleet of N
	// exceeds N times over; set your fleet's size. It must not be set with
	// FailOpen or FailClosed, which share nothing.
	Instances int

	// Timeout bounds each call to the store; a call that takes longer is a
	// failure, handled as OnFailure says. 0 means one second: a store
	// answers in a round trip, and a second means it is not answering.
	Timeout time.Duration

	// Lease, when positive, makes the Transport take tokens from the store
	// Lease units beyond what a request costs, in the same round trip, and
	// spend them on its next requests without asking the store: a busy
	// instance makes about one round trip per Lease+1 requests. The price is
	// precision: in any window the fleet sends at most Lease units per
	// instance more than the bucket allows, and an instance that goes idle
	// holding a lease wastes it. Choose it well below the burst; a lease
	// never takes more than the burst allows, and leased tokens are spent
	// within a second or dropped, so a lease never lets a stale limit live
	// on. Leases apply to refilling buckets, not to spend budgets. 0 means
	// no lease.
	Lease int

	// AdaptiveLease makes the lease follow demand, with Lease as its
	// largest size: each bucket's lease starts at 1, doubles when it is
	// spent before it expires, and halves when it expires unspent. It
	// needs a positive Lease.
	AdaptiveLease bool

	// LimitSync, when positive, makes pacer.Transport.SetLimit a change for
	// the whole fleet: SetLimit publishes the limit in the store, which
	// must be a LimitStore, and every Transport sharing the store with
	// LimitSync reads the published limits at most LimitSync apart, on the
	// path of its first call after the interval (one round trip, bounded
	// by Timeout), and applies the newer ones as SetLimit would. A store
	// that fails to publish makes SetLimit fail; one that fails to be read
	// is reported (observe.EventStoreFailure) and read again at the next
	// interval. Limits given to pacer.New are each instance's own until a
	// SetLimit publishes one.
	//
	// The same sync carries what a refusal teaches: a cut of a scope's
	// pace (a 429 that teaches nothing else) is published on the refused
	// call's path, and every other instance applies the same cut and the
	// same climb back at its next read, once, and never over a deeper cut
	// it took since (an observe.EventPaceChanged whose Origin is
	// observe.OriginStore). Only a scope's shared bucket is published; a
	// keyed bucket's cut stays its instance's. It carries a pool's
	// members' states too (pacer.WithPool): a member taken out, parked,
	// removed or put back on one instance is so on every one. A new
	// instance's first calls wait for its first read, no longer than
	// Timeout. 0 means no sync: each instance learns a refusal on its own.
	LimitSync time.Duration
}

// ErrUnavailable is the cause of the error a request gets when the shared
// store did not answer and the Transport's Policy is FailClosed, and of
// what Transport.Flush returns for writes the store did not take.
var ErrUnavailable = errors.New("pacer: the shared store is unavailable")

// A FailureMode is what a Transport does while its shared store does not
// answer (Policy.OnFailure).
type FailureMode int

const (
	// FallBackLocal, the zero value, paces requests with a bucket in this
	// process while the store is down, at 1/Policy.Instances of every
	// limit.
	FallBackLocal FailureMode = iota
	// FailOpen sends requests without shared pacing while the store is
	// down. Each instance still caps concurrency and obeys what the
	// provider says (Retry-After), but nothing stops the fleet from
	// sending faster than the limit.
	FailOpen
	// FailClosed refuses requests while the store is down, with an error
	// matching ErrUnavailable: nothing is sent that the shared bucket did
	// not allow.
	FailClosed
)

// String returns the mode's name, as Go spells it: "FallBackLocal",
// "FailOpen" or "FailClosed".
func (m FailureMode) String() string {
	switch m {
	case FallBackLocal:
		return "FallBackLocal"
	case FailOpen:
		return "FailOpen"
	case FailClosed:
		return "FailClosed"
	}
	return "FailureMode(" + strconv.Itoa(int(m)) + ")"
}
