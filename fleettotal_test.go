package pacer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pacer-go/pacer/store"
)

// fallibleStore is a shared store that can be taken down.
type fallibleStore struct {
	*store.Memory
	down bool
}

var errStoreDown = errors.New("the store is down")

func (s *fallibleStore) Take(ctx context.Context, now time.Time, ds []store.Demand) (store.Decision, error) {
	if s.down {
		return store.Decision{}, errStoreDown
	}
	return s.Memory.Take(ctx, now, ds)
}

// While a shared store is down, a Transport that falls back to a local
// bucket reports no fleet total: the local bucket's is not the fleet's,
// and a scope that read the step between the two as spent (or as given
// back) would measure a supply that is not there.
func TestLocalFallbackReportsNoFleetTotal(t *testing.T) {
	remote := &fallibleStore{Memory: store.NewMemory()}
	g := guardStore(remote, store.Policy{})
	d := store.Demand{Scope: "api", Rate: 1, Burst: 100, Cost: 1}
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for range 3 {
		if dec, err := g.Take(context.Background(), now, []store.Demand{d}); err != nil || !dec.OK || dec.Taken == 0 {
			t.Fatalf("with the store up: %+v, %v; want granted with the fleet's total", dec, err)
		}
	}
	remote.down = true
	dec, err := g.Take(context.Background(), now, []store.Demand{d})
	if err != nil || !dec.OK || dec.Taken != 0 {
		t.Fatalf("with the store down: %+v, %v; want granted locally with no total", dec, err)
	}
}
