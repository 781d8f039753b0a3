package pacer

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/usage/prices"
)

// A cost settled far beyond the charge leaves the bucket owing at most one
// burst, and no more than it refills in WithMaxWait (a per-day scope's
// burst takes hours): however large the count, the scope sends again
// soon. A negative count gives the whole charge back.
func TestPermitSettleBoundsDebt(t *testing.T) {
	// 6,000 tokens a minute, burst 600: 100 a second.
	tpm := Scope{Name: "tpm", Unit: "tokens", Limit: Limit{Count: 6000, Per: time.Minute, Burst: 600}}
	// 86,400 tokens a day, burst 3,600: 1 a second, and a minute's wait
	// refills 60.
	tpd := Scope{Name: "tpd", Unit: "tokens", Limit: Limit{Count: 86400, Per: 24 * time.Hour, Burst: 3600}}
	for _, n := range []int64{100_000, 1e9, 1e15, math.MaxInt64} {
		t.Run(strconv.FormatInt(n, 10), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := New(nil, WithScope(tpm), WithScope(tpd), WithHeadroom(1), WithMaxWait(time.Minute))
				ctx := ContextWithCall(context.Background(), Call{FailFast: true})
				// The call took 100 of 600 and reports n: the bucket is charged one
				// burst more, owes 100, and a call of 100 waits 2s.
				mustAcquire(t, tr, ctx, Charge{Scope: "tpm", Cost: 100}).Settle("tokens", n).Accept()
				_, err := tr.TryAcquire(ctx, Charge{Scope: "tpm", Cost: 100})
				if te := asThrottled(t, err); te.RetryAfter != 2*time.Second {
					t.Errorf("Settle(%d) on a burst of 600: the next call waits %v, want 2s", n, te.RetryAfter)
				}
				// The per-day scope, emptied, owes 60: a call of 1 waits 61s.
				mustAcquire(t, tr, ctx, Charge{Scope: "tpd", Cost: 3600}).Settle("tokens", n).Accept()
				_, err = tr.TryAcquire(ctx, Charge{Scope: "tpd", Cost: 1})
				if te := asThrottled(t, err); te.RetryAfter != 61*time.Second {
					t.Errorf("Settle(%d) on a per-day scope: the next call waits %v, want 61s", n, te.RetryAfter)
				}
			})
		})
	}
	for _, n := range []int64{-5, math.MinInt64} {
		t.Run(strconv.FormatInt(n, 10), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := New(nil, WithScope(tpm), WithHeadroom(1))
				ctx := context.Background()
				mustAcquire(t, tr, ctx, Charge{Scope: "tpm", Cost: 600}).Settle("tokens", n).Accept()
				if _, err := tr.TryAcquire(ctx, Charge{Scope: "tpm", Cost: 600}); err != nil {
					t.Errorf("Settle(%d): the charge of 600 did not come back: %v", n, err)
				}
			})
		})
	}
}

// A budget is billing: what Settle reports is charged to it in full, far
// beyond its Limit. A count that large is an event and a warning naming
// the permit's workload and scope, and it locks no scope: a workload
// without the budget sends again within WithMaxWait.
func TestPermitSettleChargesBudgetInFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log strings.Builder
		var implausible []observe.Event
		tpm := Scope{Name: "tpm", Unit: "tokens", Limit: Limit{Count: 6000, Per: time.Minute, Burst: 600}}
		tr := New(nil, WithScope(tpm), WithHeadroom(1), WithLogger(slogTo(&log)),
			WithWorkload("batch", Workload{Budget: Budget{Limit: 10_000, Per: time.Hour, Unit: "tokens"}}),
			WithObserver(observe.Func(func(e observe.Event) {
				if e.Kind == observe.EventImplausibleUsage {
					implausible = append(implausible, e)
				}
			})))
		batch := ContextWithWorkload(context.Background(), "batch")
		// A plausible count settles quietly, and in full.
		mustAcquire(t, tr, batch, Charge{Scope: "tpm", Cost: 100}).Settle("tokens", 300).Accept()
		if got := tr.Stats().Workloads[0].Spent; got != 300 {
			t.Fatalf("spent %v, want the 300 settled", got)
		}
		time.Sleep(10 * time.Second) // tpm refills
		mustAcquire(t, tr, batch, Charge{Scope: "tpm", Cost: 100}).Settle("tokens", 1e9).Accept()
		if got := tr.Stats().Workloads[0].Spent; got != 1e9+300 {
			t.Errorf("spent %v, want 1e9+300: a budget is charged what was reported, in full", got)
		}
		if len(implausible) != 1 || implausible[0].Scope != "tpm" || implausible[0].Workload != "batch" || implausible[0].Err == nil {
			t.Errorf("implausible-count events = %+v, want one on tpm for batch", implausible)
		}
		if !strings.Contains(log.String(), "1000000000 tokens") || !strings.Contains(log.String(), "batch") {
			t.Errorf("log = %q, want a warning naming the count and the workload", log.String())
		}
		var be *BudgetError
		if _, err := tr.TryAcquire(batch, Charge{Scope: "tpm", Cost: 100}); !errors.As(err, &be) {
			t.Errorf("after the budget was overspent: err = %v, want a *BudgetError", err)
		}
		// tpm is charged one burst more than 100 of 600: it owes 100, and a call of 100 waits 2s.
		_, err := tr.TryAcquire(context.Background(), Charge{Scope: "tpm", Cost: 100})
		if te := asThrottled(t, err); te.RetryAfter != 2*time.Second {
			t.Errorf("the scope after the absurd count: wait %v, want 2s", te.RetryAfter)
		}
	})
}

// On a scope whose burst takes longer than WithMaxWait to refill (a
// per-day limit), reservations owe no more than it refills in MaxWait: a
// reservation never stops other calls for longer.
func TestReservationDebtWithinMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 1 token a second, burst 3,600: a minute refills 60.
		tpd := Scope{Name: "tpd", Unit: "tokens", Limit: Limit{Count: 86400, Per: 24 * time.Hour, Burst: 3600}}
		tr := New(nil, WithScope(tpd), WithHeadroom(1), WithMaxWait(time.Minute))
		bg := context.Background()
		r, err := tr.Reserve(bg, Charge{Scope: "tpd", Cost: 3600})
		mustNotErr(t, err)
		defer r.Cancel()
		owed, err := tr.Reserve(bg, Charge{Scope: "tpd", Cost: 60})
		mustNotErr(t, err)
		defer owed.Cancel()
		if d := owed.Delay(); d != time.Minute {
			t.Fatalf("a reservation owing 60: delay %v, want 1m", d)
		}
		if more, err := tr.Reserve(bg, Charge{Scope: "tpd", Cost: 1}); !errors.Is(err, ErrThrottled) {
			t.Errorf("a reservation owing beyond a minute's refill: delay %v, err = %v; want ErrThrottled", more.Delay(), err)
		}
	})
}

// The debts of many settlements together, not each of them, are repaid
// within WithMaxWait: ten calls that each report a billion tokens on a
// per-day scope leave it owing one maximum wait's refill, not ten.
func TestManySettlementsOweOneMaxWaitTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 86,400 tokens a day, burst 3,600: 1 a second.
		tpd := Scope{Name: "tpd", Unit: "tokens", Limit: Limit{Count: 86400, Per: 24 * time.Hour, Burst: 3600}}
		tr := New(nil, WithScope(tpd), WithHeadroom(1), WithMaxWait(time.Minute), WithLogger(slog.New(slog.DiscardHandler)))
		ctx := ContextWithCall(context.Background(), Call{FailFast: true})
		var permits []*Permit
		for range 10 {
			permits = append(permits, mustAcquire(t, tr, ctx, Charge{Scope: "tpd", Cost: 360}))
		}
		for _, p := range permits {
			p.Settle("tokens", 1e9).Accept()
		}
		// The bucket, emptied, owes 60 at most: a call of 1 waits 61s.
		_, err := tr.TryAcquire(ctx, Charge{Scope: "tpd", Cost: 1})
		if te := asThrottled(t, err); te.RetryAfter > 61*time.Second {
			t.Errorf("after ten settlements of a billion tokens, the next call waits %v, want at most 61s (MaxWait and the call)", te.RetryAfter)
		}
	})
}

// What a Reservation taken ahead leaves owing counts against what a
// settlement may add: together they are repaid within WithMaxWait.
func TestAReservationAndASettlementOweOneMaxWaitTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 6,000 tokens a minute, burst 600: 100 a second; a wait of 5 s
		// refills 500.
		tpm := Scope{Name: "tpm", Unit: "tokens", Limit: Limit{Count: 6000, Per: time.Minute, Burst: 600}}
		tr := New(nil, WithScope(tpm), WithHeadroom(1), WithMaxWait(5*time.Second), WithLogger(slog.New(slog.DiscardHandler)))
		ctx := ContextWithCall(context.Background(), Call{FailFast: true})
		p := mustAcquire(t, tr, ctx, Charge{Scope: "tpm", Cost: 600}) // the bucket is empty
		r, err := tr.Reserve(context.Background(), Charge{Scope: "tpm", Cost: 100})
		mustNotErr(t, err)
		if r.Delay() != time.Second {
			t.Fatalf("the reservation's delay is %v, want 1s", r.Delay())
		}
		p.Settle("tokens", 1e9).Accept()
		defer r.Cancel()
		// The bucket owes 500 at most, the reservation's 100 with the
		// settlement's: a call of 100 waits at most MaxWait and its own
		// second.
		_, err = tr.TryAcquire(ctx, Charge{Scope: "tpm", Cost: 100})
		if te := asThrottled(t, err); te.RetryAfter > 6*time.Second {
			t.Errorf("after a reservation and a settlement of a billion tokens, the next call waits %v, want at most 6s (MaxWait and the call)", te.RetryAfter)
		}
	})
}

// Settle is applied by whichever end comes, Drop's too; a later Settle
// replaces an earlier one; a Settle after the end does nothing, to this
// permit or to the pooled call that now serves another.
func TestPermitSettleAtTheEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tpm := Scope{Name: "tpm", Unit: "tokens", Limit: Limit{Count: 6000, Per: time.Minute, Burst: 600}}
		tr := New(nil, WithScope(tpm), WithHeadroom(1))
		ctx := ContextWithCall(context.Background(), Call{FailFast: true})
		// Charged 600, settled at 0 by a Drop: the whole charge comes back.
		p := mustAcquire(t, tr, ctx, Charge{Scope: "tpm", Cost: 600})
		p.Settle("tokens", 500).Settle("tokens", 0).Drop()
		q := mustAcquire(t, tr, ctx, Charge{Scope: "tpm", Cost: 600})
		// p's call most likely serves q now: settling p again must not
		// give q's charge back.
		p.Settle("tokens", 0)
		p.SettleSpend(prices.Dollars(1))
		q.Accept()
		if _, err := tr.TryAcquire(ctx, Charge{Scope: "tpm", Cost: 1}); err == nil {
			t.Error("a Settle after its permit's end gave tokens back")
		}
	})
}
