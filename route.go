package pacer

// Step 1 of the path of a request: the scopes a call is charged to, by the
// routes for a request or as given for a permit, the cost on each, and what
// the call then demands of the store at each bucket's pace.

import (
	"context"
	"fmt"
	"net/http"
)

var defaultCharges = []Charge{{Scope: DefaultScope}}

// callFor makes the call of one attempt: req's, charged by the routes, or,
// when req is nil, a permit's, charged as given (to DefaultScope when none
// is). Either way the workload, costs and overrides come from ctx, so an
// HTTP request and a permit are admitted alike.
func (t *Transport) callFor(ctx context.Context, req *http.Request, given []Charge) (*call, error) {
	if t.limitSync != nil {
		t.syncLimits(ctx)
	}
	c := t.calls.Get().(*call)
	vals := valuesFrom(ctx)
	c.overrides(vals)
	if c.tenant == "" && req != nil && t.tenantOf != nil {
		c.tenant, c.weight = t.tenantOf(req)
	}
	workload := t.defaultWorkload
	if vals != nil {
		if w := t.workloads[vals.workload]; w != nil {
			workload = w
		} else if vals.workload != "" {
			if workload = t.unknownWorkload(vals.workload); workload == nil {
				c.finish()
				return nil, t.undeclaredError(vals.workload)
			}
		}
	}
	if c.workload != workload {
		c.workload = workload
	}
	members := 0 // the charges of a pool's member, first
	if vals != nil && vals.member != nil {
		// A pool's member: its own charges first, so that its responses'
		// counts teach its own buckets (pool.go).
		vals.member.charge(c, vals)
		members = len(c.charges)
	}
	if req != nil && len(t.routes) == 0 || req == nil && len(given) == 0 {
		// The one charge to DefaultScope, without the loop.
		c.addCharge(t.defaultScope, defaultCharges[0], vals)
		if t.meter == nil && c.workload.budget.Burst <= 0 {
			return c, nil // no Meter, no budget: nothing for plan to read
		}
		return c.plan(req, vals)
	}
	routed := given
	if req != nil {
		routed = append(c.routedBuf[:0], defaultCharges...)
		for _, route := range t.routes {
			routed = route(req, routed)
		}
		defer clear(routed) // the routes' keys must not outlive the call
	}
	for _, ch := range routed {
		cs := t.defaultScope // the common case, without a map lookup
		if ch.Scope != DefaultScope {
			cs = t.scopes[ch.Scope]
		}
		if cs == nil {
			c.finish()
			if req == nil {
				return nil, fmt.Errorf("pacer: the permit is charged to scope %q, which is not declared; declare it with WithScope", ch.Scope)
			}
			return nil, fmt.Errorf("pacer: a route charged the request to scope %q, which is not declared; declare it with WithScope", ch.Scope)
		}
		c.addCharge(cs, ch, vals)
	}
	if members > 0 {
		c.costMemberCharges(members) // pool.go
	}
	return c.plan(req, vals)
}

// addCharge adds a charge. Two charges to one bucket become one, so the
// bucket is never asked twice in one Take.
func (c *call) addCharge(cs *configuredScope, ch Charge, vals *callValues) {
	cost := chargeCost(cs, ch, vals)
	state := cs.bucketFor(ch.Key)
	for i := range c.charges {
		if c.charges[i].bucket == state {
			state.release()
			c.charges[i].cost += cost
			return
		}
	}
	// Names and states left from the call's last use are kept when they are
	// the same, sparing the write barriers (see extend).
	e := extend(&c.charges)
	if e.bucket != state {
		e.bucket = state
	}
	if e.key != ch.Key {
		e.key = ch.Key
	}
	e.cost, e.admittedAt, e.spentAt, e.takenAt = cost, 0, 0, 0
	c.needsSlots = c.needsSlots || cs.Concurrency > 0
}

// setDemands sets out what the call demands of the store, at each bucket's
// pace as of now: a limit learned or a rate cut while the call waited
// applies to its next attempt.
func (c *call) setDemands() {
	c.demands, c.owners = c.demands[:0], c.owners[:0]
	w := c.workload.index
	for i := range c.charges {
		ch := &c.charges[i] // not a copy: a charge is eight words
		// pace's common case, inlined; pace itself for the rest.
		rate, burst, steady := ch.bucket.steadyPace()
		if !steady {
			rate, burst = ch.bucket.pace()
		}
		if burst == 0 {
			continue // the scope caps concurrency only
		}
		cs := ch.bucket.scope
		sh := cs.shares.Load()
		// A floor above burst − cost would make the request wait forever; a
		// reserve too small to hold one request reserves nothing. (Compared
		// by hand: min and max of floats spend ~20 instructions on NaNs and
		// signed zeros, which a finite rate and cost never are.)
		floor := burst - ch.cost
		if floor < 0 {
			floor = 0
		}
		if r := sh.othersReserve[w] * burst; r < floor {
			floor = r
		}
		// Nor may a reserve keep others out beyond the maximum wait once a
		// refusal has drained the bucket: on a slow scope (a day's count)
		// its part of the burst takes hours to refill.
		if r := rate * c.t.maxWaitSeconds; r < floor {
			floor = r
		}
		c.addDemand(cs.Name, ch.key, rate, burst, ch.cost, floor, i)
		if name := sh.maxScope[w]; name != "" {
			share := sh.max[w]
			c.addDemand(name, ch.key, rate*share, max(1, burst*share), ch.cost, 0, i)
		}
	}
	if c.t.pool != nil {
		c.t.pool.group(c) // a pool member's buckets are kept together (pool.go)
	}
}

// addDemand appends a demand.
func (c *call) addDemand(scope, key string, rate, burst, cost, floor float64, owner int) {
	d := extend(&c.demands)
	setNames(d, scope, key)
	d.Rate, d.Burst, d.Window, d.Cost, d.Floor = rate, burst, 0, cost, floor
	c.owners = append(c.owners, owner)
}

func chargeCost(cs *configuredScope, ch Charge, vals *callValues) float64 {
	if n, ok := vals.cost(cs.Unit); ok {
		return float64(max(n, 0))
	}
	if ch.Cost > 0 {
		return float64(ch.Cost)
	}
	if cs.countsRequests {
		return 1
	}
	return 0
}
