package storeguard

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/pacer-go/pacer/store"
)

// MaxPendingWrites bounds the writes waiting for a shared store: one per
// bucket and kind. While the store hangs, clamps pile up no further than
// this; a newer clamp of a bucket replaces the pending one.
const MaxPendingWrites = 4096

// A WriteKind is what a write in the background does to its bucket. The
// counts Writes returns are indexed by it.
type WriteKind uint8

const (
	ClampWrite  WriteKind = iota // a bucket lowered to what the provider reported
	RefundWrite                  // tokens given back by a call not sent
	AdjustWrite                  // a call's settlement (store.Adjuster): a signed Cost
)

func (k WriteKind) String() string {
	switch k {
	case ClampWrite:
		return "clamp"
	case AdjustWrite:
		return "adjustment"
	}
	return "refund"
}

type writeKey struct {
	kind       WriteKind
	scope, key string
}

// A pendingWrite is a clamp, a refund or an adjustment of one bucket,
// waiting to be sent.
type pendingWrite struct {
	kind   WriteKind
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
	// idle, when someone waits for the queue (Drained), is closed once it
	// is empty and no write is being sent.
	idle chan struct{}
	// lost counts the writes that did not reach the store since the last
	// report — refused, unanswered, dropped from a full queue, or not sent
	// because the store was down — by kind; lastErr is the latest reason.
	lost    [3]int
	lastErr error
	// sending is the write being sent, by kind: one 1, or none.
	sending [3]int
}

// add queues a write. It reports whether the caller must start a goroutine
// to send the queue, and whether the write was dropped because the queue is
// full: only the first drop until the queue empties is reported.
func (q *writeQueue) add(kind WriteKind, now time.Time, d store.Demand, tokens float64) (start, dropped bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	k := writeKey{kind, d.Scope, d.Key}
	if p := q.pending[k]; p != nil {
		if kind != ClampWrite {
			d.Cost += p.demand.Cost
		}
		p.now, p.demand, p.tokens = now, d, tokens
		return false, false
	}
	if len(q.pending) >= MaxPendingWrites {
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
var errWritesDropped = fmt.Errorf("%w: too many writes were waiting for it", ErrUnavailable)

// failed records a write that did not reach the store, and why.
func (q *writeQueue) failed(kind WriteKind, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.lost[kind]++
	q.lastErr = err
	q.sending[kind] = 0 // counted as lost, not as still being sent
}

// Drained returns a channel closed once no write is waiting for the store
// or being sent: closed already if it is so now.
func (g *Guard) Drained() <-chan struct{} {
	q := &g.writes
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

// Writes returns the writes waiting or being sent, by WriteKind, and those
// lost since it was last called, with the latest reason one was lost; it
// forgets the losses.
func (g *Guard) Writes() (pending, lost [3]int, lastErr error) {
	q := &g.writes
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

// enqueue queues a write for the store, and starts the goroutine that sends
// the queue if none is running.
func (g *Guard) enqueue(kind WriteKind, now time.Time, d store.Demand, tokens float64) {
	start, dropped := g.writes.add(kind, now, d, tokens)
	if dropped {
		g.warn(d.Scope, fmt.Errorf("%w: %d buckets' writes are waiting for it; dropping more (a %v first)",
			ErrUnavailable, MaxPendingWrites, kind))
	}
	if start {
		go g.sendWrites()
	}
}

// sendWrites sends queued writes until there are none.
func (g *Guard) sendWrites() {
	for {
		w, ok := g.writes.next()
		if !ok {
			return
		}
		g.write(w)
	}
}

// write sends one write to the store; one it does not answer goes to the
// local fallback.
func (g *Guard) write(w pendingWrite) {
	d := w.demand
	failed, err := g.call(context.Background(), w.now, func(ctx context.Context) error {
		switch w.kind {
		case ClampWrite:
			return g.remote.Clamp(ctx, w.now, d, w.tokens)
		case AdjustWrite:
			return AdjustOrRefund(ctx, g.remote, w.now, []store.Demand{d})
		}
		return g.remote.Refund(ctx, w.now, []store.Demand{d})
	})
	switch {
	case err != nil:
		g.writes.failed(w.kind, err) // for Flush
		g.warn(d.Scope, err)
	case failed:
		g.writes.failed(w.kind, g.Unavailable())
		g.cover(d.Scope)
		switch {
		case w.kind == ClampWrite:
			g.clampLocal(w.now, d, w.tokens)
		case g.mode != store.FallBackLocal:
		case w.kind == AdjustWrite:
			g.local.Adjust(context.Background(), w.now, g.share([]store.Demand{d}))
		default:
			g.local.Refund(context.Background(), w.now, g.share([]store.Demand{d}))
		}
	}
}
