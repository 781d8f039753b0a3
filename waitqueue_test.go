package pacer

import (
	"math/bits"
	"math/rand/v2"
	"strconv"
	"testing"
)

// queueState returns the shared state of a scope that caps nothing, for
// driving its queue directly.
func queueState() *bucket {
	return New(nil).scopes[DefaultScope].shared
}

// TestQueueCostsLogN queues 100,000 waiters on one scope, across two
// workloads and in arrival order with a few moved calls among them (which
// take their place by arrival, not at the back), and checks the shape that
// bounds the cost of every operation: queueing walks one path of a line,
// leaving one path and the merge of two spines, so a line's height bounds
// both. It counts what the queue does, not the time it takes.
func TestQueueCostsLogN(t *testing.T) {
	const n = 100_000
	tr := New(nil, WithWorkload("interactive", Workload{Reserve: 0.3}))
	s := tr.scopes[DefaultScope].shared
	interactive := tr.workloads["interactive"]
	ws := make([]*waiter, n)
	var want [2]float64 // the cost queued so far in each line
	for i := range ws {
		w := &waiter{seq: uint64(i + 1), cost: float64(1 + i%3), wake: make(chan struct{}, 1)}
		if i%10 == 0 {
			w.workload, w.priority = interactive.index, interactive.Reserve
		}
		ws[i] = w
		line := min(w.workload, 1)
		ahead := s.enqueue(w)
		if line == 1 && ahead != want[1] || line == 0 && ahead != want[0]+want[1] {
			t.Fatalf("waiter %d queued behind %v", i, ahead)
		}
		want[line] += w.cost
	}
	// A call that moves from another scope keeps its place by arrival.
	moved := ws[n/2+1] // of the default workload, behind every interactive call
	s.leave(moved)
	if ahead, inLine := s.enqueue(moved), want[0]+want[1]-costAfter(ws, moved)-moved.cost; ahead != inLine {
		t.Errorf("a moved call queued behind %v, want %v", ahead, inLine)
	}
	bound := 4 * bits.Len(n) // a random treap's height is about 4.3 ln n
	for v, l := range s.queue.lines {
		if h := height(l.root); h > bound {
			t.Errorf("workload %d: a line of %d has height %d, want at most %d", v, l.n, h, bound)
		}
	}
	if !s.isHead(ws[0]) {
		t.Error("the interactive call that came first is not the head")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, i := range rng.Perm(n)[:n/2] {
		s.leave(ws[i])
	}
	for v, l := range s.queue.lines {
		if h := height(l.root); h > bound {
			t.Errorf("workload %d: after cancellations a line of %d has height %d, want at most %d", v, l.n, h, bound)
		}
	}
	for _, w := range ws {
		s.leave(w) // leaving twice is harmless
	}
	if s.waiting.Load() != 0 || s.headOf() != nil {
		t.Errorf("%d waiting after every waiter left", s.waiting.Load())
	}
}

// costAfter returns the cost of the waiters of w's workload that arrived
// after w.
func costAfter(ws []*waiter, w *waiter) (c float64) {
	for _, o := range ws {
		if o.workload == w.workload && o.seq > w.seq {
			c += o.cost
		}
	}
	return c
}

func height(t *waiter) int {
	if t == nil {
		return 0
	}
	return 1 + max(height(t.left), height(t.right))
}

// BenchmarkQueue measures one call queueing behind n others on a scope, and
// leaving: the cost every waiting call pays twice.
func BenchmarkQueue(b *testing.B) {
	for _, n := range []int{100, 10_000, 100_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			s := queueState()
			for i := range n {
				s.enqueue(&waiter{seq: uint64(i + 1), cost: 1, wake: make(chan struct{}, 1)})
			}
			seq := uint64(n)
			w := &waiter{cost: 1, wake: make(chan struct{}, 1)}
			for b.Loop() {
				seq++
				w.seq = seq
				s.enqueue(w)
				s.leave(w)
			}
		})
	}
}
