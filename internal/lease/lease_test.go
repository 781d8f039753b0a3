package lease

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacer-go/pacer/store"
)

// countingStore counts the Takes that reach a memory store: the round
// trips a remote store would make.
type countingStore struct {
	*store.Memory
	takes atomic.Int64
}

func (c *countingStore) Take(ctx context.Context, now time.Time, ds []store.Demand) (store.Decision, error) {
	c.takes.Add(1)
	return c.Memory.Take(ctx, now, ds)
}

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func mustTake(t *testing.T, s store.Store, now time.Time, ds ...store.Demand) store.Decision {
	t.Helper()
	d, err := s.Take(context.Background(), now, ds)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestLeaseSavesRoundTrips(t *testing.T) {
	remote := &countingStore{Memory: store.NewMemory()}
	s := New(remote, Config{Size: 4})
	d := store.Demand{Scope: "api", Rate: 1, Burst: 100, Cost: 1}
	for i := range 10 {
		if !mustTake(t, s, t0, d).OK {
			t.Fatalf("take %d denied", i)
		}
	}
	if n := remote.takes.Load(); n != 2 {
		t.Fatalf("10 takes with a lease of 4 made %d round trips, want 2", n)
	}
	// The store saw what was leased: 2 × (1 + 4).
	if n := takeAll(t, remote, t0, d); n != 90 {
		t.Fatalf("the store has %d left, want 90", n)
	}
}

// Instances that lease from one bucket are granted, together, exactly what
// it holds: a lease moves tokens, it does not make them.
func TestLeaseNeverOverGrants(t *testing.T) {
	remote := store.NewMemory()
	var instances []store.Store
	for range 3 {
		instances = append(instances, New(remote, Config{Size: 4}))
	}
	d := store.Demand{Scope: "api", Burst: 20, Cost: 1} // no refill
	granted := 0
	for denied := 0; denied < len(instances); {
		denied = 0
		for _, s := range instances {
			if mustTake(t, s, t0, d).OK {
				granted++
			} else {
				denied++
			}
		}
	}
	if granted != 20 {
		t.Fatalf("3 leasing instances were granted %d from a bucket of 20", granted)
	}
}

func TestLeaseFitsTheBucket(t *testing.T) {
	remote := &countingStore{Memory: store.NewMemory()}
	s := New(remote, Config{Size: 10})
	d := store.Demand{Scope: "api", Rate: 1, Burst: 3, Cost: 1}
	// The lease shrinks to what the burst allows: 1 + 2.
	for range 3 {
		if !mustTake(t, s, t0, d).OK {
			t.Fatal("denied")
		}
	}
	if n := remote.takes.Load(); n != 1 {
		t.Fatalf("%d round trips, want 1", n)
	}
	// The bucket has 1 token: no room for a lease, but the cost fits.
	now := t0.Add(time.Second)
	if !mustTake(t, s, now, d).OK {
		t.Fatal("a take that fits without a lease was denied")
	}
	if dec := mustTake(t, s, now, d); dec.OK || dec.Wait != time.Second {
		t.Fatalf("take from an empty bucket = %+v, want the bucket's wait of 1s", dec)
	}
}

func TestLeaseExpires(t *testing.T) {
	remote := &countingStore{Memory: store.NewMemory()}
	s := New(remote, Config{Size: 4, MaxAge: time.Second})
	d := store.Demand{Scope: "api", Rate: 1, Burst: 100, Cost: 1}
	mustTake(t, s, t0, d)
	mustTake(t, s, t0.Add(999*time.Millisecond), d)
	if n := remote.takes.Load(); n != 1 {
		t.Fatalf("%d round trips within the lease's age, want 1", n)
	}
	mustTake(t, s, t0.Add(time.Second), d)
	if n := remote.takes.Load(); n != 2 {
		t.Fatalf("a take after the lease expired made %d round trips in all, want 2", n)
	}
}

func TestAdaptiveLease(t *testing.T) {
	remote := &countingStore{Memory: store.NewMemory()}
	s := New(remote, Config{Size: 16, Adaptive: true})
	d := store.Demand{Scope: "api", Rate: 1, Burst: 1000, Cost: 1}
	for range 104 {
		mustTake(t, s, t0, d)
	}
	// Leases of 1, 2, 4, 8, 16, 16, 16, 16, 16: 104 takes in 9 trips.
	if n := remote.takes.Load(); n != 9 {
		t.Fatalf("104 busy takes made %d round trips, want 9", n)
	}
	// Idle past the lease's age with tokens left: the lease halves.
	now := t0.Add(time.Hour)
	mustTake(t, s, now, d) // leases 8
	for range 8 {
		mustTake(t, s, now, d)
	}
	if n := remote.takes.Load(); n != 10 {
		t.Fatalf("after going idle: %d round trips in all, want 10", n)
	}
}

func TestLeaseRefundStaysLocal(t *testing.T) {
	remote := &countingStore{Memory: store.NewMemory()}
	s := New(remote, Config{Size: 1})
	d := store.Demand{Scope: "api", Burst: 10, Cost: 1}
	mustTake(t, s, t0, d) // took 2, holds 1
	if err := s.Refund(context.Background(), t0, []store.Demand{d}); err != nil {
		t.Fatal(err)
	}
	mustTake(t, s, t0, d)
	mustTake(t, s, t0, d)
	if n := remote.takes.Load(); n != 1 {
		t.Fatalf("%d round trips, want 1: the refund went to the lease", n)
	}
}

// Spend budgets are fixed windows: never leased.
func TestLeaseSkipsWindows(t *testing.T) {
	remote := &countingStore{Memory: store.NewMemory()}
	s := New(remote, Config{Size: 4})
	d := store.Demand{Scope: "budget", Burst: 10, Window: time.Hour, Cost: 1}
	for range 3 {
		mustTake(t, s, t0, d)
	}
	if n := remote.takes.Load(); n != 3 {
		t.Fatalf("%d round trips for 3 budget takes, want 3", n)
	}
}

func takeAll(t *testing.T, s store.Store, now time.Time, d store.Demand) int {
	n := 0
	for mustTake(t, s, now, d).OK {
		n++
	}
	return n
}

// A lease store reports no running total of what the fleet took
// (store.Decision.Taken): its store counts what was leased, not what was
// spent, and a take from a lease asks nothing of it. A Transport that
// leases paces by remaining counts as one whose store keeps none.
func TestLeaseReportsNoFleetTotal(t *testing.T) {
	s := New(store.NewMemory(), Config{Size: 4})
	d := store.Demand{Scope: "api", Rate: 1, Burst: 100, Cost: 1}
	for i := range 10 {
		if dec := mustTake(t, s, t0, d); !dec.OK || dec.Taken != 0 {
			t.Fatalf("take %d: %+v, want granted with no total", i, dec)
		}
	}
}

// A clamp says the bucket holds fewer tokens than believed: the lease of
// the bucket is dropped with it, and the next take asks the store. A
// settlement goes to the store, which the call's tokens came from, and
// leaves the lease alone.
func TestLeaseClampAndAdjust(t *testing.T) {
	remote := &countingStore{Memory: store.NewMemory()}
	s := New(remote, Config{Size: 4})
	d := store.Demand{Scope: "api", Burst: 100, Cost: 1} // no refill
	mustTake(t, s, t0, d)                                // takes 1 and leases 4
	if err := s.Adjust(context.Background(), t0, []store.Demand{{Scope: "api", Burst: 100, Cost: 10}}); err != nil {
		t.Fatal(err)
	}
	mustTake(t, s, t0, d) // from the lease
	if n := remote.takes.Load(); n != 1 {
		t.Fatalf("%d round trips after a settlement, want 1: the lease still holds", n)
	}
	if err := s.Clamp(context.Background(), t0, d, 50); err != nil {
		t.Fatal(err)
	}
	mustTake(t, s, t0, d)
	if n := remote.takes.Load(); n != 2 {
		t.Fatalf("%d round trips after a clamp, want 2: the lease was dropped", n)
	}
	// The clamp left 50, the take after it 50 - 5.
	if n := takeAll(t, remote, t0, d); n != 45 {
		t.Fatalf("the store has %d left, want 45", n)
	}
}
