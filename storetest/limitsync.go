package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/store"
)

// stepClock is a clock that stands still until the test moves it; the
// fleet check never waits on it.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) NewTimer(d time.Duration) clock.Timer { return clock.System.NewTimer(d) }

func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// LimitSync checks that a limit set on one instance of a fleet of four
// sharing s (a store.LimitStore) reaches every other within the sync
// interval, and not from nowhere: before the interval passes, an instance
// that read the limits at the start keeps its own. The scope used is
// "fleet-<t.Name()>", so that runs against one server do not meet.
func LimitSync(t *testing.T, s store.Store) {
	t.Helper()
	if _, ok := s.(store.LimitStore); !ok {
		t.Fatalf("%T is not a store.LimitStore", s)
	}
	const interval = 5 * time.Second
	scope := "fleet-" + t.Name()
	clk := &stepClock{now: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	var mu sync.Mutex
	seen := make(map[int]pacer.Event)
	fleet := make([]*pacer.Transport, 4)
	for i := range fleet {
		fleet[i] = pacer.New(nil, pacer.WithStore(s), clock.With[pacer.Option](clk), pacer.WithLimitSync(interval),
			pacer.WithScope(pacer.Scope{Name: scope, Limit: pacer.PerSecond(1000), FailFast: true}),
			pacer.WithObserver(pacer.ObserverFunc(func(e pacer.Event) {
				if e.Kind == pacer.EventLimitChanged {
					mu.Lock()
					seen[i] = e
					mu.Unlock()
				}
			})))
		if err := fleet[i].Err(); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	call := func(tr *pacer.Transport) {
		t.Helper()
		p, err := tr.TryAcquire(ctx, pacer.Charge{Scope: scope})
		if err != nil {
			t.Fatalf("a call of the fleet: %v", err)
		}
		p.Done(pacer.Accepted())
	}
	for _, tr := range fleet {
		call(tr) // each reads the limits now, and next in an interval
	}
	changed := pacer.PerSecond(500)
	if err := fleet[0].SetLimit(scope, changed); err != nil {
		t.Fatal(err)
	}
	clk.advance(interval / 2)
	for _, tr := range fleet[1:] {
		call(tr)
	}
	mu.Lock()
	if len(seen) != 1 || seen[0].Origin != pacer.OriginSetLimit {
		t.Errorf("before the interval: changes seen %v, want only instance 0's own (the others read at the start)", seen)
	}
	mu.Unlock()
	clk.advance(interval / 2)
	for _, tr := range fleet[1:] {
		call(tr)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(fleet); i++ {
		e, ok := seen[i]
		if !ok || e.Origin != pacer.OriginStore || e.Limit != changed || e.Scope != scope {
			t.Errorf("instance %d within the interval: event %+v (seen %v), want the change from the store", i, e, ok)
		}
	}
}
