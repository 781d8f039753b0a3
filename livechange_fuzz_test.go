package pacer

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// FuzzLiveChanges runs callers of two workloads and many tenants, of
// hostile weights, against a Transport whose Limit and workload the
// script changes while they wait, in virtual time, and checks that
// nothing panics, that no call outlives its deadline, and that once every
// call is over no slot is held and no call counts as waiting.
//
// Each byte of script drives a call (its workload, tenant, weight,
// priority and how long it holds its permit) and, in turn, a change.
func FuzzLiveChanges(f *testing.F) {
	for _, seed := range [][]byte{
		{},
		{0, 1, 2, 3, 4, 5, 6, 7},
		{0x10, 0x21, 0x32, 0x43, 0x54, 0x65, 0x76, 0x87, 0x98, 0xa9, 0xba, 0xcb},
		{0xff, 0, 0xff, 0, 0x80, 0x40, 0x20, 0x10},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, script []byte) {
		synctest.Test(t, func(t *testing.T) { runLiveChanges(t, script) })
	})
}

var (
	liveWeights = []float64{1, 3, minTenantWeight, maxTenantWeight, 1e-300, 5e-324, 1e300, 0, -1,
		math.NaN(), math.Inf(1), math.Inf(-1)}
	liveLimits = []Limit{{}, PerSecond(20), PerSecond(1), {Count: 5, Per: time.Second, Burst: 5},
		{Count: 1, Per: time.Minute, Burst: 1}, PerSecond(1000)}
)

func runLiveChanges(t *testing.T, script []byte) {
	const (
		callers  = 4
		calls    = 8
		deadline = 2 * time.Second
	)
	tr := New(nil, WithLimit(PerSecond(20)), WithConcurrency(2),
		WithWorkload("w", Workload{MaxWaiting: 2}), WithWorkload("x", Workload{Reserve: 0.3}),
		WithLogger(slog.New(slog.DiscardHandler)))
	mustNotErr(t, tr.Err())
	at := func(i int) byte {
		if len(script) == 0 {
			return byte(i * 37)
		}
		return script[i%len(script)]
	}
	var wg sync.WaitGroup
	for g := range callers {
		wg.Go(func() {
			for i := range calls {
				b := at(g*calls + i)
				ctx := ContextWithWorkload(context.Background(), []string{"w", "x", DefaultWorkload}[b%3])
				ctx = ContextWithCall(ctx, Call{Tenant: string('a' + rune(b%5)), Weight: liveWeights[int(b/5)%len(liveWeights)], Priority: int(b%7) - 3})
				ctx, cancel := context.WithTimeout(ctx, deadline)
				due := time.Now().Add(deadline)
				p, err := tr.Acquire(ctx)
				if late := time.Since(due); late > 50*time.Millisecond {
					t.Errorf("a call returned %v after its deadline (err %v)", late, err)
				}
				if err == nil {
					time.Sleep(time.Duration(b%16) * 50 * time.Millisecond)
					p.Accept()
				}
				cancel()
			}
		})
	}
	wg.Go(func() { // the changes, while the callers wait
		for i := range 2 * calls {
			b := at(3*i + 1)
			time.Sleep(time.Duration(b%8) * 100 * time.Millisecond)
			if b&1 == 0 {
				_ = tr.SetLimit(DefaultScope, liveLimits[int(b/2)%len(liveLimits)])
				continue
			}
			w := Workload{MaxWaiting: int(b/2) % 4, ShedLowest: b/8%2 == 1, Reserve: []float64{0, 0.2, 0.5}[b/16%3]}
			if b&0x80 != 0 {
				w.Max = 0.5
			}
			_ = tr.SetWorkload("w", w) // Max below Reserve is refused: fine
		}
	})
	wg.Wait()
	for _, s := range tr.Stats().Scopes {
		if s.InFlight != 0 || s.Waiting != 0 {
			t.Fatalf("after every call ended, scope %q has %d in flight and %d waiting", s.Name, s.InFlight, s.Waiting)
		}
	}
	for name, ws := range tr.workloads {
		if n := ws.waiting.Len(); n != 0 {
			t.Fatalf("after every call ended, workload %q counts %d calls waiting", name, n)
		}
	}
}
