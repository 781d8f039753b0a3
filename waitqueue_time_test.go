//go:build !race

// Without the race detector, which slows the queue tenfold. The cost of
// each operation is asserted on the queue's shape (TestQueueCostsLogN) and
// measured by BenchmarkQueue; the wall time here is only logged.

package pacer

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestQueueOfAHundredThousand queues 100,000 waiters on one scope and
// cancels them in a random order, checking what each waiter is told is
// ahead of it and that the head stays the oldest left (0.15 s of CPU; it
// took 17 s when queueing was a sorted slice).
func TestQueueOfAHundredThousand(t *testing.T) {
	const n = 100_000
	s := queueState()
	ws := make([]*waiter, n)
	start := time.Now()
	for i := range ws {
		ws[i] = &waiter{seq: uint64(i + 1), cost: 1, wake: make(chan struct{}, 1)}
		if ahead := s.enqueue(ws[i]); ahead != float64(i) {
			t.Fatalf("waiter %d queued behind %v, want %d", i, ahead, i)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	order := rng.Perm(n)
	for k, i := range order {
		s.leave(ws[i])
		if k%10_000 == 0 && k > 0 { // the head is still the oldest left
			oldest := n
			for _, j := range order[k+1:] {
				oldest = min(oldest, j)
			}
			if !s.isHead(ws[oldest]) {
				t.Fatalf("after %d cancellations the head is not waiter %d", k+1, oldest)
			}
		}
	}
	t.Logf("queued and cancelled %d waiters in %v", n, time.Since(start))
	if got := s.waiting.Load(); got != 0 {
		t.Errorf("%d waiting after every waiter left", got)
	}
}
