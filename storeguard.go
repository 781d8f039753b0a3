package pacer

import (
	"context"
	"time"

	"github.com/pacer-go/pacer/internal/storeguard"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/store"
)

// The seam into internal/storeguard, which applies a store.Policy to a
// shared store: its failure mode, its timeout, the writes sent in the
// background, and this process's own count of each budget. What it finds
// out reaches the Transport's observers and log through the hooks below.

// guardStore returns the guard of s under p, a policy WithStore checked,
// reporting to t's observers and log on t's clock.
func (t *Transport) guardStore(s store.Store, p store.Policy) *storeguard.Guard {
	h := storeguard.Hooks{
		Now: t.clock.Now,
		Warn: func(scope string, err error) {
			t.emit(observe.Event{Kind: observe.EventStoreFailure, Scope: scope, Err: err})
			t.log.Warn("pacer: a write to the shared store failed", "scope", scope, "err", err)
		},
	}
	if len(t.observers) > 0 {
		// A failure the policy covers returns no error, so no caller
		// would report it.
		h.Covered = func(scope string, err error) {
			t.emit(observe.Event{Kind: observe.EventStoreFailure, Scope: scope, Err: err})
		}
	}
	return storeguard.New(s, p, h)
}

// takeBudget spends a workload's budget from the Transport's store, through
// the guard's rules for budgets when the store is shared.
func (t *Transport) takeBudget(ctx context.Context, now time.Time, demands []store.Demand, follow bool) (store.Decision, error) {
	if t.guard != nil {
		return t.guard.TakeBudget(ctx, now, demands, follow)
	}
	return t.store.Take(ctx, now, demands)
}

// refundBudget gives back what takeBudget took for a call that was not
// sent. It never waits for a shared store.
func (t *Transport) refundBudget(ctx context.Context, now time.Time, demands []store.Demand) error {
	if t.guard != nil {
		return t.guard.RefundBudget(ctx, now, demands)
	}
	return t.store.Refund(ctx, now, demands)
}

// adjustOrRefund settles demands on s: with Adjust if s is a
// store.Adjuster, else by refunding what was overestimated.
func adjustOrRefund(ctx context.Context, s store.Store, now time.Time, demands []store.Demand) error {
	return storeguard.AdjustOrRefund(ctx, s, now, demands)
}
