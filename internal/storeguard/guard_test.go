package storeguard

import (
	"context"
	"errors"
	"fmt"
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

// While a shared store is down, a guard that falls back to a local bucket
// reports no fleet total: the local bucket's is not the fleet's,
// and a scope that read the step between the two as spent (or as given
// back) would measure a supply that is not there.
func TestLocalFallbackReportsNoFleetTotal(t *testing.T) {
	remote := &fallibleStore{Memory: store.NewMemory()}
	g := New(remote, store.Policy{}, Hooks{})
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

// A failed store is left alone for MinRetry, then asked by one call at a
// time, the wait doubling while it stays down, up to MaxRetry; its first
// answer ends the outage and resets the wait.
func TestFailedStoreIsAskedAgainByOneCallAfterABackoff(t *testing.T) {
	g := New(&fallibleStore{Memory: store.NewMemory()}, store.Policy{}, Hooks{})
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	g.report(t0, errStoreDown)
	at := t0
	for _, wait := range []time.Duration{MinRetry, 2 * MinRetry, 4 * MinRetry, 8 * MinRetry, 16 * MinRetry, MaxRetry, MaxRetry} {
		if g.ask(at.Add(wait - time.Nanosecond)) {
			t.Fatalf("asked %v after a failure, the store is asked again; want it left alone for %v", wait-time.Nanosecond, wait)
		}
		at = at.Add(wait)
		if !g.ask(at) {
			t.Fatalf("%v after a failure, the store is not asked again", wait)
		}
		if g.ask(at) {
			t.Fatalf("%v after a failure, a second call asks the store while the first probes it", wait)
		}
		g.report(at, errStoreDown)
	}
	if !g.IsDown() {
		t.Fatal("a store that keeps failing is not down")
	}
	at = at.Add(MaxRetry)
	g.ask(at)
	g.report(at, nil)
	if g.IsDown() || !g.ask(at) || !g.ask(at) {
		t.Fatal("a store that answered is still down, or not asked by every call")
	}
	g.report(at, errStoreDown)
	if g.ask(at.Add(MinRetry-time.Nanosecond)) || !g.ask(at.Add(MinRetry)) {
		t.Errorf("after an answer, the next failure's wait is not back to %v", MinRetry)
	}
}

// The ledger is this process's own count of a budget: no store that forgets
// undoes it, and while the store is down a budget fails closed unless it
// follows the policy, which FallBackLocal holds to 1/Instances of the
// budget, counting what this process spent before the outage.
func TestBudgetLedger(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	budget := func(cost float64) []store.Demand {
		return []store.Demand{{Scope: "pacer:budget", Key: "batch", Burst: 10, Window: time.Hour, Cost: cost}}
	}
	t.Run("a store that forgets", func(t *testing.T) {
		remote := &fallibleStore{Memory: store.NewMemory()}
		g := New(remote, store.Policy{}, Hooks{})
		for range 2 {
			if dec, err := g.TakeBudget(ctx, now, budget(4), false); err != nil || !dec.OK {
				t.Fatalf("a take within the budget: %+v, %v", dec, err)
			}
		}
		remote.Memory = store.NewMemory() // restarted without persistence
		if dec, err := g.TakeBudget(ctx, now, budget(4), false); err != nil || dec.OK {
			t.Fatalf("a take beyond what this process spent, from a store that forgot: %+v, %v; want refused", dec, err)
		}
		if err := g.RefundBudget(ctx, now, budget(4)); err != nil {
			t.Fatal(err)
		}
		if dec, err := g.TakeBudget(ctx, now, budget(4), false); err != nil || !dec.OK {
			t.Fatalf("a take after a refund: %+v, %v; want granted", dec, err)
		}
	})
	for _, c := range []struct {
		p      store.Policy
		follow bool
		spends int // of 1 each while the store is down, after 4 before
	}{
		{store.Policy{Instances: 2}, false, 0},
		{store.Policy{Instances: 2}, true, 1},
		{store.Policy{OnFailure: store.FailOpen}, true, 6},
		{store.Policy{OnFailure: store.FailClosed}, true, 0},
	} {
		t.Run(fmt.Sprintf("%v follow=%v", c.p.OnFailure, c.follow), func(t *testing.T) {
			remote := &fallibleStore{Memory: store.NewMemory()}
			g := New(remote, c.p, Hooks{})
			if dec, err := g.TakeBudget(ctx, now, budget(4), c.follow); err != nil || !dec.OK {
				t.Fatalf("a take with the store up: %+v, %v", dec, err)
			}
			remote.down = true
			spends := 0
			for range 10 {
				dec, err := g.TakeBudget(ctx, now, budget(1), c.follow)
				if err != nil {
					if !errors.Is(err, ErrUnavailable) || !errors.Is(err, errStoreDown) {
						t.Fatalf("a refusal while the store is down: %v; want ErrUnavailable with the store's error", err)
					}
					break
				}
				if !dec.OK {
					break
				}
				spends++
			}
			if spends != c.spends {
				t.Errorf("while the store is down, %d takes of 1 were granted after 4 of 10 spent; want %d", spends, c.spends)
			}
		})
	}
}

// While the store is known to be down, a refund is not queued: it goes to
// the local fallback at once, the policy's cover is reported, and the
// write counts as lost, once, for Flush.
func TestWritesWhileTheStoreIsDownAreLost(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	remote := &fallibleStore{Memory: store.NewMemory(), down: true}
	var covered []string
	g := New(remote, store.Policy{}, Hooks{Covered: func(scope string, err error) {
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("covered with %v, want ErrUnavailable", err)
		}
		covered = append(covered, scope)
	}})
	d := store.Demand{Scope: "api", Rate: 1, Burst: 10, Cost: 2}
	if dec, err := g.Take(ctx, now, []store.Demand{d}); err != nil || !dec.OK {
		t.Fatalf("a take falling back to the local bucket: %+v, %v", dec, err)
	}
	if err := g.Refund(ctx, now, []store.Demand{d}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.Drained():
	default:
		t.Fatal("nothing was queued, but the queue is not drained")
	}
	pending, lost, err := g.Writes()
	if pending != [3]int{} || lost[RefundWrite] != 1 || sum(lost) != 1 || !errors.Is(err, errStoreDown) {
		t.Errorf("Writes() = %v, %v, %v; want one refund lost, to the store's error", pending, lost, err)
	}
	if _, lost, err := g.Writes(); lost != [3]int{} || err != nil {
		t.Errorf("a second Writes() = %v, %v; want the losses forgotten", lost, err)
	}
	if len(covered) != 2 || covered[0] != "api" || covered[1] != "api" {
		t.Errorf("covered %q, want the take and the refund of api", covered)
	}
	if lvl, _ := g.local.Level(context.Background(), now, d); lvl != 10 {
		t.Errorf("the local bucket holds %v after the take and its refund, want 10", lvl)
	}
}

func sum(n [3]int) int { return n[0] + n[1] + n[2] }
