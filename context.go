package pacer

import (
	"context"
	"strings"
	"time"

	"github.com/pacer-go/pacer/usage/prices"
)

// A Call is what a request's context says about how pacer admits it. Its
// zero value says nothing: the call waits as its context allows, at
// priority 0, in no tenant.
//
// ContextWithCall merges a Call over the one an earlier ContextWithCall put
// on the parent context: a field at its zero value keeps the parent's, any
// other replaces it. So the tenant a middleware names survives a handler's
// Call{FailFast: true}, as each layer says only what it knows. The price is
// that a Call cannot take back what a parent said (FailFast to false,
// Priority to 0, no MaxWait): derive from a context that does not say it.
type Call struct {
	// FailFast: the call is never made to wait. One that cannot be admitted
	// at once fails with a *ThrottledError that says how long to wait
	// (RetryAfter), as on a scope with FailFast.
	FailFast bool

	// MaxWait bounds the call's wait for admission, each attempt's on its
	// own: a wait that cannot end within it fails at once, as one past the
	// context's deadline does, with a *ThrottledError matching
	// context.DeadlineExceeded. It bounds only pacer's wait, not the call:
	// the context's deadline still bounds everything. Zero keeps the
	// parent's bound, or none, and the call waits as its context allows (the
	// Transport's WithMaxWait still caps what a provider's headers impose).
	// A negative MaxWait allows no wait, as a negative timeout does in
	// context.WithTimeout.
	MaxWait time.Duration

	// Priority orders the call within its workload: it is served before
	// the calls of lower priority and, in a bounded queue
	// (Workload.MaxWaiting), shed after them. Priorities are clamped to
	// [-127, 127]. Between workloads, Workload.Reserve decides.
	Priority int

	// Tenant names the call's tenant (a customer, an API key of yours).
	// Within a workload, while calls of several tenants wait, they are
	// served by weighted fair queuing: each tenant gets its Weight's share
	// of what the workload is given, so one tenant's flood waits behind
	// itself and not in front of the others. A tenant alone takes
	// everything; Priority and Reserve still come first. Once a workload
	// has seen a tenant, its calls that name none share one tenant, "".
	// Tenant keys stay inside pacer's queues: no observe.Event, metric or
	// log line carries them, and what a workload remembers of its tenants
	// is bounded by the calls waiting, not by how many tenants there are.
	// A context that names no tenant leaves it to WithTenant.
	Tenant string

	// Weight is the tenant's weight, taken within 1/1000 to 1000: one
	// below the range counts as 1/1000, one above it (+Inf too) as 1000,
	// and zero, a negative weight or NaN as 1. A Call that names a Tenant sets its
	// weight too, zero meaning 1; one that names none re-weights the tenant
	// the parent context names.
	Weight float64
}

// ContextWithCall returns a context whose calls are admitted as c says,
// merged over what the parent context says (see Call). The workload and
// the costs the context states (ContextWithWorkload, ContextWithCost,
// ContextWithSpend) are kept: they say what the call is and what it
// spends, not how it waits, and each is set on its own.
func ContextWithCall(ctx context.Context, c Call) context.Context {
	v := derive(ctx)
	if c.FailFast {
		v.failFast = true
	}
	if c.MaxWait != 0 {
		v.maxWait = c.MaxWait
	}
	if c.Priority != 0 {
		v.priority = max(-maxRank, min(maxRank, c.Priority))
	}
	if c.Tenant != "" {
		v.tenant, v.weight = c.Tenant, c.Weight
	} else if c.Weight != 0 {
		v.weight = c.Weight
	}
	return context.WithValue(ctx, callValuesKey{}, v)
}

// overrides reads the call's overrides from its context's values.
func (c *call) overrides(vals *callValues) {
	if vals == nil {
		c.failFast, c.maxWait, c.priority, c.weight = false, 0, 0, 0
		if c.tenant != "" {
			c.tenant = ""
		}
		return
	}
	c.failFast, c.maxWait, c.priority = vals.failFast, vals.maxWait, vals.priority
	if c.tenant != vals.tenant {
		c.tenant = vals.tenant
	}
	c.weight = vals.weight
}

// callValues is what a request's context tells pacer. It lives under one
// context key so that RoundTrip looks it up once.
type callValues struct {
	workload string
	costs    []unitCost

	// Per-call overrides (Call).
	failFast bool
	maxWait  time.Duration
	priority int

	tenant string // tenant.go
	weight float64

	member *poolMember // the pool member the attempt goes through (pool.go); nil outside a pool
}

// derive returns a copy of the values ctx holds, or empty ones, for a
// context that changes one of them.
func derive(ctx context.Context) *callValues {
	if parent := valuesFrom(ctx); parent != nil {
		v := *parent
		return &v
	}
	return &callValues{}
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
// workload. A name the Transport does not declare is an error from
// RoundTrip (and Acquire), nothing sent, since it is most often a typo that
// would escape the workload's budget. For one context that flows through
// Transports configured for different APIs, declare the workload, even as
// Workload{}, on each, or set TakesUndeclared on the workload that should
// take the names a Transport does not know.
func ContextWithWorkload(ctx context.Context, name string) context.Context {
	v := derive(ctx)
	v.workload = name
	return context.WithValue(ctx, callValuesKey{}, v)
}

// workloadFromContext returns the workload named by ctx, or "" if none is.
func workloadFromContext(ctx context.Context) string {
	if v := valuesFrom(ctx); v != nil {
		return v.workload
	}
	return ""
}

// ContextWithCost returns a context whose requests cost n units of unit
// ("tokens", say) on every scope counted in that unit, and on a budget
// counted in it, the unit matched whatever its case. A cost stated here
// wins over a route's estimate. A unit that no scope or Meter counts
// spends only a budget that declares it Stated.
func ContextWithCost(ctx context.Context, unit string, n int64) context.Context {
	return withCost(ctx, unit, n)
}

// ContextWithSpend states what a call costs in money, for a workload whose
// budget counts money (Budget.Spend) on a call no Meter prices: a Permit's,
// or a request the Meter does not estimate. A metered request is priced by
// its Meter, and this is not read.
func ContextWithSpend(ctx context.Context, m prices.Money) context.Context {
	return withCost(ctx, spendKey, m.Micros())
}

// withCost states a call's cost in unit, replacing one stated before.
func withCost(ctx context.Context, unit string, n int64) context.Context {
	v := derive(ctx)
	costs := v.costs
	v.costs = nil // the parent's slice is shared: build a new one
	for _, c := range costs {
		if !strings.EqualFold(c.unit, unit) {
			v.costs = append(v.costs, c)
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
		if strings.EqualFold(c.unit, unit) {
			return c.n, true
		}
	}
	return 0, false
}
