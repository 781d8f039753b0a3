//go:build !race

// Without the race detector, which slows the queue tenfold. The cost of
// each operation is asserted on the queue's shape (TestQueueCostsLogN) and
// measured by BenchmarkQueue; the wall time here is only logged.

package queue

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestQueueOfAHundredThousand queues 100,000 waiters and cancels them in a
// random order, checking what each waiter is told is ahead of it and that
// the head stays the oldest left (0.15 s of CPU; it took 17 s when
// queueing was a sorted slice).
func TestQueueOfAHundredThousand(t *testing.T) {
	const n = 100_000
	var q Queue
	ws := make([]*Waiter, n)
	start := time.Now()
	for i := range ws {
		ws[i] = &Waiter{Seq: uint64(i + 1), Cost: 1, wake: make(chan struct{}, 1)}
		if ahead := q.Insert(ws[i], 1, nil); ahead != float64(i) {
			t.Fatalf("waiter %d queued behind %v, want %d", i, ahead, i)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	order := rng.Perm(n)
	for k, i := range order {
		q.Remove(ws[i], nil)
		if k%10_000 == 0 && k > 0 { // the head is still the oldest left
			oldest := n
			for _, j := range order[k+1:] {
				oldest = min(oldest, j)
			}
			if q.Head(nil) != ws[oldest] {
				t.Fatalf("after %d cancellations the head is not waiter %d", k+1, oldest)
			}
		}
	}
	t.Logf("queued and cancelled %d waiters in %v", n, time.Since(start))
	if got := q.Len(); got != 0 {
		t.Errorf("%d waiting after every waiter left", got)
	}
}
