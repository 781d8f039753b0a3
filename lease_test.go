package pacer_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacer-go/pacer"
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
	s := pacer.NewLeaseStore(remote, pacer.LeaseConfig{Size: 4})
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
		instances = append(instances, pacer.NewLeaseStore(remote, pacer.LeaseConfig{Size: 4}))
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
	s := pacer.NewLeaseStore(remote, pacer.LeaseConfig{Size: 10})
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
	s := pacer.NewLeaseStore(remote, pacer.LeaseConfig{Size: 4, MaxAge: time.Second})
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
	s := pacer.NewLeaseStore(remote, pacer.LeaseConfig{Size: 16, Adaptive: true})
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
	s := pacer.NewLeaseStore(remote, pacer.LeaseConfig{Size: 1})
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
	s := pacer.NewLeaseStore(remote, pacer.LeaseConfig{Size: 4})
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

func TestLeaseOptions(t *testing.T) {
	// Through a Transport: 6 requests, a lease of 2, 2 round trips.
	remote := &countingStore{Memory: store.NewMemory()}
	tr := pacer.New(&okTransport{}, pacer.WithLimit(pacer.PerSecond(100)), pacer.WithStore(remote, store.Policy{Lease: 2}))
	for range 6 {
		if err := send(context.Background(), tr); err != nil {
			t.Fatal(err)
		}
	}
	if n := remote.takes.Load(); n != 2 {
		t.Fatalf("6 requests with a lease of 2 made %d round trips, want 2", n)
	}
}

// Tokens leased from the shared store were granted by it: they are spent
// while the store is down, whatever the failure policy, and spending them
// costs no more than a take from the memory store — no goroutine, no
// timeout, nothing the store guard needs for a round trip.
func TestLeasedTokensNeedNoStore(t *testing.T) {
	byPath := pacer.WithRoute(func(req *http.Request, cs []pacer.Charge) []pacer.Charge {
		return []pacer.Charge{{Scope: "per-path", Key: req.URL.Path}}
	})
	perPath := pacer.WithScope(pacer.Scope{Name: "per-path", Limit: pacer.PerSecond(1000)})
	remote := newFlakyStore()
	tr := pacer.New(&okTransport{}, byPath, perPath, pacer.WithStore(remote, store.Policy{Lease: 8, OnFailure: store.FailClosed}), pacer.WithoutRetry())
	get := func(path string) error {
		req, _ := http.NewRequest("GET", "http://api.example"+path, nil)
		resp, err := tr.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get("/leased"); err != nil { // takes 1 and leases 8
		t.Fatal(err)
	}
	remote.down.Store(true)
	if err := get("/other"); !errors.Is(err, pacer.ErrStoreUnavailable) {
		t.Fatalf("err = %v, want ErrStoreUnavailable for a bucket with no lease", err)
	}
	for i := range 8 {
		if err := get("/leased"); err != nil {
			t.Fatalf("leased request %d: %v", i, err)
		}
	}

	local := pacer.New(&okTransport{}, byPath, perPath, pacer.WithoutRetry())
	leased := pacer.New(&okTransport{}, byPath, perPath, pacer.WithStore(newFlakyStore(), store.Policy{Lease: 64}), pacer.WithoutRetry())
	req, _ := http.NewRequest("GET", "http://api.example/x", nil)
	allocs := func(tr *pacer.Transport) float64 {
		return testing.AllocsPerRun(20, func() {
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		})
	}
	if l, m := allocs(leased), allocs(local); l > m {
		t.Fatalf("a leased request allocates %v times, one paced in memory %v", l, m)
	}
}

// A lease store reports no running total of what the fleet took
// (store.Decision.Taken): its store counts what was leased, not what was
// spent, and a take from a lease asks nothing of it. A Transport that
// leases paces by remaining counts as one whose store keeps none.
func TestLeaseReportsNoFleetTotal(t *testing.T) {
	s := pacer.NewLeaseStore(store.NewMemory(), pacer.LeaseConfig{Size: 4})
	d := store.Demand{Scope: "api", Rate: 1, Burst: 100, Cost: 1}
	for i := range 10 {
		if dec := mustTake(t, s, t0, d); !dec.OK || dec.Taken != 0 {
			t.Fatalf("take %d: %+v, want granted with no total", i, dec)
		}
	}
}
