package pacer

import (
	"context"
	"math"
	"sync"
	"testing"
	"testing/synctest"
)

// newcomerPlace serves, on a Transport of one slot, a call of tenant "t"
// of the weight (when weight is not nil), then queues 20 calls of tenant
// "flood" and one of "newcomer", and returns the place (from 1) the
// newcomer is served at.
func newcomerPlace(t *testing.T, weight *float64) int {
	var place int
	synctest.Test(t, func(t *testing.T) {
		tr := New(nil, WithConcurrency(1))
		bg := context.Background()
		if weight != nil {
			holder := mustAcquire(t, tr, bg)
			done := make(chan struct{})
			go func() {
				mustAcquire(t, tr, ContextWithCall(bg, Call{Tenant: "t", Weight: *weight})).Accept()
				close(done)
			}()
			synctest.Wait() // waiting: it is tagged
			holder.Accept()
			<-done
		}
		calls := make([]tenantCall, 21)
		for i := range calls {
			calls[i] = tenantCall{"flood", 1}
		}
		calls[20] = tenantCall{"newcomer", 1}
		order := servedOrder(t, tr, calls)
		for i, name := range order {
			if name == "newcomer" {
				place = i + 1
			}
		}
	})
	return place
}

type tenantCall struct {
	name   string
	weight float64
}

// servedOrder queues the calls, in order, on tr while its one slot is
// held, then frees it and returns the tenants in the order served. It runs
// in a synctest bubble.
func servedOrder(t *testing.T, tr *Transport, calls []tenantCall) []string {
	t.Helper()
	bg := context.Background()
	holder := mustAcquire(t, tr, bg)
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	for _, c := range calls {
		wg.Go(func() {
			p := mustAcquire(t, tr, ContextWithCall(bg, Call{Tenant: c.name, Weight: c.weight}))
			mu.Lock()
			order = append(order, c.name)
			mu.Unlock()
			p.Accept()
		})
		synctest.Wait()
	}
	holder.Accept()
	wg.Wait()
	return order
}

// No weight a caller states, however small, large or absurd, turns fair
// queuing off for the calls after it: a newcomer behind a flood is served
// where it is without that call.
func TestTenantWeightOutOfRangeKeepsFairness(t *testing.T) {
	want := newcomerPlace(t, nil)
	if want > 2 {
		t.Fatalf("without the odd weight, the newcomer is served at place %d of 21, want within the first 2", want)
	}
	for _, w := range []float64{1e-300, 5e-324, 1e-4, 0, -1, math.NaN(), math.Inf(1), math.Inf(-1), 1e300} {
		if got := newcomerPlace(t, &w); got != want {
			t.Errorf("after a call of weight %v: the newcomer is served at place %d of 21, want %d as without it", w, got, want)
		}
	}
}

func TestTenantWeightRange(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{
		{1, 1}, {0.5, 0.5}, {minTenantWeight, minTenantWeight}, {maxTenantWeight, maxTenantWeight},
		{1e-300, minTenantWeight}, {1e300, maxTenantWeight}, {math.Inf(1), maxTenantWeight},
		{0, 1}, {-1, 1}, {math.Inf(-1), 1}, {math.NaN(), 1},
	} {
		if got := tenantWeight(tc.in); got != tc.want {
			t.Errorf("tenantWeight(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
