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
// The scheduler is work-conserving: a workload may use the whole rate while
// the others are idle, but never the part of the burst and of the concurrency
// that others reserved, so it is there the instant they come back.
type Workload struct {
	// Reserve is the share (0 to 1) of every scope's burst and concurrency
	// that no other workload may take, so this workload is admitted at once
	// when it arrives. The workload itself may use everything. Reserves of
	// all workloads add up to at most 1.
	Reserve float64
	// Max is the largest share (0 to 1) of every scope's rate, burst and
	// concurrency this workload may use. Zero means no cap beyond what
	// others reserve.
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
	// FollowStoreFailure makes the budget follow the Transport's
	// StoreFailure policy while its shared store is down, instead of
	// refusing every call: FailOpen spends without the store, and
	// FallBackLocal(n) lets this process spend Limit/n in the period. Set it
	// for a workload that must keep working through an outage more than it
	// must hold its cap. Either way, a process never spends more than Limit
	// in a period by its own count. See Budgets on StoreFailure.
	FollowStoreFailure bool
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
