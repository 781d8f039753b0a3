package pacer

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/internal/pace"
	"github.com/pacer-go/pacer/store"
)

func TestStatsDescribeTheScopes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &scriptedAPI{steps: []scripted{{http.StatusTooManyRequests, map[string]string{"Retry-After": "30"}}}}
		tr := New(api, WithLimit(PerSecond(100)), WithConcurrency(4), WithoutRetry(),
			WithScope(Scope{Name: "key", Limit: PerSecond(10)}),
			WithScope(Scope{Name: "account", Limit: PerSecond(10)}),
			WithWorkload("interactive", Workload{Reserve: 0.25}))
		get(tr, context.Background(), "http://api.test/") // a 429: cut and paused
		req, _ := http.NewRequestWithContext(ContextWithWorkload(context.Background(), "interactive"), http.MethodGet, "http://api.test/", nil)
		go func() { // waits out the pause
			if resp, err := tr.RoundTrip(req); err == nil {
				resp.Body.Close()
			}
		}()
		synctest.Wait()
		st := tr.Stats()
		if len(st.Scopes) != 3 || st.Scopes[1].Name != DefaultScope {
			t.Fatalf("scopes = %+v, want account, default, key", st.Scopes)
		}
		d := st.Scopes[1]
		// The first call's 429 leaves no history to measure by: the pace halves.
		if d.Cooldown != 30*time.Second || d.Factor != pace.ShortHistoryCut || d.Rate != 90*pace.ShortHistoryCut || d.Waiting != 1 || d.Admitted != 1 ||
			d.Why != "paused for the provider's Retry-After; then recovering from a refusal" {
			t.Errorf("default scope = %+v", d)
		}
		time.Sleep(31 * time.Second)
		synctest.Wait()
		if d := tr.Stats().Scopes[1]; d.InFlight != 0 || d.Waiting != 0 || d.Cooldown != 0 || d.Admitted != 2 {
			t.Errorf("after the pause: %+v", d)
		}
	})
}

// Stats say what pauses a scope, as well as what sets its pace: a scope
// paused for a minute by a count of none left read as paced by "the
// configured limit", while it sent nothing.
func TestStatsSayWhatPausesAScope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &scriptedAPI{steps: []scripted{{http.StatusOK, map[string]string{
			"X-RateLimit-Limit": "600", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "30"}}}}
		tr := New(api, WithLimit(PerMinute(600)), WithoutRetry())
		get(tr, context.Background(), "http://api.test/")
		st := tr.Stats().Scopes[0]
		if st.Cooldown <= 0 || !strings.HasPrefix(st.Why, "paused until the reset: the provider reported none left; then ") {
			t.Errorf("after none left until a reset 30 s away: cooldown %v, why %q", st.Cooldown, st.Why)
		}
		time.Sleep(31 * time.Second)
		if st := tr.Stats().Scopes[0]; st.Cooldown != 0 || strings.HasPrefix(st.Why, "paused") {
			t.Errorf("after the pause: cooldown %v, why %q", st.Cooldown, st.Why)
		}
	})
}

func TestStatsCountBudgetsAndTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &stubAPI{clock: clock.System}
		tr := New(api, WithLimit(Limit{Count: 10, Per: time.Second, Burst: 10}), WithHeadroom(1),
			WithWorkload("nightly", Workload{Budget: Budget{Limit: 5, Per: time.Hour}}))
		nightly := ContextWithWorkload(context.Background(), "nightly")
		for range 3 {
			mustNotErr(t, get(tr, nightly, "http://api.test/"))
		}
		start := time.Now()
		time.Sleep(10 * time.Minute)
		st := tr.Stats()
		want := []WorkloadStats{ // the default workload, neither declared nor used yet, is not listed
			{Name: "nightly", Admitted: 3, Budget: Budget{Limit: 5, Per: time.Hour}, Unit: UnitRequests, Limit: 5, Spent: 3, ResetIn: 50 * time.Minute, PeriodEnd: start.Add(time.Hour),
				// 3 spent in the ten minutes since the period began: the 2
				// left last 400 s more, 43m20s before the period ends.
				SpendRate: 3.0 / 600, SpendWindow: 10 * time.Minute,
				RunsOut: start.Add(10*time.Minute + 400*time.Second), RunsOutIn: 400 * time.Second, RunsOutEarly: 43*time.Minute + 20*time.Second},
		}
		if !slices.Equal(st.Workloads, want) {
			t.Errorf("workloads = %+v, want %+v", st.Workloads, want)
		}
		if d := st.Scopes[0]; !d.TokensKnown || d.Tokens != 10 {
			t.Errorf("after ten minutes the bucket holds %v (known %v), want 10", d.Tokens, d.TokensKnown)
		}
		mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		if d := tr.Stats().Scopes[0]; d.Tokens != 8 {
			t.Errorf("after two calls the bucket holds %v, want 8", d.Tokens)
		}
		time.Sleep(time.Hour)
		if w := tr.Stats().Workloads[1]; w.Spent != 0 || w.ResetIn != 0 {
			t.Errorf("after the period: %+v, want nothing spent", w)
		}
		// A call refused by the budget spends nothing.
		for range 6 {
			get(tr, nightly, "http://api.test/")
		}
		if w := tr.Stats().Workloads[1]; w.Spent != 5 {
			t.Errorf("spent %v, want the budget of 5", w.Spent)
		}
	})
}

func TestStatsDoNotAskASharedStoreForTokens(t *testing.T) {
	tr := New(nil, WithLimit(PerSecond(10)), WithStore(&countingStore{Store: store.NewMemory()}, store.Policy{}))
	if d := tr.Stats().Scopes[0]; d.TokensKnown {
		t.Errorf("tokens known for a shared store: %+v", d)
	}
}

// countingStore is a store that is not the in-memory one.
type countingStore struct{ store.Store }

// A keyed scope counts the calls admitted on every key, those of keys the
// registry has since forgotten included.
func TestStatsCountEveryKeysAdmissions(t *testing.T) {
	api := &stubAPI{clock: clock.System}
	tr := New(api, WithoutRetry(), WithScope(Scope{Name: "per-user", Limit: PerSecond(100)}),
		WithRoute(func(req *http.Request, c []Charge) []Charge {
			return []Charge{{Scope: "per-user", Key: req.URL.Query().Get("user")}}
		}))
	const users = 3 * sweepFloor // enough for the registry to forget some
	for i := range users {
		mustNotErr(t, get(tr, context.Background(), "http://api.test/?user="+strconv.Itoa(i)))
	}
	mustNotErr(t, get(tr, context.Background(), "http://api.test/")) // the key "": the shared bucket
	for _, s := range tr.Stats().Scopes {
		if s.Name != "per-user" {
			continue
		}
		if s.Admitted != users+1 || s.Keys >= users {
			t.Errorf("admitted %d with %d keys held, want %d admitted and fewer keys held", s.Admitted, s.Keys, users+1)
		}
	}
}
