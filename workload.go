package pacer

import (
	"context"
	"fmt"
	"time"
)

// DefaultWorkload is the workload of a request whose context names none, or
// names one the Transport does not know. Configure it like any other, with
// WithWorkload(DefaultWorkload, …).
const DefaultWorkload = "default"

// A Workload is a class of traffic that shares the Transport's scopes with
// others: interactive requests and a nightly backfill, say.
//
// While several workloads wait on a scope, the one with the larger Reserve
// is served first; within a workload, calls are served in arrival order.
// The scheduler is work-conserving: a workload may use the whole rate and
// every slot while the others are idle. What a workload reserves is kept for
// it in two ways:
//
//   - The reserved part of a scope's burst is never spent by others, so it
//     is there the instant its workload comes back.
//   - Reserved concurrency slots are lent: others may take them while the
//     workload has no call waiting on the scope. A lent slot comes back when
//     the borrower's call ends (no call is cut short): a workload holding
//     fewer slots than it reserves is first in line for the next slot freed,
//     before every other workload whatever its Reserve, and while it waits
//     no other workload takes a slot it reserved.
type Workload struct {
	// Reserve is the share (0 to 1) of every scope's burst and concurrency
	// kept for this workload (see above), and its priority in queues. The
	// workload itself may use everything. Reserves of all workloads add up
	// to at most 1.
	//
	// On a scope of n slots, a reserve holds Reserve × n slots rounded down,
	// so reserves never add up to more slots than there are: of 10 slots a
	// Reserve of 0.25 holds 2 and 0.3 holds 3; of 2 slots, 0.3 holds none
	// and 0.5 holds one; of 1 slot, two reserves of 0.5 hold none. A reserve
	// that holds no slot still serves its workload first. When a 429 lowers
	// a scope's cap (Scope.Concurrency), the reserved slots shrink alike.
	Reserve float64
	// Max is the largest share (0 to 1) of every scope's rate, burst and
	// concurrency this workload may use; of n slots, Max × n rounded down,
	// and at least one. Zero means no cap beyond what others reserve.
	Max float64
	// Budget is a hard spend cap. Past it, calls fail at once with an error
	// matching ErrBudgetExhausted and nothing is sent. The zero Budget means
	// no cap.
	Budget Budget
}

// A Budget caps what a workload may spend in a period: Limit units per Per.
// The period starts with the first call after the previous one ended, so a
// budget of 50,000 requests per 24h allows 50,000 requests, then none until
// 24 hours after the first of them.
type Budget struct {
	Limit int64
	Per   time.Duration
	// Unit is what the budget counts: "requests" (the default) counts one per
	// call; any other unit counts the request's cost in that unit, as stated
	// with ContextWithCost or estimated by a route.
	Unit string
}

func (b Budget) unit() string {
	if b.Unit == "" {
		return UnitRequests
	}
	return b.Unit
}

func (w Workload) validate(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("WithWorkload: the name must not be empty")
	case w.Reserve < 0 || w.Reserve > 1:
		return fmt.Errorf("workload %q: Reserve %v must be between 0 and 1", name, w.Reserve)
	case w.Max < 0 || w.Max > 1:
		return fmt.Errorf("workload %q: Max %v must be between 0 and 1 (0 means no cap)", name, w.Max)
	case w.Max > 0 && w.Max < w.Reserve:
		return fmt.Errorf("workload %q: Max %v is below its Reserve %v", name, w.Max, w.Reserve)
	case w.Budget.Limit < 0 || w.Budget.Per < 0:
		return fmt.Errorf("workload %q: Budget %d per %v must not be negative", name, w.Budget.Limit, w.Budget.Per)
	case (w.Budget.Limit > 0) != (w.Budget.Per > 0):
		return fmt.Errorf("workload %q: Budget needs both Limit and Per", name)
	}
	return nil
}

// callValues is what a request's context tells pacer. It lives under one
// context key so that RoundTrip looks it up once.
type callValues struct {
	workload string
	costs    []unitCost
}

type unitCost struct {
	unit string
	n    int64
}

type callValuesKey struct{}

func valuesFrom(ctx context.Context) *callValues {
	v, _ := ctx.Value(callValuesKey{}).(*callValues)
	return v
}

// ContextWithWorkload returns a context whose requests belong to the named
// workload. A name the Transport does not know means DefaultWorkload, so that
// one context can flow through Transports configured for different APIs.
func ContextWithWorkload(ctx context.Context, name string) context.Context {
	v := &callValues{workload: name}
	if parent := valuesFrom(ctx); parent != nil {
		v.costs = parent.costs
	}
	return context.WithValue(ctx, callValuesKey{}, v)
}

// WorkloadFromContext returns the workload named by ctx, or "" if none is.
func WorkloadFromContext(ctx context.Context) string {
	if v := valuesFrom(ctx); v != nil {
		return v.workload
	}
	return ""
}

// ContextWithCost returns a context whose requests cost n units of unit
// ("tokens", say) on every scope counted in that unit, and on a budget
// counted in it. A cost stated here wins over a route's estimate.
func ContextWithCost(ctx context.Context, unit string, n int64) context.Context {
	v := &callValues{}
	if parent := valuesFrom(ctx); parent != nil {
		v.workload = parent.workload
		for _, c := range parent.costs {
			if c.unit != unit {
				v.costs = append(v.costs, c)
			}
		}
	}
	v.costs = append(v.costs, unitCost{unit, n})
	return context.WithValue(ctx, callValuesKey{}, v)
}

// cost returns the cost in unit that v states, if it states one.
func (v *callValues) cost(unit string) (int64, bool) {
	if v == nil {
		return 0, false
	}
	for _, c := range v.costs {
		if c.unit == unit {
			return c.n, true
		}
	}
	return 0, false
}

// workloadState is a configured workload as the Transport uses it.
type workloadState struct {
	Workload
	name  string
	index int
	// budget is the demand that spends the budget; Cost is set per call.
	budget Demand
	meter  budgetMeter // this process's spend, for Stats
}
