package storeguard

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/store"
)

// levelStore is a remote store whose Level can fail, or hang without
// honouring its context (as go-redis does without ContextTimeoutEnabled).
type levelStore struct {
	*store.Memory
	fail  bool
	hang  chan struct{} // non-nil: Level waits for it, whatever its context
	reads int
}

func (s *levelStore) Level(ctx context.Context, now time.Time, d store.Demand) (float64, error) {
	s.reads++
	if s.hang != nil {
		<-s.hang
	}
	if s.fail {
		return 0, errStoreDown
	}
	return s.Memory.Level(ctx, now, d)
}

// onlyStore hides every optional interface of the store it holds.
type onlyStore struct{ store.Store }

// The guard reads the remote store's level, and never answers for it: a
// store that fails is an error matching ErrUnavailable, and marks the store
// down, so that the next read fails at once without asking it; a store
// that hangs is given up at the store timeout; a store that reads no
// levels is an error matching errors.ErrUnsupported. In virtual time.
func TestLevelIsTheStoresOrAnError(t *testing.T) {
	ctx, now := context.Background(), time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	d := store.Demand{Scope: "pacer:budget", Key: "batch", Burst: 10, Window: time.Hour, Cost: 4}

	remote := &levelStore{Memory: store.NewMemory()}
	g := New(remote, store.Policy{}, Hooks{})
	if dec, err := g.Take(ctx, now, []store.Demand{d}); err != nil || !dec.OK {
		t.Fatalf("Take = %+v, %v", dec, err)
	}
	if l, err := g.Level(ctx, now, d); err != nil || l != 6 {
		t.Fatalf("Level after a take of 4 of 10 = %v, %v; want 6", l, err)
	}

	remote.fail = true
	if _, err := g.Level(ctx, now, d); !errors.Is(err, ErrUnavailable) || !errors.Is(err, errStoreDown) {
		t.Fatalf("Level of a failing store: %v; want ErrUnavailable and the store's error", err)
	}
	reads := remote.reads
	if _, err := g.Level(ctx, now, d); !errors.Is(err, ErrUnavailable) || remote.reads != reads {
		t.Fatalf("Level of a store known to be down: %v after %d more reads; want ErrUnavailable, the store left alone", err, remote.reads-reads)
	}

	if _, err := New(onlyStore{store.NewMemory()}, store.Policy{}, Hooks{}).Level(ctx, now, d); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Level of a store that reads no levels: %v; want errors.ErrUnsupported", err)
	}

	synctest.Test(t, func(t *testing.T) {
		hung := &levelStore{Memory: store.NewMemory(), hang: make(chan struct{})}
		g := New(hung, store.Policy{Timeout: 200 * time.Millisecond}, Hooks{})
		start := time.Now()
		_, err := g.Level(ctx, now, d)
		if waited := time.Since(start); !errors.Is(err, ErrUnavailable) || waited != 200*time.Millisecond {
			t.Errorf("Level of a hung store: %v after %v; want ErrUnavailable at the store timeout, 200ms", err, waited)
		}
		close(hung.hang)
	})
}
