package queue

import (
	"container/heap"
	"errors"
	"sync"
)

// The errors of a call a Bounded refused (Join) or shed (Waiter.Shed).
var (
	ErrFull = errors.New("the queue is full")
	ErrShed = errors.New("a call of higher priority took this call's place")
)

// Bounded counts a workload's waiting calls, across every scope, and keeps
// them in a heap by what is shed first: lowest Rank, then oldest Seq. Every
// waiting call is in the heap, whatever the bound is or was when it
// joined, so that a live change of the bound (Set) has nothing to
// reconcile: the heap is the calls waiting, from Join to Leave. A bound of
// zero, the zero value's, refuses and sheds nothing. It is safe for
// concurrent use.
type Bounded struct {
	mu      sync.Mutex
	max     int
	shed    bool // a full queue sheds its lowest, else refuses the newcomer
	waiters shedHeap
}

// Join counts w among the workload's waiters, or refuses it (ErrFull), or
// sheds another to make room for it: the one shed is signalled, and its
// Shed reports true from then on.
func (q *Bounded) Join(w *Waiter) error {
	w.shedAt = -1
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.max == 0 || len(q.waiters) < q.max {
		heap.Push(&q.waiters, w)
		return nil
	}
	if !q.shed {
		return ErrFull
	}
	victim := q.waiters[0]
	if shedFirst(w, victim) {
		return ErrFull // the newcomer is the lowest of all
	}
	heap.Pop(&q.waiters)
	victim.shed.Store(true)
	victim.Signal()
	heap.Push(&q.waiters, w)
	return nil
}

// Leave takes w out of the count, if it is still in it: a waiter shed is
// out of it already.
func (q *Bounded) Leave(w *Waiter) {
	q.mu.Lock()
	if w.shedAt >= 0 {
		heap.Remove(&q.waiters, w.shedAt)
	}
	q.mu.Unlock()
}

// Set changes the bound (0: none) and whether a full queue sheds; calls
// already waiting stay, even beyond a lower bound, and count against the
// new one: only newcomers are refused or make room.
func (q *Bounded) Set(n int, shed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.max, q.shed = n, shed
}

// Len returns the calls counted as waiting.
func (q *Bounded) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiters)
}

// Bound returns the bound Set last; 0 for none.
func (q *Bounded) Bound() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.max
}

// shedFirst reports whether a is shed before b: lower rank, then older.
func shedFirst(a, b *Waiter) bool {
	if a.Rank != b.Rank {
		return a.Rank < b.Rank
	}
	return a.Seq < b.Seq
}

type shedHeap []*Waiter

func (h shedHeap) Len() int           { return len(h) }
func (h shedHeap) Less(i, j int) bool { return shedFirst(h[i], h[j]) }
func (h shedHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].shedAt, h[j].shedAt = i, j
}
func (h *shedHeap) Push(x any) {
	w := x.(*Waiter)
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
