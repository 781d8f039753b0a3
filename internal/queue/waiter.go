package queue

import (
	"sync/atomic"
	"time"
)

// A Waiter is a call waiting on a scope. The caller sets its exported
// fields before it queues (Insert), and changes Cost and Reason only while
// it is in no Queue, or, for Reason, under the lock of the Queue it is in.
type Waiter struct {
	Workload int     // the workload's index
	Priority float64 // the workload's Reserve: larger is served first
	Seq      uint64  // arrival order, kept when the call moves between scopes
	Rank     int     // the call's priority within its workload
	Tag      Tag     // its virtual finish among its workload's tenants (Fair); zero without tenants
	Cost     float64 // what the call takes from the scope it waits on
	// For stats: when the call began to wait, and what holds it back, in
	// the caller's words.
	Since  time.Time
	Reason string

	wake   chan struct{}
	shed   atomic.Bool // its workload's Bounded dropped it
	shedAt int         // its index in that Bounded's heap; -1 when not in it

	// The waiter's node in its workload's line, while queued.
	queued      bool
	left, right *Waiter
	heap        uint64  // the treap's priority, a hash of Seq
	sum         float64 // the cost of the subtree
}

// NewWaiter returns a waiter of the workload, ready to sleep on Wake.
func NewWaiter(workload int, priority float64, seq uint64, rank int, since time.Time) *Waiter {
	return &Waiter{Workload: workload, Priority: priority, Seq: seq, Rank: rank, Since: since, wake: make(chan struct{}, 1), shedAt: -1}
}

// Signal wakes the waiter if it sleeps; a signal sent while it is awake is
// kept for its next sleep, so none is lost. A nil waiter ignores it.
func (w *Waiter) Signal() {
	if w == nil {
		return
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Wake is what the waiter sleeps on: it receives once per Signal, the
// signals sent while it was awake counting as one.
func (w *Waiter) Wake() <-chan struct{} { return w.wake }

// Shed reports whether its workload's Bounded dropped it to make room for
// a call of higher rank.
func (w *Waiter) Shed() bool { return w.shed.Load() }
