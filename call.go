package pacer

// A call is pooled, and reused as it was left: this file holds the call's
// state and what keeps reusing it cheap — no allocation for a few charges,
// and no write the garbage collector must watch when a field is unchanged.

import (
	"context"
	"time"

	"github.com/pacer-go/pacer/internal/queue"
	"github.com/pacer-go/pacer/store"
)

// A call is one request on its way through the Transport: the scopes it is
// charged to and what it holds of them. Calls are pooled; their buffers
// keep the common case of a few charges free of allocations.
type call struct {
	t        *Transport
	workload *workloadState

	charges []charge       // one per distinct bucket
	demands []store.Demand // what Take asks of the store
	owners  []int          // owners[i] is the charge that demands[i] serves

	waiter      *queue.Waiter   // while the call waits in a queue
	budget      [1]store.Demand // the budget demand with this call's cost; Cost 0 if none
	budgetSpent bool
	metered     callMeter // meter.go
	needsSlots  bool      // some scope charged caps concurrency
	holdsSlots  bool
	prepaid     bool // a reservation took the call's tokens already (permit.go)
	// cancel ends the attempt's own context (retry.Policy.AttemptTimeout).
	cancel context.CancelFunc

	// What the call's context overrides (ContextWithCall).
	failFast bool
	maxWait  time.Duration // 0: none
	priority int           // within the workload's line; larger first
	tenant   string        // the call's tenant, from its context or WithTenant; "" if none
	weight   float64       // the tenant's weight

	// admitted is when the call was admitted (UnixNano): about when it
	// was sent, which a response's counts are read against.
	admitted int64

	routedBuf [4]Charge
	chargeBuf [4]charge
	demandBuf [4]store.Demand
	ownerBuf  [4]int
}

type charge struct {
	bucket     *bucket
	key        string
	cost       float64
	admittedAt int64 // the scope's admitted count when this call was admitted
	spentAt    int64 // the scope's spent units, this call's included, then
	takenAt    int64 // the fleet's, in a store that says (feedback.taken); else 0
	slotEpoch  int64 // when the call took its slot (slots.Epoch)
	// heldWith is how many of the scope's slots were taken, this call's
	// not counted, when it took its own: a refusal says the server holds
	// no more of the scope's calls than that (cutSlots).
	heldWith int32
}

// newPooledCall returns a call for the Transport's pool, its slices on its
// own buffers.
func newPooledCall(t *Transport) any {
	c := &call{t: t}
	c.charges, c.demands, c.owners = c.chargeBuf[:0], c.demandBuf[:0], c.ownerBuf[:0]
	return c
}

// extend lengthens *s by one element and returns it, as the element was left
// by the pooled call's last use when the buffer has room: the caller sets
// only what changed, sparing the garbage collector's write barriers.
func extend[T any](s *[]T) *T {
	n := len(*s)
	if n == cap(*s) {
		*s = append(*s, *new(T))
	} else {
		*s = (*s)[:n+1]
	}
	return &(*s)[n]
}

// setNames sets d's scope and key, leaving each as it is when it is the
// same: a pooled call mostly paces the bucket it paced last time, and
// leaving its names spares the garbage collector's write barriers.
func setNames(d *store.Demand, scope, key string) {
	if d.Scope != scope {
		d.Scope = scope
	}
	if d.Key != key {
		d.Key = key
	}
}

// holdsResources reports whether finishing the call releases anything.
func (c *call) holdsResources() bool {
	if c.holdsSlots {
		return true
	}
	for _, ch := range c.charges {
		if ch.bucket.key != "" {
			return true
		}
	}
	return false
}

// finish releases everything the call holds and returns it to the pool. A
// metered call not settled by then — its body was not one pacer reads, it
// had none, or the base RoundTripper failed after sending it — settles at
// its estimate here: every call settles exactly once (settle.go).
func (c *call) finish() {
	if c.metered.on {
		c.settleAtEstimate()
	}
	for i := range c.charges {
		ch := &c.charges[i] // not a copy: a charge is eight words
		if c.holdsSlots {
			ch.bucket.releaseSlot(c.workload.index, ch.slotEpoch, nil)
		}
		ch.bucket.release()
	}
	// The call keeps its workload and the buckets and names of its
	// last charges until it is used again: a few pointers per pooled call,
	// into what the Transport holds anyway. Clearing them, and pointing the
	// slices back at the buffers on the next use, would cost every call the
	// garbage collector's write barriers to spare that little memory.
	c.charges, c.demands, c.owners = c.charges[:0], c.demands[:0], c.owners[:0]
	c.budget[0].Cost = 0
	c.metered.on = false
	c.budgetSpent, c.needsSlots, c.holdsSlots, c.prepaid = false, false, false, false
	if c.cancel != nil {
		c.cancel()
		c.cancel = nil
	}
	c.t.calls.Put(c)
}
