package pacer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/observe"
)

// floodWaits runs 99 tenants calling once a second each, at random phases,
// and, with flood, a 100th calling 100 times a second, on a scope paced at
// 150 a second, for 20 virtual seconds; it returns the 99 tenants' waits.
func floodWaits(t *testing.T, flood, tenants bool) []time.Duration {
	var waits []time.Duration
	synctest.Test(t, func(t *testing.T) {
		var events []observe.Event
		var evMu sync.Mutex
		tr := New(nil, WithLimit(Limit{Count: 150, Per: time.Second, Burst: 1}), WithHeadroom(1),
			WithObserver(observe.Func(func(e observe.Event) { evMu.Lock(); events = append(events, e); evMu.Unlock() })))
		type arrival struct {
			at     time.Duration
			tenant int // 99: the flood
		}
		rng := rand.New(rand.NewPCG(3, 4))
		var arrivals []arrival
		const seconds = 20
		for tn := range 99 {
			phase := time.Duration(rng.Int64N(int64(time.Second)))
			for s := range seconds {
				arrivals = append(arrivals, arrival{time.Duration(s)*time.Second + phase, tn})
			}
		}
		if flood {
			for i := range seconds * 100 {
				arrivals = append(arrivals, arrival{time.Duration(i) * 10 * time.Millisecond, 99})
			}
		}
		slices.SortStableFunc(arrivals, func(a, b arrival) int { return int(a.at - b.at) })
		floodCtx, stopFlood := context.WithCancel(context.Background())
		var mu sync.Mutex
		var normal, all sync.WaitGroup
		start := time.Now()
		for _, a := range arrivals {
			time.Sleep(time.Until(start.Add(a.at)))
			ctx := context.Background()
			if a.tenant == 99 {
				ctx = floodCtx
			}
			if tenants {
				ctx = ContextWithCall(ctx, Call{Tenant: fmt.Sprintf("tenant-%d", a.tenant), Weight: 1})
			}
			wg := &all
			if a.tenant != 99 {
				wg = &normal
			}
			wg.Go(func() {
				began := time.Now()
				p, err := tr.Acquire(ctx)
				if err != nil {
					if a.tenant != 99 {
						t.Errorf("tenant %d: %v", a.tenant, err)
					}
					return
				}
				p.Accept()
				if a.tenant != 99 {
					mu.Lock()
					waits = append(waits, time.Since(began))
					mu.Unlock()
				}
			})
		}
		normal.Wait()
		stopFlood()
		all.Wait()
		for _, e := range events {
			if strings.Contains(e.Scope+e.Workload+e.Origin, "tenant-") {
				t.Fatalf("an event carries a tenant key: %+v", e)
			}
		}
	})
	return waits
}

func p99(ws []time.Duration) time.Duration {
	slices.Sort(ws)
	return ws[len(ws)*99/100]
}

// With 100 tenants, one flooding at 100× the others, every other tenant's
// p99 wait stays within 2× of what it is without the flood.
func TestFairTenantsUnderFlood(t *testing.T) {
	calm := p99(floodWaits(t, false, true))
	flooded := p99(floodWaits(t, true, true))
	t.Logf("p99 wait of the 99 tenants: %v alone, %v beside the flood", calm, flooded)
	if flooded > 2*calm {
		t.Errorf("p99 wait beside the flood = %v, more than twice the %v without it", flooded, calm)
	}
	// The same flood without tenants starves the others: the test can tell.
	if fifo := p99(floodWaits(t, true, false)); fifo <= 2*calm {
		t.Errorf("without tenants the flood left the p99 at %v, within 2× of %v: the test does not discriminate", fifo, calm)
	} else {
		t.Logf("without tenants (one FIFO line) the p99 is %v", fifo)
	}
}

// Weights share the workload: a tenant of weight 3 beside one of weight 1,
// both backlogged, is served three times as often.
func TestFairTenantsWeights(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls []tenantCall
		for i := range 40 {
			c := tenantCall{"heavy", 3}
			if i%2 == 1 {
				c = tenantCall{"light", 1}
			}
			calls = append(calls, c)
		}
		order := servedOrder(t, New(nil, WithConcurrency(1)), calls)
		heavy := strings.Count(strings.Join(order[:20], " "), "heavy")
		if heavy != 15 {
			t.Errorf("of the first 20 served, %d were heavy, want 15 (3:1): %v", heavy, order[:20])
		}
	})
}

// WithTenant names a request's tenant from the request itself: a tenant
// arriving behind another's flood is served after the flood's first call,
// not after all of it.
func TestWithTenantFromRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var order []string
		api := &stubAPI{clock: clock.System, respond: func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			order = append(order, req.Header.Get("X-Customer"))
			mu.Unlock()
			return okResponse(req), nil
		}}
		tr := New(api, WithConcurrency(1), WithTenant(func(req *http.Request) (string, float64) {
			return req.Header.Get("X-Customer"), 1
		}))
		holder := mustAcquire(t, tr, context.Background())
		var wg sync.WaitGroup
		for _, who := range []string{"a", "a", "a", "a", "a", "b"} {
			wg.Go(func() {
				req, _ := http.NewRequest(http.MethodGet, "http://api.test/", nil)
				req.Header.Set("X-Customer", who)
				resp, err := tr.RoundTrip(req)
				mustNotErr(t, err)
				resp.Body.Close()
			})
			synctest.Wait()
		}
		holder.Accept()
		wg.Wait()
		if got := strings.Join(order, ""); got != "abaaaa" {
			t.Errorf("served %s, want abaaaa", got)
		}
	})
	if New(nil, WithTenant(nil)).Err() == nil {
		t.Error("WithTenant(nil) is accepted")
	}
}
