package pacer_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/store"
)

func TestLeaseOptions(t *testing.T) {
	// Through a Transport: 6 requests, a lease of 2, 2 round trips.
	remote := newFlakyStore()
	tr := pacer.New(&okTransport{}, pacer.WithLimit(pacer.PerSecond(100)), pacer.WithStore(remote, store.Policy{Lease: 2}))
	for range 6 {
		if err := send(context.Background(), tr); err != nil {
			t.Fatal(err)
		}
	}
	if n := remote.calls.Load(); n != 2 {
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
	if err := get("/other"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("err = %v, want store.ErrUnavailable for a bucket with no lease", err)
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
