package pacer

import (
	"context"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/internal/clock"
)

// closeTo reports whether a and b differ by at most a millisecond: the
// forecast's floating point against the test's.
func closeTo(a, b time.Duration) bool { return (a - b).Abs() <= time.Millisecond }

// A backfill spends one request every five seconds of an hourly budget.
// The spend rate is what the budget's count grew by over its window: the
// period so far while it is younger than ten minutes, then the last ten
// minutes from their first ten-second boundary; and the budget runs out
// when what is left is spent at that rate, before its period ends or
// after, and not at all once the spending stops.
func TestForecastSpendRate(t *testing.T) {
	for _, c := range []struct {
		name  string
		limit int64
	}{{"lasts", 1000}, {"runs out early", 300}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := New(&stubAPI{clock: clock.System},
					WithWorkload("backfill", Workload{Budget: Budget{Limit: c.limit, Per: time.Hour}}))
				mustNotErr(t, tr.Err())
				ctx := ContextWithWorkload(context.Background(), "backfill")
				start := time.Now()
				calls, next := 0, time.Duration(0)
				spend := func(until time.Duration) { // a call every five seconds, from 0s to until
					for ; next <= until; next += 5 * time.Second {
						time.Sleep(next - time.Since(start))
						mustNotErr(t, get(tr, ctx, "http://api.test/"))
						calls++
					}
				}
				check := func(at time.Duration, counted int, window time.Duration) {
					t.Helper()
					time.Sleep(at - time.Since(start))
					ws := workloadStats(t, tr, "backfill")
					rate := float64(counted) / window.Seconds()
					if ws.SpendWindow != window || math.Abs(ws.SpendRate-rate) > 1e-12 {
						t.Fatalf("at %v: spend rate %v over %v, want %d over %v = %v", at, ws.SpendRate, ws.SpendWindow, counted, window, rate)
					}
					left := float64(c.limit) - ws.Spent
					in := time.Duration(left / rate * float64(time.Second))
					end := start.Add(time.Hour)
					if !closeTo(ws.RunsOutIn, in) || !ws.RunsOut.Equal(time.Now().Add(ws.RunsOutIn)) || !ws.PeriodEnd.Equal(end) {
						t.Fatalf("at %v: runs out in %v (at %v), want %v at %v a second with %v left", at, ws.RunsOutIn, ws.RunsOut, in, rate, left)
					}
					early := max(0, end.Sub(time.Now().Add(in)))
					if !closeTo(ws.RunsOutEarly, early) {
						t.Fatalf("at %v: runs out %v early, want %v", at, ws.RunsOutEarly, early)
					}
					if c.limit == 300 && early < 30*time.Minute || c.limit == 1000 && early != 0 {
						t.Fatalf("at %v: runs out %v before the period ends: the case is not what it says", at, early)
					}
				}
				spend(2 * time.Minute)
				// The period began with the first call: 25 calls, at 0s to
				// 120s, over the 123s since.
				check(2*time.Minute+3*time.Second, 25, 123*time.Second)
				spend(15 * time.Minute)
				// The window starts at 5m10s, the first ten-second boundary
				// of the last ten minutes: the calls at 310s to 900s.
				check(15*time.Minute+3*time.Second, (900-310)/5+1, 593*time.Second)
				if calls != 181 {
					t.Fatalf("%d calls, want 181", calls)
				}
				// Nothing spent in the last ten minutes: no forecast.
				time.Sleep(25*time.Minute + 57*time.Second)
				ws := workloadStats(t, tr, "backfill")
				if ws.SpendRate != 0 || ws.SpendWindow <= 9*time.Minute || !ws.RunsOut.IsZero() || ws.RunsOutIn != 0 || ws.RunsOutEarly != 0 {
					t.Fatalf("idle: %+v, want a rate of zero over ten minutes, and no runout", ws)
				}
			})
		})
	}
}

// A budget spent to its limit runs out now, however it was spent.
func TestForecastSpentBudgetRunsOutNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(&stubAPI{clock: clock.System}, WithWorkload("backfill", Workload{Budget: Budget{Limit: 3, Per: time.Hour}}))
		ctx := ContextWithWorkload(context.Background(), "backfill")
		for range 3 {
			mustNotErr(t, get(tr, ctx, "http://api.test/"))
			time.Sleep(time.Second)
		}
		ws := workloadStats(t, tr, "backfill")
		if !ws.RunsOut.Equal(time.Now()) || ws.RunsOutIn != 0 || ws.RunsOutEarly != time.Hour-3*time.Second || ws.SpendRate != 1 {
			t.Fatalf("spent: %+v, want it run out now, 3/3s a second", ws)
		}
	})
}

// Ten calls wait behind a scope that admits one a second (0.9 after the
// default headroom): the backlog is their cost, and it drains in what that
// costs at that pace.
func TestForecastBacklogDrains(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(&stubAPI{clock: clock.System}, WithLimit(Limit{Count: 1, Per: time.Second, Burst: 1}))
		mustNotErr(t, tr.Err())
		var wg sync.WaitGroup
		for range 11 {
			wg.Go(func() { mustNotErr(t, get(tr, context.Background(), "http://api.test/")) })
		}
		synctest.Wait()
		sc := tr.Stats().Scopes[0]
		want := time.Duration(math.Ceil(10 / sc.Rate * float64(time.Second)))
		if sc.Waiting != 10 || sc.BacklogCost != 10 || sc.DrainIn != want || sc.Rate != 0.9 {
			t.Fatalf("backlog %v of %d calls drains in %v at %v a second; want 10 of 10 in %v", sc.BacklogCost, sc.Waiting, sc.DrainIn, sc.Rate, want)
		}
		time.Sleep(3500 * time.Millisecond)
		sc = tr.Stats().Scopes[0]
		want = time.Duration(math.Ceil(7 / 0.9 * float64(time.Second)))
		if sc.Waiting != 7 || sc.BacklogCost != 7 || sc.DrainIn != want {
			t.Fatalf("later: backlog %v of %d calls drains in %v; want 7 of 7 in %v", sc.BacklogCost, sc.Waiting, sc.DrainIn, want)
		}
		wg.Wait()
		if sc = tr.Stats().Scopes[0]; sc.BacklogCost != 0 || sc.DrainIn != 0 {
			t.Fatalf("drained: backlog %v drains in %v; want none", sc.BacklogCost, sc.DrainIn)
		}
	})
}

// A settlement counts in the spend rate when it is made, not when the call
// began: a permit reserves 10 tokens at 0s and reports 100 at 25s; ten
// minutes and fifteen seconds in, the window starts at 20s, before the
// settlement and after the reservation, so the rate is the 90 the
// settlement added, over 595 s.
func TestForecastCountsSettlementsWhenMade(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(&stubAPI{clock: clock.System},
			WithWorkload("backfill", Workload{Budget: Budget{Limit: 10_000, Unit: "tokens", Stated: true, Per: time.Hour}}))
		mustNotErr(t, tr.Err())
		ctx := ContextWithCost(ContextWithWorkload(context.Background(), "backfill"), "tokens", 10)
		p, err := tr.Acquire(ctx)
		mustNotErr(t, err)
		time.Sleep(25 * time.Second)
		p.Settle("tokens", 100).Accept()
		time.Sleep(10*time.Minute + 15*time.Second - 25*time.Second)
		ws := workloadStats(t, tr, "backfill")
		if rate := 90.0 / 595; ws.Spent != 100 || ws.SpendWindow != 595*time.Second || math.Abs(ws.SpendRate-rate) > 1e-12 {
			t.Fatalf("spent %v at %v a second over %v; want 100, at 90/595 = %v over 9m55s", ws.Spent, ws.SpendRate, ws.SpendWindow, rate)
		}
	})
}
