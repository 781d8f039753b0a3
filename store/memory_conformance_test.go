package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/storetest"
)

func TestMemoryStoreConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return store.NewSweepingMemory() },
		storetest.WithEviction(memoryHeld))
}

// The zero Memory is a store as NewMemory's is: `pacer.WithStore(&store.Memory{}, store.Policy{})`
// must not panic on its first call.
func TestZeroMemoryStoreConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return new(store.Memory) })
}

// memoryHeld reports whether the memory store holds buckets other than a
// probe's, after enough operations at now for its sweep to look at every
// bucket. Each case has a store of its own, so the one bucket the eviction
// case is asking about is the only other one.
func memoryHeld(t *testing.T, s store.Store, _ store.Demand, _, now time.Time) bool {
	m := s.(*store.Memory)
	probe := []store.Demand{{Scope: "storetest-probe", Burst: 1, Rate: 1}}
	for range 64 { // more than one sweep's worth of operations
		if _, err := m.Take(context.Background(), now, probe); err != nil {
			t.Fatal(err)
		}
	}
	return m.Len() > 1 // the probe's own bucket is always there
}
