//go:build !race

// Allocations are counted without the race detector, as in
// hotpath_allocs_test.go.

package pacer

import (
	"testing"

	"github.com/pacer-go/pacer/internal/queue"
)

// Queueing on a scope and leaving it allocate nothing beyond the waiter:
// the queue's Owns is a method value that stays on the stack. A waiting
// call asks the queue for its head at every turn.
func TestQueueAllocs(t *testing.T) {
	tr := New(nil, WithConcurrency(2), WithWorkload("interactive", Workload{Reserve: 0.5}))
	s := tr.scopes[DefaultScope].shared
	other := queue.NewWaiter(tr.workloads["interactive"].index, 0.5, 1, 0, tr.clock.Now())
	s.enqueue(other)
	w := queue.NewWaiter(0, 0, 2, 0, tr.clock.Now())
	if n := testing.AllocsPerRun(100, func() {
		s.enqueue(w)
		_ = s.isHead(w)
		_ = s.servesBefore(0, 0)
		s.leave(w)
	}); n != 0 {
		t.Errorf("queueing and leaving allocated %v times, want 0", n)
	}
}
