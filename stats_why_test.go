package pacer

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/observe"
)

const statsURL = "http://api.test/"

// scopeStats returns the named scope's Stats, or fails.
func scopeStats(t *testing.T, tr *Transport, name string) ScopeStats {
	t.Helper()
	for _, s := range tr.Stats().Scopes {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no scope %q in Stats", name)
	return ScopeStats{}
}

// workloadStats returns the named workload's Stats, or fails.
func workloadStats(t *testing.T, tr *Transport, name string) WorkloadStats {
	t.Helper()
	for _, w := range tr.Stats().Workloads {
		if w.Name == name {
			return w
		}
	}
	t.Fatalf("no workload %q in Stats", name)
	return WorkloadStats{}
}

// checkWaiting fails unless Stats say that one call of workload waits on
// the scope, held back by reason, since since.
func checkWaiting(t *testing.T, s ScopeStats, reason observe.Reason, workload string, since time.Time) {
	t.Helper()
	if s.Waiting != 1 || !maps1(s.WaitingBy, reason) || s.WaitingReason != reason || s.WaitingWorkload != workload || !s.WaitingSince.Equal(since) {
		t.Errorf("scope %q: waiting %d by %v, the oldest of %q held by %q since %v; want one call of %q held by %q since %v",
			s.Name, s.Waiting, s.WaitingBy, s.WaitingWorkload, s.WaitingReason, s.WaitingSince, workload, reason, since)
	}
}

func maps1(m map[observe.Reason]int, r observe.Reason) bool { return len(m) == 1 && m[r] == 1 }

// Every wait is explained by Stats alone, read while the call waits: the
// scope, what holds the call back, and since when. Here a reserve, a
// lowered cap and a provider's pause each hold a call.
func TestStatsSayWhyACallWaits(t *testing.T) {
	t.Run("reserve", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tr := New(&stubAPI{clock: clock.System}, WithHeadroom(1), WithoutRetry(),
				WithLimit(Limit{Count: 1, Per: time.Second, Burst: 10}),
				WithWorkload("interactive", Workload{Reserve: 0.5}), WithWorkload("batch", Workload{}))
			batch := ContextWithWorkload(context.Background(), "batch")
			for range 5 { // 10 tokens to 5: the 5 left are interactive's
				mustNotErr(t, get(tr, batch, statsURL))
			}
			// The tokens are there, but the reserve keeps them: the error
			// says so, and so does Stats.
			failFast := func() {
				t.Helper()
				err := get(tr, ContextWithCall(batch, Call{FailFast: true}), statsURL)
				if te := asThrottled(t, err); te.Reason != observe.ReasonReserve {
					t.Errorf("a call the reserve holds back: %v, want reason %q", err, observe.ReasonReserve)
				}
			}
			failFast()
			time.Sleep(500 * time.Millisecond)
			start := time.Now()
			done := make(chan error, 1)
			go func() { done <- get(tr, ContextWithCost(batch, UnitRequests, 3), statsURL) }() // 5.5 tokens: waits 2.5 s
			synctest.Wait()
			time.Sleep(2 * time.Second)
			checkWaiting(t, scopeStats(t, tr, DefaultScope), observe.ReasonReserve, "batch", start)
			failFast() // behind the call that waits: the reserve holds it too
			refusedAt := time.Now()
			mustNotErr(t, <-done)
			w := workloadStats(t, tr, "batch")
			if w.Admitted != 6 || w.Waited != 1 || w.Throttled != 2 || w.Refused != 0 ||
				w.LastRefusedReason != observe.ReasonReserve || w.LastRefusedScope != DefaultScope || !w.LastRefused.Equal(refusedAt) {
				t.Errorf("batch: %+v; want 6 admitted, 1 of them after waiting, 2 throttled by the reserve on %q, the last at %v", w, DefaultScope, refusedAt)
			}
			if s := scopeStats(t, tr, DefaultScope); s.Waiting != 0 || s.WaitingBy != nil || !s.WaitingSince.IsZero() || s.WaitingReason != "" {
				t.Errorf("after the wait: %+v, want no call waiting", s)
			}
		})
	})
	t.Run("lowered cap", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			tr := New(nil, WithConcurrency(4))
			// Two bare rejections a second apart: the cap of 4 is 2.
			mustAcquire(t, tr, context.Background()).Reject(0)
			time.Sleep(time.Second)
			mustAcquire(t, tr, context.Background()).Reject(0)
			held := []*Permit{mustAcquire(t, tr, context.Background()), mustAcquire(t, tr, context.Background())}
			start := time.Now()
			done := make(chan *Permit, 1)
			go func() { done <- mustAcquire(t, tr, context.Background()) }()
			synctest.Wait()
			time.Sleep(100 * time.Millisecond) // the cap climbs back to 3 within the second
			synctest.Wait()
			s := scopeStats(t, tr, DefaultScope)
			checkWaiting(t, s, observe.ReasonConcurrency, DefaultWorkload, start)
			if s.ConcurrencyNow != 2 || s.Concurrency != 4 || s.Rejected != 2 {
				t.Errorf("cap %d of %d after %d rejections; want 2 of 4 after 2", s.ConcurrencyNow, s.Concurrency, s.Rejected)
			}
			for _, p := range held {
				p.Accept()
			}
			(<-done).Accept()
		})
	})
	t.Run("cooldown", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			api := &scriptedAPI{steps: []scripted{{http.StatusTooManyRequests, map[string]string{"Retry-After": "30"}}}}
			tr := New(api, WithLimit(PerSecond(100)), WithoutRetry())
			get(tr, context.Background(), statsURL) // a 429: a pause of 30 s
			start := time.Now()
			done := make(chan error, 1)
			go func() { done <- get(tr, context.Background(), statsURL) }()
			synctest.Wait()
			time.Sleep(10 * time.Second)
			s := scopeStats(t, tr, DefaultScope)
			checkWaiting(t, s, observe.ReasonCooldown, DefaultWorkload, start)
			if s.Cooldown != 20*time.Second || s.Rejected != 1 {
				t.Errorf("cooldown %v after %d rejections; want 20s after 1", s.Cooldown, s.Rejected)
			}
			mustNotErr(t, <-done)
			if w := workloadStats(t, tr, DefaultWorkload); w.Admitted != 2 || w.Waited != 1 || w.Rejected != 1 {
				t.Errorf("default workload: %+v; want 2 admitted, 1 after waiting, 1 rejected by the provider", w)
			}
		})
	})
}

// "Why was it refused?" Stats says it for a budget: the reason, when, and
// how many; and a daily budget prints as one, in every form.
func TestStatsSayWhyABudgetRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(&stubAPI{clock: clock.System}, WithWorkload("nightly", Workload{Budget: Budget{Limit: 2, Per: 24 * time.Hour}}))
		nightly := ContextWithWorkload(context.Background(), "nightly")
		mustNotErr(t, get(tr, nightly, statsURL))
		mustNotErr(t, get(tr, nightly, statsURL))
		time.Sleep(time.Minute)
		if err := get(tr, nightly, statsURL); err == nil {
			t.Fatal("a third call past a budget of 2 was sent")
		}
		at := time.Now()
		time.Sleep(time.Minute)
		w := workloadStats(t, tr, "nightly")
		if w.Admitted != 2 || w.Refused != 1 || w.Throttled != 0 || w.LastRefusedReason != observe.ReasonBudget || w.LastRefusedScope != "" || !w.LastRefused.Equal(at) {
			t.Errorf("nightly: %+v; want 2 admitted and 1 refused by its budget at %v", w, at)
		}
		for _, s := range []string{fmt.Sprintf("%+v", tr.Stats()), fmt.Sprintf("%+v", w.Budget), fmt.Sprint(w.Budget.Period)} {
			if strings.Contains(s, "invalid") {
				t.Errorf("a valid budget prints as invalid: %s", s)
			}
		}
	})
}

// Stats lists DefaultScope and DefaultWorkload only when they were declared
// or something was charged to them.
func TestStatsListTheDefaultsOnlyWhenUsed(t *testing.T) {
	names := func(st Stats) (scopes, workloads []string) {
		for _, s := range st.Scopes {
			scopes = append(scopes, s.Name)
		}
		for _, w := range st.Workloads {
			workloads = append(workloads, w.Name)
		}
		return scopes, workloads
	}
	check := func(t *testing.T, tr *Transport, scopes, workloads []string) {
		t.Helper()
		gotScopes, gotWorkloads := names(tr.Stats())
		if !slices.Equal(gotScopes, scopes) || !slices.Equal(gotWorkloads, workloads) {
			t.Errorf("Stats list scopes %q and workloads %q, want %q and %q", gotScopes, gotWorkloads, scopes, workloads)
		}
	}
	api := &stubAPI{clock: clock.System}
	tr := New(api, WithScope(Scope{Name: "api", Limit: PerSecond(10)}), WithWorkload("batch", Workload{}),
		WithRoute(func(_ *http.Request, _ []Charge) []Charge { return []Charge{{Scope: "api"}} }))
	check(t, tr, []string{"api"}, []string{"batch"})
	mustNotErr(t, get(tr, ContextWithWorkload(context.Background(), "batch"), statsURL))
	check(t, tr, []string{"api"}, []string{"batch"})
	mustNotErr(t, get(tr, context.Background(), statsURL)) // charged to the default workload
	check(t, tr, []string{"api"}, []string{"batch", DefaultWorkload})
	p := mustAcquire(t, tr, context.Background()) // a permit charged to nothing: DefaultScope
	p.Accept()
	check(t, tr, []string{"api", DefaultScope}, []string{"batch", DefaultWorkload})

	// Declared, they are listed at once.
	check(t, New(api, WithLimit(PerSecond(10)), WithWorkload(DefaultWorkload, Workload{})), []string{DefaultScope}, []string{DefaultWorkload})
	check(t, New(api, WithConcurrency(2)), []string{DefaultScope}, nil)
}

// A keyed scope says its lowest bucket and which key that is.
func TestStatsSayTheLowestKey(t *testing.T) {
	tr := New(&stubAPI{clock: clock.System}, WithHeadroom(1), WithoutRetry(),
		WithScope(Scope{Name: "per-user", Limit: Limit{Count: 10, Per: time.Hour, Burst: 10}}),
		WithRoute(func(req *http.Request, _ []Charge) []Charge {
			return []Charge{{Scope: "per-user", Key: req.URL.Query().Get("user")}}
		}))
	for _, user := range []string{"a", "b", "b", "b", "c"} {
		mustNotErr(t, get(tr, context.Background(), statsURL+"?user="+user))
	}
	s := scopeStats(t, tr, "per-user")
	if !s.TokensKnown || s.TokensKey != "b" || s.Tokens < 7 || s.Tokens > 7.01 || s.Keys != 3 {
		t.Errorf("per-user: tokens %v on key %q (known %v) of %d keys; want about 7 on key \"b\" of 3", s.Tokens, s.TokensKey, s.TokensKnown, s.Keys)
	}
}
