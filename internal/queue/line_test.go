package queue

import (
	"math/bits"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestQueueCostsLogN queues 100,000 waiters, across two workloads and in
// arrival order with a few moved calls among them (which take their place
// by arrival, not at the back), and checks the shape that bounds the cost
// of every operation: queueing walks one path of a line, leaving one path
// and the merge of two spines, so a line's height bounds both. It counts
// what the queue does, not the time it takes.
func TestQueueCostsLogN(t *testing.T) {
	const n = 100_000
	const interactive, reserve = 1, 0.3 // the second workload, served first
	var q Queue
	ws := make([]*Waiter, n)
	var want [2]float64 // the cost queued so far in each line
	for i := range ws {
		w := &Waiter{Seq: uint64(i + 1), Cost: float64(1 + i%3), wake: make(chan struct{}, 1)}
		if i%10 == 0 {
			w.Workload, w.Priority = interactive, reserve
		}
		ws[i] = w
		ahead := q.Insert(w, 2, nil)
		if w.Workload == 1 && ahead != want[1] || w.Workload == 0 && ahead != want[0]+want[1] {
			t.Fatalf("waiter %d queued behind %v", i, ahead)
		}
		want[w.Workload] += w.Cost
	}
	// A call that moves from another scope keeps its place by arrival.
	moved := ws[n/2+1] // of the default workload, behind every interactive call
	q.Remove(moved, nil)
	if ahead, inLine := q.Insert(moved, 2, nil), want[0]+want[1]-costAfter(ws, moved)-moved.Cost; ahead != inLine {
		t.Errorf("a moved call queued behind %v, want %v", ahead, inLine)
	}
	bound := 4 * bits.Len(n) // a random treap's height is about 4.3 ln n
	for v, l := range q.lines {
		if h := height(l.root); h > bound {
			t.Errorf("workload %d: a line of %d has height %d, want at most %d", v, l.n, h, bound)
		}
	}
	if q.Head(nil) != ws[0] {
		t.Error("the interactive call that came first is not the head")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, i := range rng.Perm(n)[:n/2] {
		q.Remove(ws[i], nil)
	}
	for v, l := range q.lines {
		if h := height(l.root); h > bound {
			t.Errorf("workload %d: after cancellations a line of %d has height %d, want at most %d", v, l.n, h, bound)
		}
	}
	for _, w := range ws {
		q.Remove(w, nil) // leaving twice is harmless
	}
	if q.Len() != 0 || q.Head(nil) != nil {
		t.Errorf("%d waiting after every waiter left", q.Len())
	}
}

// An owner of unused reserved slots is served first, whatever the
// priorities; without one, the larger priority, then arrival.
func TestQueueHeadOwnsFirst(t *testing.T) {
	var q Queue
	low := NewWaiter(0, 0, 1, 0, zeroTime)
	high := NewWaiter(1, 0.5, 2, 0, zeroTime)
	q.Insert(low, 2, nil)
	q.Insert(high, 2, nil)
	if q.Head(nil) != high {
		t.Error("without owners the head is not the larger priority")
	}
	owns0 := func(v int) bool { return v == 0 }
	if q.Head(owns0) != low {
		t.Error("the owner of unused reserved slots is not the head")
	}
	if !q.ServesBefore(1, 0.5, nil) || q.ServesBefore(1, 0.9, nil) {
		t.Error("ServesBefore does not compare the head's priority")
	}
	if next := q.Remove(high, nil); next != low {
		t.Errorf("removing the head returned %p to wake, want the next head %p", next, low)
	}
	if !q.Waiting(0) || q.Waiting(1) || q.Waiting(7) {
		t.Error("Waiting does not say which lines hold waiters")
	}
}

// costAfter returns the cost of the waiters of w's workload that arrived
// after w.
func costAfter(ws []*Waiter, w *Waiter) (c float64) {
	for _, o := range ws {
		if o.Workload == w.Workload && o.Seq > w.Seq {
			c += o.Cost
		}
	}
	return c
}

func height(t *Waiter) int {
	if t == nil {
		return 0
	}
	return 1 + max(height(t.left), height(t.right))
}

// BenchmarkQueue measures one call queueing behind n others, and leaving:
// the cost every waiting call pays twice.
func BenchmarkQueue(b *testing.B) {
	for _, n := range []int{100, 10_000, 100_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			var q Queue
			for i := range n {
				q.Insert(&Waiter{Seq: uint64(i + 1), Cost: 1, wake: make(chan struct{}, 1)}, 1, nil)
			}
			seq := uint64(n)
			w := &Waiter{Cost: 1, wake: make(chan struct{}, 1)}
			for b.Loop() {
				seq++
				w.Seq = seq
				q.Insert(w, 1, nil)
				q.Remove(w, nil)
			}
		})
	}
}
