package pacer

import (
	"fmt"
	"sync"
	"time"

	"github.com/pacer-go/pacer/store"
)

// maxPendingWrites bounds the writes waiting for a shared store: one per
// bucket and kind. While the store hangs, clamps pile up no further than
// this; a newer clamp of a bucket replaces the pending one.
const maxPendingWrites = 4096

// A writeKind is what a write in the background does to its bucket.
type writeKind uint8

const (
	clampWrite writeKind = iota
	refundWrite
	adjustWrite // a call's settlement (Adjuster): a signed Cost
)

func (k writeKind) String() string {
	switch k {
	case clampWrite:
		return "clamp"
	case adjustWrite:
		return "adjustment"
	}
	return "refund"
}

type writeKey struct {
	kind       writeKind
	scope, key string
}

// A pendingWrite is a clamp, a refund or an adjustment of one bucket,
// waiting to be sent.
type pendingWrite struct {
	kind   writeKind
	now    time.Time
	demand store.Demand // the bucket's shape as last seen; a refund's or an adjustment's Cost is the sum
	tokens float64      // a clamp's level
}

// writeQueue holds the writes a guard sends to its store in the background:
// what nobody waits for, so that a stalled store delays no request. It
// coalesces by bucket, so that it is bounded by the number of buckets, not
// of requests: the latest clamp of a bucket wins (it carries the provider's
// latest word), and refunds of a bucket add up. Writes go out in the order
// their buckets were first queued. Adjustments of a bucket add up too,
// signed: a settlement that charges and one that gives back cancel out.
//
// One goroutine sends them, started when the first write arrives and gone
// when the queue is empty: a Transport that is idle holds none, and none
// outlives the work it was started for.
type writeQueue struct {
	mu      sync.Mutex
	pending map[writeKey]*pendingWrite
	order   []writeKey
	running bool // a goroutine is sending
	full    bool // a write was dropped since the queue was last empty
	// idle, when someone waits for the queue (Flush), is closed once it is
	// empty and no write is being sent.
	idle chan struct{}
	// lost counts the writes that did not reach the store since the last
	// Flush — refused, unanswered, dropped from a full queue, or not sent
	// because the store was down — by kind; lastErr is the latest reason.
	lost    [3]int
	lastErr error
	// sending is the write being sent, by kind: one 1, or none.
	sending [3]int
}

// add queues a write. It reports whether the caller must start a goroutine
// to send the queue, and whether the write was dropped because the queue is
// full: only the first drop until the queue empties is reported.
func (q *writeQueue) add(kind writeKind, now time.Time, d store.Demand, tokens float64) (start, dropped bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := writeKey{kind, d.Scope, d.Key}
	if p := q.pending[k]; p != nil {
		if kind != clampWrite {
			d.Cost += p.demand.Cost
		}
		p.now, p.demand, p.tokens = now, d, tokens
		return false, false
	}
	if len(q.pending) >= maxPendingWrites {
		first := !q.full
		q.full = true
		q.lost[kind]++
		q.lastErr = errWritesDropped
		return false, first
	}
	if q.pending == nil {
		q.pending = make(map[writeKey]*pendingWrite)
	}
	q.pending[k] = &pendingWrite{kind: kind, now: now, demand: d, tokens: tokens}
	q.order = append(q.order, k)
	start = !q.running
	q.running = true
	return start, false
}

// next takes the oldest write off the queue. When there is none it reports
// false, and the goroutine that asked must stop: the next add starts
// another.
func (q *writeQueue) next() (pendingWrite, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sending = [3]int{}
	if len(q.order) == 0 {
		q.running, q.full, q.order = false, false, nil
		if q.idle != nil {
			close(q.idle)
			q.idle = nil
		}
		return pendingWrite{}, false
	}
	k := q.order[0]
	q.order = q.order[1:]
	p := q.pending[k]
	delete(q.pending, k)
	q.sending[p.kind] = 1
	return *p, true
}

// len returns the number of writes waiting.
func (q *writeQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}

// errWritesDropped is why a write dropped from a full queue was lost.
var errWritesDropped = fmt.Errorf("%w: too many writes were waiting for it", ErrStoreUnavailable)

// failed records a write that did not reach the store, and why.
func (q *writeQueue) failed(kind writeKind, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.lost[kind]++
	q.lastErr = err
	q.sending[kind] = 0 // counted as lost, not as still being sent
}

// drained returns a channel closed once the queue is empty and no write is
// being sent: at once if it is so now.
func (q *writeQueue) drained() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.running {
		c := make(chan struct{})
		close(c)
		return c
	}
	if q.idle == nil {
		q.idle = make(chan struct{})
	}
	return q.idle
}

// report returns what is waiting or being sent, by kind, and what was lost
// since the last report, and forgets the losses.
func (q *writeQueue) report() (pending, lost [3]int, lastErr error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	pending = q.sending
	for _, p := range q.pending {
		pending[p.kind]++
	}
	lost, lastErr = q.lost, q.lastErr
	q.lost, q.lastErr = [3]int{}, nil
	return pending, lost, lastErr
}
