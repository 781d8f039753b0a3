package pacer

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/pacer-go/pacer/observe"
)

// 10,000 calls wait on a workload bounded at 1,000 that sheds the lowest:
// the 9,000 shed are exactly the lowest by priority, the oldest among
// equals, and the 1,000 kept are served by priority.
func TestBoundedQueueShedsLowest(t *testing.T) {
	const n, bound = 10_000, 1_000
	synctest.Test(t, func(t *testing.T) {
		tr := New(nil, WithConcurrency(1), WithWorkload(DefaultWorkload, Workload{MaxWaiting: bound, ShedLowest: true}))
		bg := context.Background()
		holder := mustAcquire(t, tr, bg)
		rng := rand.New(rand.NewPCG(1, 2))
		type result struct {
			i      int
			served int // order served; -1 when shed
		}
		prio := make([]int, n)
		results := make(chan result, n)
		var served int
		for i := range n {
			prio[i] = rng.IntN(255) - 127
			go func() {
				p, err := tr.Acquire(ContextWithCall(bg, Call{Priority: prio[i]}))
				if err != nil {
					var te *ThrottledError
					if !errors.As(err, &te) || te.Reason != observe.ReasonQueueFull || !strings.Contains(err.Error(), "MaxWaiting") {
						t.Errorf("call %d: err = %v, want a full queue", i, err)
					}
					results <- result{i, -1}
					return
				}
				results <- result{i, served}
				served++ // one slot: one at a time
				p.Accept()
			}()
			synctest.Wait() // queued, in order
		}
		if got := tr.workloads[DefaultWorkload].waiting.Len(); got != bound {
			t.Fatalf("%d calls counted as waiting, want %d", got, bound)
		}
		holder.Accept()
		got := make([]int, n)
		for range n {
			r := <-results
			got[r.i] = r.served
		}
		// Expected: kept are the last bound in shed order (rank, then seq).
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return prio[a] - prio[b] }) // ties: older first
		kept := idx[n-bound:]
		want := make([]int, n)
		for i := range want {
			want[i] = -1
		}
		// Served by priority, higher first, older first among equals.
		slices.SortStableFunc(kept, func(a, b int) int { return prio[b] - prio[a] })
		for k, i := range kept {
			want[i] = k
		}
		var wrong int
		for i := range n {
			if got[i] != want[i] {
				if wrong++; wrong <= 5 {
					t.Errorf("call %d (priority %d): served %d, want %d (-1: shed)", i, prio[i], got[i], want[i])
				}
			}
		}
		if wrong > 0 {
			t.Errorf("%d calls of %d served or shed wrongly", wrong, n)
		}
	})
}

// Without ShedLowest a full queue refuses the newcomer, naming the queue,
// and keeps the waiters; a call admitted at once never counts.
func TestBoundedQueueRefusesNewest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(nil, WithConcurrency(1), WithWorkload("batch", Workload{MaxWaiting: 2}))
		ctx := ContextWithWorkload(context.Background(), "batch")
		holder := mustAcquire(t, tr, ctx) // admitted at once: not counted
		done := make(chan error, 2)
		for range 2 {
			go func() {
				p, err := tr.Acquire(ctx)
				if err == nil {
					p.Accept()
				}
				done <- err
			}()
		}
		synctest.Wait()
		_, err := tr.Acquire(ContextWithCall(ctx, Call{Priority: 100}))
		var te *ThrottledError
		if !errors.As(err, &te) || te.Reason != observe.ReasonQueueFull || !strings.Contains(err.Error(), `workload "batch"`) {
			t.Fatalf("a third waiter: err = %v, want a full queue naming workload \"batch\"", err)
		}
		holder.Accept()
		for range 2 {
			mustNotErr(t, <-done)
		}
		if n := tr.workloads["batch"].waiting.Len(); n != 0 {
			t.Errorf("%d calls still counted as waiting", n)
		}
	})
	for _, w := range []Workload{{MaxWaiting: -1}} {
		if New(nil, WithWorkload("w", w)).Err() == nil {
			t.Errorf("%+v accepted", w)
		}
	}
}
