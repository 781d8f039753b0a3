package storeguard

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/internal/fakeclock"
	"github.com/pacer-go/pacer/store"
)

// stuckStore is a remote store whose every call waits until it is released
// (or its context ends), recording the clamps it was asked for.
type stuckStore struct {
	*store.Memory
	release chan struct{}
	mu      sync.Mutex
	clamps  map[string][]float64 // by key
}

func (s *stuckStore) HonoursContext() bool { return true }

func (s *stuckStore) Clamp(ctx context.Context, now time.Time, d store.Demand, tokens float64) error {
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	s.clamps[d.Key] = append(s.clamps[d.Key], tokens)
	s.mu.Unlock()
	return s.Memory.Clamp(ctx, now, d, tokens)
}

// While the store hangs, clamps pile up no further than one per bucket, the
// latest winning, and no further than MaxPendingWrites buckets; one
// goroutine sends them, and is gone once they are sent. In virtual time.
func TestClampsWaitingForTheStoreAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &stuckStore{Memory: store.NewMemory(), release: make(chan struct{}), clamps: map[string][]float64{}}
		g := New(s, store.Policy{OnFailure: store.FailOpen, Timeout: time.Hour}, Hooks{})
		ctx, now := context.Background(), time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		d := store.Demand{Scope: "s", Key: "hot", Rate: 1, Burst: 100}
		g.Clamp(ctx, now, d, 0)
		synctest.Wait() // the sender holds the first clamp, and waits
		for i := range 999 {
			g.Clamp(ctx, now, d, float64(i+1))
		}
		if n := g.writes.len(); n != 1 {
			t.Fatalf("999 clamps of one bucket behind the one in flight hold %d places, want 1", n)
		}
		for i := range 2 * MaxPendingWrites {
			d.Key = strconv.Itoa(i)
			g.Clamp(ctx, now, d, 0)
		}
		if n := g.writes.len(); n != MaxPendingWrites {
			t.Fatalf("clamps of %d buckets hold %d places, want the bound, %d", 2*MaxPendingWrites, n, MaxPendingWrites)
		}
		close(s.release)
		synctest.Wait() // every goroutine, the sender's included, is done
		if got := s.clamps["hot"]; len(got) != 2 || got[0] != 0 || got[1] != 999 {
			t.Errorf("the store was asked for clamps %v of the hot bucket, want the first and the latest, [0 999]", got)
		}
		if n := g.writes.len(); n != 0 {
			t.Errorf("%d writes still waiting", n)
		}
	})
}

// lateStore is a store client that honours its context's deadline by its
// own socket deadline: its call takes a second of the clock, and fails with
// the client's own error, not the context's.
type lateStore struct {
	*store.Memory
	clock *fakeclock.Clock
}

func (s lateStore) HonoursContext() bool { return true }

func (s lateStore) Take(context.Context, time.Time, []store.Demand) (store.Decision, error) {
	s.clock.Advance(time.Second)
	return store.Decision{}, errors.New("read tcp: i/o timeout")
}

// A call that fails because the request's deadline passed says nothing
// about the store: the guard compares the deadline on its owner's clock
// (Hooks.Now), the one the request's wait was measured on, and does not
// take the store for down. (It compared it on the wall clock, which a
// clock in the future has not reached.)
func TestStoreCallPastTheDeadlineOnTheTransportClock(t *testing.T) {
	fc := fakeclock.New(time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC))
	g := New(lateStore{store.NewMemory(), fc}, store.Policy{OnFailure: store.FailOpen, Timeout: time.Hour}, Hooks{Now: fc.Now})
	ctx, cancel := context.WithDeadline(context.Background(), fc.Now().Add(time.Millisecond))
	defer cancel()
	_, err := g.Take(ctx, fc.Now(), []store.Demand{{Scope: "s", Rate: 1, Burst: 1, Cost: 1}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a take past the request's deadline returned %v, want context.DeadlineExceeded", err)
	}
	if g.IsDown() {
		t.Error("a take that failed past the request's deadline marked the store down")
	}
}
