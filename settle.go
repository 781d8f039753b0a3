package pacer

import (
	"context"
	"time"

	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/usage"
)

// settleRejected settles a metered call the provider rejected, or never
// received, at zero: OpenAI and Anthropic bill nothing for it, and their
// limiters do not count its tokens (KeepScopeCharges included).
func (c *call) settleRejected() {
	if c.metered.on {
		c.settle(usage.Usage{}, true, true)
	}
}

// settle charges or gives back, on the call's token scopes and its budget,
// the difference between what it reserved and what u says it used; the
// scopes only if the call was rejected or the Meter does not keep their
// charges (Meter.KeepScopeCharges). A usage that is not final leaves the
// estimate spent. It runs once, when the body
// ends; the store's share of it goes out in the background, so it costs
// the caller's last Read no round trip.
func (c *call) settle(u usage.Usage, final, rejected bool) {
	if !c.metered.on {
		return
	}
	if !final {
		c.settleAtEstimate()
		return
	}
	c.metered.on = false
	m := c.t.meter
	now := c.t.clock.Now()
	if rejected || !m.KeepScopeCharges {
		c.adjustCharges(func(ch *charge) (float64, bool) {
			n, ok := m.tokens(ch.bucket.scope.Unit, u)
			return float64(n), ok
		})
	}
	if !c.budgetSpent || !c.workload.settles {
		return
	}
	actual, ok := c.budgetActual(u)
	if !ok {
		c.settleAtEstimate() // a unit the meter does not count
		return
	}
	c.settleBudget(now, actual, true)
}

// budgetActual is what u costs in the unit of the call's budget (in
// micro-dollars for money), or false for a unit the meter does not count.
func (c *call) budgetActual(u usage.Usage) (float64, bool) {
	if c.workload.Budget.money() {
		if c.metered.priced {
			return float64(c.metered.price.Cost(u).Micros()), true
		}
		return 0, true
	}
	n, ok := c.t.meter.tokens(c.workload.Budget.unit(), u)
	return float64(n), ok
}

// cutMargin is the output a stream cut before its usage is charged beyond
// what it streamed: what the provider may have generated but not yet sent
// when the body was closed. 64 tokens is about half a second of a fast
// model's output (OpenAI's and Anthropic's stream at 50 to 150 tokens a
// second): the time a close takes to reach the provider through a proxy,
// and the provider to stop, with the bytes in flight in the connection's
// buffers that the caller never read. It is pacer's figure, not a
// provider's.
const cutMargin = 64

// settleCut settles a metered call whose stream ended before the
// provider's usage, on what it streamed (usage.Counter): its input as the
// stream reported it, else as estimated, and the output counted plus
// cutMargin, never more than the call reserved. Its scopes keep their
// charges, as for a call settled at its estimate. A call whose estimate
// says it has hidden output, or whose output would cost more than it
// reserved, settles at the reservation.
func (c *call) settleCut(s usage.Streamed) {
	if !c.metered.on {
		return
	}
	if c.metered.hidden || !c.budgetSpent || !c.workload.settles {
		c.settleAtEstimate()
		return
	}
	u := s.Usage
	if !s.InputKnown {
		e := c.metered.est
		u.Input, u.CacheRead, u.CacheWrite, u.CacheWrite1h = e.Input, e.CacheRead, e.CacheWrite, e.CacheWrite1h
	}
	u.Output = min(s.Output, plausibleOutput) + cutMargin
	actual, ok := c.budgetActual(u)
	if reserved := c.budget[0].Cost; !ok || actual >= reserved {
		c.settleAtEstimate()
		return
	}
	c.metered.on = false
	c.settleBudget(c.t.clock.Now(), actual, true)
}

// settleAtEstimate settles the call on what it reserved: its scopes keep
// their charges, and its budget counts the reservation as spent, as the
// store has it already.
func (c *call) settleAtEstimate() {
	c.metered.on = false
	if c.budgetSpent && c.workload.settles {
		r := c.budget[0].Cost
		c.workload.tally.settle(time.Time{}, c.metered.periodStart, r, r, true) // no change of the count: no time needed
	}
}

// settleBudget replaces what the call reserved of its workload's budget by
// actual, in full: a budget is billing, and is never clipped. settles is
// how the reservation was counted (budgetTally.spend).
func (c *call) settleBudget(now time.Time, actual float64, settles bool) {
	reserved := c.budget[0].Cost
	c.workload.tally.settle(now, c.metered.periodStart, reserved, actual, settles)
	if delta := actual - reserved; delta != 0 {
		d := c.budget[0]
		d.Cost, d.Floor = delta, 0
		c.t.adjustBudget(now, d)
	}
}

// adjustCharges settles each of the call's charges whose real cost actual
// tells: the difference from what was charged is given back, or taken even
// if the bucket must owe, within boundSettlement; in memory at once, on a
// shared store in the background (adjust). Every settlement of a bucket —
// a response's usage, a permit's Settle — comes through here.
func (c *call) adjustCharges(actual func(*charge) (float64, bool)) {
	var buf [8]store.Demand
	adj := buf[:0]
	now := c.t.clock.Now()
	for i := range c.charges {
		ch := &c.charges[i]
		n, ok := actual(ch)
		if !ok {
			continue
		}
		delta := n - ch.cost
		if delta == 0 {
			continue
		}
		// What the scope's own bucket is charged: a scope that only caps
		// concurrency has no bucket, and counts it within 2^50 (as usage
		// counts are), so that it converts to an int64.
		charged := min(delta, 1<<50)
		first := true
		for j, o := range c.owners {
			if o == i {
				d := c.demands[j]
				if first { // the scope's own bucket, before any Max share's
					d.Cost = min(delta, ch.bucket.debtRoom(now, &d, c.t.maxWait))
					ch.bucket.owes(now, d.Rate, d.Cost)
					charged, first = d.Cost, false
				} else {
					d.Cost = boundSettlement(&d, delta, c.t.maxWait)
				}
				d.Floor = 0
				adj = append(adj, d)
			}
		}
		ch.bucket.spent.Add(int64(charged))
		ch.cost += charged
	}
	c.t.adjust(now, adj)
}

// boundSettlement is what a settlement of cost more than a call took at
// admission charges d's bucket: all of it, up to one burst and to what the
// bucket refills in maxWait. However large a count a body, a header or a
// caller reports, the settlement then leaves the bucket owing at most that
// (it held at least nothing once the call was admitted), which it repays
// within MaxWait: one burst alone would not do, a per-day scope's burst
// takes hours to refill. The price: an overrun larger than that is charged
// only that far, even where the bucket had room for it, and the bucket
// may then believe it holds more than the provider counts, until the
// provider's remaining count clamps it. What a call gives back is not
// bounded. Only buckets are bounded: a budget is billing, charged in full
// (settle). Every settlement of a bucket goes through it (adjustCharges),
// the scope's own bucket through debtRoom, which bounds the debts of
// many settlements together.
func boundSettlement(d *store.Demand, cost float64, maxWait time.Duration) float64 {
	if cost <= 0 {
		return cost
	}
	return max(0, min(cost, d.Burst, d.Rate*maxWait.Seconds()))
}

// debtRoom is the most a settlement may charge s's bucket beyond what its
// call took at admission, d being the bucket's demand: boundSettlement's
// bound, less what the debts this process's earlier settlements left are
// still owed. However many calls report however large a count, together
// they leave the bucket owing what it repays within maxWait of now, not
// maxWait each. A process knows only its own settlements: processes
// sharing a store each keep to the bound.
func (s *bucket) debtRoom(now time.Time, d *store.Demand, maxWait time.Duration) float64 {
	if owed := time.Duration(s.owedUntil.Load() - now.UnixNano()); owed > 0 {
		maxWait -= owed
	}
	return boundSettlement(d, d.Burst, maxWait)
}

// owes records that a settlement charged s's bucket n beyond what its call
// took, which the bucket repays at rate (see debtRoom).
func (s *bucket) owes(now time.Time, rate, n float64) {
	if n <= 0 || rate <= 0 {
		return
	}
	repay := int64(n / rate * float64(time.Second))
	for {
		old := s.owedUntil.Load()
		if s.owedUntil.CompareAndSwap(old, max(old, now.UnixNano())+repay) {
			return
		}
	}
}

// owesUntil records that s's bucket owes until at, if that is later than
// it owes already: a Reservation taken ahead leaves it owing until the
// reserved call may go (see debtRoom).
func (s *bucket) owesUntil(at time.Time) {
	raiseTo(&s.owedUntil, at.UnixNano())
}

// adjust settles token demands on the store: in memory at once, on a shared
// store through the guard's writer in the background.
func (t *Transport) adjust(now time.Time, ds []store.Demand) {
	if len(ds) == 0 {
		return
	}
	var s store.Store = t.store
	if t.guard != nil {
		s = t.guard
	}
	_ = adjustOrRefund(context.Background(), s, now, ds)
}

// adjustBudget settles a budget demand: this process's own count at once
// (see store.Policy.OnFailure), the shared store's in the background.
func (t *Transport) adjustBudget(now time.Time, d store.Demand) {
	if t.guard != nil {
		t.guard.AdjustBudget(now, d)
		return
	}
	_ = adjustOrRefund(context.Background(), t.store, now, []store.Demand{d})
}
