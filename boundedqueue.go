package pacer

import (
	"container/heap"
	"errors"
	"fmt"
	"sync"

	"github.com/pacer-go/pacer/store"
)

// ReasonQueueFull is the Reason of a *ThrottledError for a call refused, or
// shed, because its workload's queue held Workload.MaxWaiting calls.
const ReasonQueueFull ThrottleReason = "queue"

var (
	errQueueFull = errors.New("the queue is full")
	errShed      = errors.New("a call of higher priority took this call's place")
)

// boundedQueue counts a workload's waiting calls, across every scope, and
// keeps them in a heap by what is shed first: lowest rank, then oldest.
// Every waiting call is in the heap, whatever the bound is or was when it
// joined, so that a live change of the bound (set) has nothing to reconcile:
// the heap is the calls waiting, and a waiter's shedAt is its index in it
// from join to leave. A bound of zero refuses and sheds nothing.
type boundedQueue struct {
	max  int
	shed bool // Workload.ShedLowest: a full queue sheds, else refuses

	mu      sync.Mutex
	waiters shedHeap
}

// join counts w among the workload's waiters, or refuses it, or sheds
// another to make room for it.
func (q *boundedQueue) join(w *waiter) error {
	w.shedAt = -1
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.max == 0 || len(q.waiters) < q.max {
		heap.Push(&q.waiters, w)
		return nil
	}
	if !q.shed {
		return errQueueFull
	}
	victim := q.waiters[0]
	if shedFirst(w, victim) {
		return errQueueFull // the newcomer is the lowest of all
	}
	heap.Pop(&q.waiters)
	victim.shed.Store(true)
	victim.signal()
	heap.Push(&q.waiters, w)
	return nil
}

// leave takes w out of the count, if it is still in it: a waiter shed is
// out of it already.
func (q *boundedQueue) leave(w *waiter) {
	q.mu.Lock()
	if w.shedAt >= 0 {
		heap.Remove(&q.waiters, w.shedAt)
	}
	q.mu.Unlock()
}

// set changes the bound and whether a full queue sheds; calls already
// waiting stay, even beyond a lower bound, and count against the new one:
// only newcomers are refused or make room.
func (q *boundedQueue) set(n int, shed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.max, q.shed = n, shed
}

// len returns the calls counted as waiting.
func (q *boundedQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiters)
}

func (q *boundedQueue) bound() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.max
}

// shedFirst reports whether a is shed before b: lower rank, then older.
func shedFirst(a, b *waiter) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	return a.seq < b.seq
}

type shedHeap []*waiter

func (h shedHeap) Len() int           { return len(h) }
func (h shedHeap) Less(i, j int) bool { return shedFirst(h[i], h[j]) }
func (h shedHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].shedAt, h[j].shedAt = i, j
}
func (h *shedHeap) Push(x any) {
	w := x.(*waiter)
	w.shedAt = len(*h)
	*h = append(*h, w)
}
func (h *shedHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	w.shedAt = -1
	return w
}

// queueFull returns the error of a call its workload's bounded queue
// refused or shed, naming the queue.
func (b blocked) queueFull(w *workloadState, cause error) error {
	e := &ThrottledError{Scope: b.bucket.scope.Name, Reason: ReasonQueueFull,
		Err: fmt.Errorf("workload %q's queue holds at most %d waiting calls (Workload.MaxWaiting): %w", w.name, w.waiting.bound(), cause)}
	if b.wait != store.Never {
		e.RetryAfter = b.wait
	}
	return e
}
