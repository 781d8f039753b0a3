package storetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/observe"
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

// newFleet returns four Transports sharing s (a store.LimitStore) that
// sync limits every interval, on one clock that stands still until the
// test moves it, each with scope at 1000 a second, failing fast; hear
// is told instance i's events.
func newFleet(t *testing.T, s store.Store, scope string, interval time.Duration, hear func(i int, e observe.Event)) ([]*pacer.Transport, *stepClock) {
	t.Helper()
	if _, ok := s.(store.LimitStore); !ok {
		t.Fatalf("%T is not a store.LimitStore", s)
	}
	clk := &stepClock{now: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	fleet := make([]*pacer.Transport, 4)
	for i := range fleet {
		fleet[i] = pacer.New(nil, pacer.WithStore(s, store.Policy{LimitSync: interval}), clock.With[pacer.Option](clk), pacer.WithScope(pacer.Scope{Name: scope, Limit: pacer.PerSecond(1000), FailFast: true}),
			pacer.WithObserver(observe.Func(func(e observe.Event) { hear(i, e) })))
		if err := fleet[i].Err(); err != nil {
			t.Fatal(err)
		}
	}
	return fleet, clk
}

// LimitSync checks that a limit set on one instance of a fleet of four
// sharing s (a store.LimitStore) reaches every other within the sync
// interval, and not from nowhere: before the interval passes, an instance
// that read the limits at the start keeps its own. The scope used is
// "fleet-<t.Name()>", so that runs against one server do not meet.
func LimitSync(t *testing.T, s store.Store) {
	t.Helper()
	const interval = 5 * time.Second
	scope := "fleet-" + t.Name()
	var mu sync.Mutex
	seen := make(map[int]observe.Event)
	fleet, clk := newFleet(t, s, scope, interval, func(i int, e observe.Event) {
		if e.Kind == observe.EventLimitChanged {
			mu.Lock()
			seen[i] = e
			mu.Unlock()
		}
	})
	ctx := context.Background()
	call := func(tr *pacer.Transport) {
		t.Helper()
		p, err := tr.TryAcquire(ctx, pacer.Charge{Scope: scope})
		if err != nil {
			t.Fatalf("a call of the fleet: %v", err)
		}
		p.Accept()
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
	if len(seen) != 1 || seen[0].Origin != observe.OriginSetLimit {
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
		if !ok || e.Origin != observe.OriginStore || e.Limit != observe.Limit(changed) || e.Scope != scope {
			t.Errorf("instance %d within the interval: event %+v (seen %v), want the change from the store", i, e, ok)
		}
	}
}

// CutSync checks that a cut one instance of a fleet of four sharing s (a
// store.LimitStore) takes on a refusal reaches every other at its next
// sync, once: each then paces at the cut's share of its rate, says so with
// an EventPaceChanged whose Origin is observe.OriginStore, and a later sync
// applies nothing again. Before the interval passes, the others pace as
// they did. The scope used is "cut-<t.Name()>".
func CutSync(t *testing.T, s store.Store) {
	t.Helper()
	const interval = 5 * time.Second
	scope := "cut-" + t.Name()
	var mu sync.Mutex
	fromStore := make(map[int][]observe.Event)
	fleet, clk := newFleet(t, s, scope, interval, func(i int, e observe.Event) {
		if e.Kind == observe.EventPaceChanged && e.Origin == observe.OriginStore {
			mu.Lock()
			fromStore[i] = append(fromStore[i], e)
			mu.Unlock()
		}
	})
	ctx := context.Background()
	// A call syncs before it is admitted, so one the emptied bucket
	// refuses has synced too.
	call := func(tr *pacer.Transport, end func(*pacer.Permit)) {
		t.Helper()
		p, err := tr.TryAcquire(ctx, pacer.Charge{Scope: scope})
		if _, throttled := err.(*pacer.ThrottledError); err != nil && !throttled {
			t.Fatalf("a call of the fleet: %v", err)
		}
		end(p)
	}
	factor := func(tr *pacer.Transport) float64 {
		for _, sc := range tr.Stats().Scopes {
			if sc.Name == scope {
				return sc.Factor
			}
		}
		t.Fatalf("no scope %q in Stats", scope)
		return 0
	}
	for _, tr := range fleet {
		call(tr, (*pacer.Permit).Accept) // each reads now, and next in an interval
	}
	call(fleet[0], func(p *pacer.Permit) { p.Reject(0) })
	cut := factor(fleet[0])
	if cut >= 1 {
		t.Fatalf("a refusal left instance 0 at factor %v, want a cut", cut)
	}
	clk.advance(interval / 2)
	for i, tr := range fleet[1:] {
		call(tr, (*pacer.Permit).Accept)
		if f := factor(tr); f != 1 {
			t.Errorf("instance %d before the interval: factor %v, want 1 (it read at the start)", i+1, f)
		}
	}
	clk.advance(interval / 2)
	want := factor(fleet[0])
	for _, tr := range fleet[1:] {
		call(tr, (*pacer.Permit).Accept)
	}
	clk.advance(interval)
	for _, tr := range fleet {
		call(tr, (*pacer.Permit).Accept) // nothing new to apply, nor its own
	}
	mu.Lock()
	defer mu.Unlock()
	if len(fromStore[0]) != 0 {
		t.Errorf("instance 0 applied its own cut from the store: %+v", fromStore[0])
	}
	for i := 1; i < len(fleet); i++ {
		if len(fromStore[i]) != 1 || fromStore[i][0].Scope != scope || fromStore[i][0].Rate <= 0 {
			t.Errorf("instance %d: pace changes from the store %+v, want one, for %q", i, fromStore[i], scope)
		}
		if f, own := factor(fleet[i]), factor(fleet[0]); f != own {
			t.Errorf("instance %d climbs back at factor %v, instance 0 at %v; want the same curve (it was %v at the sync)", i, f, own, want)
		}
	}
}

// PaceRecords checks what a store.LimitStore keeps of the pace records
// PublishPace is given: each as given, beside the scope's limit, under a
// version larger than any before (a limit's too), the latest only; and a
// record no store can keep refused with an error matching
// store.ErrInvalidDemand. The scopes used start "paces-<t.Name()>".
func PaceRecords(t *testing.T, s store.Store) {
	t.Helper()
	ls, ok := s.(store.LimitStore)
	if !ok {
		t.Fatalf("%T is not a store.LimitStore", s)
	}
	ctx := context.Background()
	a, b := "paces-"+t.Name()+"-a", "paces-"+t.Name()+"-b"
	var all strings.Builder
	for c := byte(' '); c <= '~'; c++ {
		all.WriteByte(c)
	}
	long := strings.Repeat("x", store.MaxPaceRecord)
	var versions []int64
	step := func(v int64, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	step(ls.PublishPace(ctx, a, "first record"))
	step(ls.PublishLimit(ctx, a, store.Limit{Count: 10, Per: time.Second, Burst: 2}))
	step(ls.PublishPace(ctx, a, all.String()))
	step(ls.PublishPace(ctx, b, long))
	for i := 1; i < len(versions); i++ {
		if versions[i] <= versions[i-1] {
			t.Fatalf("versions %v do not grow", versions)
		}
	}
	got, err := ls.PublishedLimits(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]store.PublishedLimit{
		a: {Limit: store.Limit{Count: 10, Per: time.Second, Burst: 2}, Version: versions[1], Pace: all.String(), PaceVersion: versions[2]},
		b: {Pace: long, PaceVersion: versions[3]},
	}
	for scope, w := range want {
		if got[scope] != w {
			t.Errorf("scope %q: published %+v, want %+v", scope, got[scope], w)
		}
	}
	// A limit published again keeps the pace record, and the other way.
	step(ls.PublishLimit(ctx, b, store.Limit{Count: 5, Per: time.Minute}))
	if got, err := ls.PublishedLimits(ctx); err != nil || got[b].Pace != long || got[b].Version != versions[4] {
		t.Errorf("scope %q after a limit: %+v, %v; want the pace record kept beside the limit", b, got[b], err)
	}
	for _, bad := range []string{"", long + "x", "two\nlines", "caf\u00e9", "nul\x00"} {
		if _, err := ls.PublishPace(ctx, a, bad); !errors.Is(err, store.ErrInvalidDemand) {
			t.Errorf("PublishPace(%q): %v, want an error matching store.ErrInvalidDemand", bad, err)
		}
	}
	if got, err := ls.PublishedLimits(ctx); err != nil || got[a].Pace != all.String() {
		t.Errorf("scope %q after refused records: %+v, %v; want the last record kept", a, got[a], err)
	}
}
