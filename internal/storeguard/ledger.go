package storeguard

import (
	"context"
	"fmt"
	"time"

	"github.com/pacer-go/pacer/store"
)

// The budget ledger is this process's own count of each spend budget,
// kept beside the store's: a budget is a hard cap, so a process never
// spends more than a budget's Limit in one period by its own count,
// whatever the store answers or forgets (see store.Policy.OnFailure).

// TakeBudget spends a workload's budget: demands is its one budget demand,
// taken from this process's ledger first and then from the store. follow
// is the workload's Budget.FollowStoreFailure: without it, a budget fails
// closed while the store is down, whatever the policy; with it, FailClosed
// refuses, FailOpen spends by the ledger alone, and FallBackLocal lets
// this process spend 1/Instances of the budget, counting what it spent
// before the outage.
func (g *Guard) TakeBudget(ctx context.Context, now time.Time, demands []store.Demand, follow bool) (store.Decision, error) {
	// This process's own count comes first, and no store overrules it.
	if dec, _ := g.ledger.Take(ctx, now, demands); !dec.OK {
		return dec, nil
	}
	dec, failed, err := g.takeRemote(ctx, now, demands)
	if err == nil && !failed && dec.OK {
		return dec, nil
	}
	g.ledger.Refund(ctx, now, demands)
	switch {
	case err != nil || !failed:
		return dec, err
	case !follow || g.mode == store.FailClosed:
		return store.Decision{}, fmt.Errorf("%w (a budget fails closed while the store is down, unless its Budget.FollowStoreFailure is set)", g.Unavailable())
	}
	g.cover(demands[0].Scope)
	if g.mode == store.FailOpen {
		return g.ledger.Take(ctx, now, demands)
	}
	// FallBackLocal: 1/instances of the budget in the period, this process's
	// spend before the outage counted: the take must leave the rest.
	share := demands[0]
	share.Floor = share.Burst - share.Burst/float64(g.instances)
	return g.ledger.Take(ctx, now, []store.Demand{share})
}

// RefundBudget gives back what TakeBudget took for a call that was not
// sent. It never waits for the store: the ledger is refunded at once, the
// store in the background.
func (g *Guard) RefundBudget(ctx context.Context, now time.Time, demands []store.Demand) error {
	g.ledger.Refund(ctx, now, demands)
	return g.Refund(ctx, now, demands)
}

// AdjustBudget settles a budget demand (a signed Cost): the ledger at
// once, the store in the background.
func (g *Guard) AdjustBudget(now time.Time, d store.Demand) {
	ds := []store.Demand{d}
	g.ledger.Adjust(context.Background(), now, ds)
	g.Adjust(context.Background(), now, ds)
}
