package fleettest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/internal/testservers"
	"github.com/pacer-go/pacer/period"
	"github.com/pacer-go/pacer/reconcile"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/store/redisstore"
	"github.com/pacer-go/pacer/usage/prices"
)

// A fleet of 4 Transports, each with its own connection to one Redis,
// spends two workloads' daily budgets in one OpenAI project; the provider
// bills twice what they were charged. One reconciliation corrects the
// budgets' ledgers in the store, and every instance then spends only what
// is left after it: the fleet admits as many more calls as the budgets
// hold less the bill, not less the charges. A later poll, the bill and
// the charges agreeing, corrects nothing more.
func TestReconcileCorrectsAFleetOnRedis(t *testing.T) {
	t.Parallel()
	addr := testservers.RedisAddr(t)
	prefix := "reconcile-" + randomName()
	const (
		instances = 4
		cent      = 0.01
		budget    = 1.00 // a day, per workload, for the fleet
	)
	bill := &costsAPI{}
	srv := httptest.NewServer(bill)
	defer srv.Close()

	trs := redisFleet(t, addr, prefix, instances, budget)
	r := reconciler(t, srv.URL, trs, true)

	// Each instance makes 5 calls of each workload, a cent each: $0.40 in
	// all, which the provider bills $0.80.
	callEach(t, trs, 5)
	bill.set(0.80)
	if err := r.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	g := r.Stats().Groups[0]
	if !near(g.Drift, 0.40) || !near(g.Corrected, 0.40) {
		t.Fatalf("the reconciliation found %+v, want a drift of $0.40, corrected", g)
	}
	flush(t, trs)

	// Each workload had $0.20 charged and $0.20 corrected: $0.60 is left,
	// 60 calls for the fleet, whichever instance makes them.
	for _, w := range []string{"chat", "batch"} {
		admitted, refused := 0, map[int]bool{}
		for i := 0; len(refused) < instances && admitted < 200; i++ {
			if refused[i%instances] {
				continue
			}
			err := call(trs[i%instances], w)
			var be *pacer.BudgetError
			switch {
			case errors.As(err, &be):
				refused[i%instances] = true
			case err != nil:
				t.Fatal(err)
			default:
				admitted++
			}
		}
		if admitted != 60 || len(refused) != instances {
			t.Errorf("%s: the fleet admitted %d more calls and %d instances refused, want 60 (the budget less the bill) and every instance refusing",
				w, admitted, len(refused))
		}
	}
	flush(t, trs)

	// The provider bills the 120 calls as charged: no drift, no correction.
	bill.set(0.80 + 120*cent)
	if err := r.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if g := r.Stats().Groups[0]; !near(g.Drift, 0) || !near(g.Corrected, 0.40) || g.Reported {
		t.Errorf("after the bill caught up, the reconciliation found %+v, want no drift and the one correction", g)
	}
}

// A fleet of 4 Transports on one Redis, of which the reconciler is given
// one: what was charged is read from the budgets' ledger in Redis, so the
// other three's calls are pacer's charges, not drift. The provider bills
// the fleet's $0.40 and 4 cents more: the drift is those 4 cents, where
// one instance's own count would call $0.34 of it drift.
func TestReconcileReadsTheFleetsChargesOnRedis(t *testing.T) {
	t.Parallel()
	addr := testservers.RedisAddr(t)
	prefix := "reconcile-level-" + randomName()
	bill := &costsAPI{}
	srv := httptest.NewServer(bill)
	defer srv.Close()

	trs := redisFleet(t, addr, prefix, 4, 1)
	r := reconciler(t, srv.URL, trs[:1], false)
	// Each instance makes 5 calls of each workload, a cent each.
	callEach(t, trs, 5)
	flush(t, trs)
	bill.set(0.44)
	if err := r.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	g := r.Stats().Groups[0]
	if !g.Fleet || !near(g.Charged, 0.40) || !near(g.Drift, 0.04) || !g.Reported {
		t.Errorf("the reconciliation found %+v; want the fleet's $0.40 charged, read from Redis, and a drift of $0.04, reported", g)
	}
	for _, w := range g.Workloads {
		if !near(w.Charged, 0.20) {
			t.Errorf("workload %s charged $%v; want the fleet's $0.20", w.Name, w.Charged)
		}
	}
}

// redisFleet returns n Transports, each with its own client of the Redis
// at addr, sharing the store under prefix: workloads chat and batch, each
// with a daily budget of dollars for the fleet, every call charged what its
// context states. The clients are closed when t ends.
func redisFleet(t *testing.T, addr, prefix string, n int, dollars float64) []*pacer.Transport {
	t.Helper()
	b := pacer.Budget{Spend: prices.Dollars(dollars), Period: period.Daily(0, 0, time.UTC)}
	var trs []*pacer.Transport
	for range n {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { rdb.Close() })
		tr := pacer.New(okLLM{}, pacer.WithStore(redisstore.New(rdb, redisstore.WithPrefix(prefix)), store.Policy{OnFailure: store.FailClosed}),
			pacer.WithMeter(pacer.Meter{Estimate: func(*http.Request) (pacer.CallEstimate, bool) { return pacer.CallEstimate{}, false }}),
			pacer.WithWorkload("chat", pacer.Workload{Budget: b}), pacer.WithWorkload("batch", pacer.Workload{Budget: b}))
		if err := tr.Err(); err != nil {
			t.Fatal(err)
		}
		trs = append(trs, tr)
	}
	return trs
}

// reconciler returns a Reconciler of trs against the costs report at
// base, of project proj_1's workloads chat and batch.
func reconciler(t *testing.T, base string, trs []*pacer.Transport, correct bool) *reconcile.Reconciler {
	t.Helper()
	r, err := reconcile.New(reconcile.Config{
		Source:     reconcile.OpenAI("admin-key", reconcile.WithBaseURL(base)),
		Transports: trs, Correct: correct,
		Groups: []reconcile.Group{{By: reconcile.ByProject, ID: "proj_1", Workloads: []string{"chat", "batch"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// callEach makes n calls of each workload, chat and batch, on each of trs.
func callEach(t *testing.T, trs []*pacer.Transport, n int) {
	t.Helper()
	for _, tr := range trs {
		for _, w := range []string{"chat", "batch"} {
			for range n {
				if err := call(tr, w); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func flush(t *testing.T, trs []*pacer.Transport) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tr := range trs {
		if err := tr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// call makes one call of workload through tr, charged a cent.
func call(tr *pacer.Transport, workload string) error {
	ctx := pacer.ContextWithSpend(pacer.ContextWithWorkload(context.Background(), workload), prices.Dollars(0.01))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://llm.test/v1/chat/completions", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// okLLM answers every call at once.
type okLLM struct{}

func (okLLM) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}")), Request: req, Header: http.Header{}}, nil
}

// costsAPI is OpenAI's organization costs report (see reconcile.OpenAI),
// billing project proj_1 what the test sets, in today's bucket.
type costsAPI struct {
	mu  sync.Mutex
	usd float64
}

func (c *costsAPI) set(usd float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.usd = usd
}

func (c *costsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.URL.Path != "/v1/organization/costs" || r.URL.Query().Get("group_by") != "project_id" || r.Header.Get("Authorization") != "Bearer admin-key" {
		http.Error(w, `{"error":{"message":"not the costs report"}}`, http.StatusBadRequest)
		return
	}
	day := time.Now().UTC().Truncate(24 * time.Hour)
	json.NewEncoder(w).Encode(map[string]any{"object": "page", "has_more": false, "next_page": nil, "data": []any{map[string]any{
		"object": "bucket", "start_time": day.Unix(), "end_time": day.Add(24 * time.Hour).Unix(),
		"results": []any{map[string]any{"object": "organization.costs.result", "amount": map[string]any{"value": c.usd, "currency": "usd"}, "project_id": "proj_1"}},
	}}})
}
