package pacer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/usage/prices"

	"github.com/pacer-go/pacer/classify"
	"github.com/pacer-go/pacer/store"
)

// A Permit is a call admitted without net/http: a gRPC call, a websocket
// message, an SDK that takes no *http.Client, a job queue's worker. It was
// admitted by the same path as a request through RoundTrip — the workload's
// budget, the scopes' slots and tokens, the queue — and it holds what a
// request holds until its response body is closed, until it is ended
// (Accept, Reject or Drop).
//
// The call must be ended once it is over, by what became of it: Accept,
// Reject or Drop, after Settle if its cost differs from the one charged.
// The end releases the permit's concurrency slots and teaches the scopes
// what a response would. Only the first end counts, so that a deferred
// Drop is a safety net; the ends are safe to call from any goroutine. A
// permit never ended holds its slots for good, as an unclosed response body does:
// observe.EventSlotHeld reports it (WithSlotAgeAlert) and Stats shows the slot's
// age; pacer does not take the slot back.
//
// # What a permit is charged
//
// A permit never runs a Route or the Transport's Meter: it has no request
// to read, so it charges what its caller states, on a Transport with a
// preset as on any other. Its scopes are charged as its Charges say (one
// request on DefaultScope when none is given), or at a cost stated with
// ContextWithCost; its workload's budget, one request if it counts
// requests. A budget in tokens or in money is charged the cost the
// permit states in the budget's unit — a Charge on a scope counted in it,
// or ContextWithCost; ContextWithSpend for money — at least one unit,
// so that a spent budget refuses it; then what Settle reports in
// that unit replaces it, in full. A permit that states no cost in its
// budget's unit fails at once with an error that says how to state one:
// it is never a free pass.
type Permit struct {
	Scope    string  // the first scope the permit is charged to
	Key      string  // its key within that scope
	Workload string  // the workload, from the context
	Cost     float64 // the cost charged on that scope, in its unit

	c      *call
	ctx    context.Context
	done   atomic.Bool
	settle settlement // what Settle said, for the end to settle
}

// Acquire waits until a call charged as given is admitted, and returns its
// Permit. Charges name the scopes (declared with WithScope), keys and
// costs, as a Route's would; none means one request on DefaultScope. The
// workload, a cost stated with ContextWithCost and how the call waits
// (ContextWithCall) come from ctx, as for a request.
//
// Acquire fails as RoundTrip would refuse a request: a *ThrottledError when
// the wait cannot end in time (at once, not at the deadline), a
// *BudgetError when the workload's budget is spent, the Transport's
// configuration error. On every failure nothing is held.
//
// Retries are the caller's: a permit is one attempt, and a call made again
// acquires again.
func (t *Transport) Acquire(ctx context.Context, charges ...Charge) (*Permit, error) {
	c, err := t.permitCall(ctx, charges)
	if err != nil {
		return nil, err
	}
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	return c.permit(ctx), nil
}

// TryAcquire is Acquire without waiting: it returns a Permit if the call is
// admitted at once, else a *ThrottledError whose RetryAfter says how long
// until it might be (zero when a slot must be released first). It never
// queues, and never goes before calls already waiting. With a shared store
// it still makes the store's round trip.
func (t *Transport) TryAcquire(ctx context.Context, charges ...Charge) (*Permit, error) {
	c, err := t.permitCall(ctx, charges)
	if err != nil {
		return nil, err
	}
	c.failFast = true
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	return c.permit(ctx), nil
}

func (t *Transport) permitCall(ctx context.Context, charges []Charge) (*call, error) {
	if t.err != nil {
		return nil, t.err
	}
	if ctx == nil {
		return nil, errors.New("pacer: Acquire needs a context; pass context.Background() for none")
	}
	return t.callFor(ctx, nil, charges)
}

func (c *call) permit(ctx context.Context) *Permit {
	p := &Permit{Workload: c.workload.name, c: c, ctx: ctx}
	if len(c.charges) > 0 {
		ch := c.charges[0]
		p.Scope, p.Key, p.Cost = ch.bucket.scope.Name, ch.key, ch.cost
	}
	return p
}

// Accept ends the permit's call as one the provider served: as for a
// successful response, a rate cut after a rejection climbs back. It
// settles the cost if Settle said it, and releases the slots.
func (p *Permit) Accept() { p.end(outcomeAccepted, 0) }

// Reject ends the permit's call as one the provider refused for its limits
// (gRPC's RESOURCE_EXHAUSTED, a 429 under another name).
//
// With retryAfter > 0 it is a pause, and only a pause: the permit's scopes
// stop for that long, for every caller, as for a Retry-After (capped by
// WithMaxWait), and then go on at the pace and the cap they had. The
// provider said how long to wait, not that it can take less, so neither
// the rate nor the cap on calls in flight is cut. (An HTTP 429 with
// Retry-After is read as both: see the README.)
//
// With retryAfter 0 (or less) it is a bare refusal, as a bare 429: it
// empties the scopes' buckets and cuts their rate, or the cap on calls in
// flight of a scope that has no rate, and the cut climbs back by time —
// within about a minute, however many refusals came first, whether or not
// calls succeed meanwhile; calls waiting under a lowered cap are admitted
// as it climbs, without waiting for a slot to be released. Stats shows a
// lowered cap (ConcurrencyNow) and why.
func (p *Permit) Reject(retryAfter time.Duration) { p.end(outcomeRejected, max(retryAfter, 0)) }

// Drop ends the permit's call as one that says nothing of the provider's
// limits: it failed for another reason, or was never made. Nothing is
// learned (Netflix's concurrency-limits calls it "ignore"); the cost is
// settled if Settle said it, and the slots are released all the same.
// Deferred right after Acquire, it ends a call that returns early; a later
// Accept or Reject, coming first, wins.
func (p *Permit) Drop() { p.end(outcomeDropped, 0) }

// Settle says the call's actual cost in unit (output tokens counted once
// the call is over, say; SettleSpend for money), for the permit's end to
// settle, and returns p, so that p.Settle("tokens", n).Accept() reads as
// one step. A negative cost is zero. A permit settles one cost: a later
// Settle or SettleSpend replaces an earlier one. Settle is for the
// goroutine that ends the permit, before it ends; after the end it does
// nothing.
//
// On every scope of the permit counted in unit, the difference from the
// cost charged is given back, or taken. A call that cost more than it was
// charged may leave the bucket owing, which later calls wait to repay: at
// most one burst, and no more than the bucket refills in WithMaxWait, so
// that no count, however large, keeps a scope from sending for longer.
//
// The workload's budget, if it counts unit, is billing: it is charged the
// actual cost in full, beyond its Limit if need be (later calls are then
// refused until its period ends). A cost beyond what a scope may owe, or
// beyond the budget's whole Limit, is taken as implausible: the Transport
// also emits observe.EventImplausibleUsage and logs a warning naming the permit's
// workload and scope, so that a budget that runs out on it is explained.
func (p *Permit) Settle(unit string, actual int64) *Permit {
	if p != nil && !p.done.Load() {
		p.settle = settlement{unit: unit, cost: max(actual, 0), set: true}
	}
	return p
}

// SettleSpend is Settle for a budget in money (Budget.Spend): the call's
// actual cost, prices.Dollars(0.0042) say, charged to the budget in full.
func (p *Permit) SettleSpend(m prices.Money) *Permit { return p.Settle(spendKey, m.Micros()) }

// A settlement is the cost a permit's caller said (Settle).
type settlement struct {
	unit string
	cost int64
	set  bool
}

type outcomeKind int

const (
	outcomeAccepted outcomeKind = iota
	outcomeRejected
	outcomeDropped
)

var (
	acceptedResponse = http.Response{StatusCode: http.StatusOK}
	rejectedResponse = http.Response{StatusCode: http.StatusTooManyRequests}
)

// end ends the permit's call as its outcome says: it settles the cost,
// learns what the outcome teaches, and releases the slots. Only the first
// end counts; later ones, and one on a nil Permit, do nothing.
func (p *Permit) end(kind outcomeKind, retryAfter time.Duration) {
	if p == nil || !p.done.CompareAndSwap(false, true) {
		return
	}
	c := p.c
	p.c = nil
	if p.settle.set {
		c.settleReported(p.settle.unit, p.settle.cost)
	}
	// The outcome goes through the very learning a response does, as the
	// response it stands for: a status and no headers (a nil Header reads
	// as empty), the wait a classifier's classify.Verdict would give. learn bounds
	// what it sends to the store without the caller's cancellation.
	switch kind {
	case outcomeAccepted:
		resp := acceptedResponse
		c.learn(p.ctx, &resp, classify.Verdict{})
	case outcomeRejected:
		resp := rejectedResponse
		c.learnFrom(p.ctx, &resp, classify.Verdict{Wait: retryAfter}, retryAfter == 0)
	}
	c.finish()
}

// settleReported settles a permit's call on the cost its caller reported
// in unit (see Permit.Settle): each bucket counted in unit is brought to
// actual, within boundSettlement, as a metered response's usage is
// (settle.go); the workload's budget, if it counts unit, in full. A cost
// bounded on a scope, or beyond the budget's Limit, is reported as an
// implausible usage.
func (c *call) settleReported(unit string, n int64) {
	actual := float64(n)
	bounded := c.boundedOn(unit, actual)
	c.adjustCharges(func(ch *charge) (float64, bool) { return actual, ch.bucket.scope.Unit == unit })
	w := c.workload
	billed, overBudget := c.budgetSpent && w.Budget.counts(unit), false
	if billed {
		c.settleBudget(c.t.clock.Now(), actual, w.settles && c.metered.on)
		overBudget = actual > w.budget.Burst
	}
	if bounded == "" && !overBudget {
		return
	}
	var why string
	switch {
	case bounded == "":
		why = "the workload's whole budget"
	case overBudget:
		why = fmt.Sprintf("scope %q may owe, and more than the workload's whole budget", bounded)
	default:
		why = fmt.Sprintf("scope %q may owe", bounded)
	}
	err := fmt.Errorf("a permit of workload %q reported a cost of %d %s, more than %s: each bucket owes at most one burst, or what it refills in %v",
		w.name, n, unit, why, c.t.maxWait)
	if billed {
		err = fmt.Errorf("%w; the budget is charged the cost in full", err)
	}
	c.t.emit(observe.Event{Kind: observe.EventImplausibleUsage, Scope: bounded, Workload: w.name, Err: err})
	c.t.log.Warn("pacer: "+err.Error(), "workload", w.name, "scope", bounded, "unit", unit, "cost", n)
}

// boundedOn returns the first scope counted in unit whose bucket cannot
// take a settlement at actual in full (debtRoom), or "".
func (c *call) boundedOn(unit string, actual float64) string {
	now := c.t.clock.Now()
	for j, i := range c.owners {
		ch := &c.charges[i]
		if c.demands[j].Scope != ch.bucket.scope.Name {
			continue // a Max share's bucket: the scope's own tells
		}
		if over := actual - ch.cost; ch.bucket.scope.Unit == unit && over > 0 && ch.bucket.debtRoom(now, &c.demands[j], c.t.maxWait) < over {
			return ch.bucket.scope.Name
		}
	}
	return ""
}

// A Reservation holds a call's tokens, taken ahead of time as
// x/time/rate's Reserve does: Delay says how long until the call may go,
// Wait waits that long and returns the Permit, Cancel gives the tokens back.
// A Reservation is used once: by Wait or by Cancel, whichever comes first.
type Reservation struct {
	t     *Transport
	c     *call
	at    time.Time // when the call may go
	state atomic.Int32
}

const (
	reservationHeld int32 = iota
	reservationUsed
)

// Reserve takes the tokens of a call charged as given (see Acquire) and
// returns a Reservation saying when the call may go. Tokens not yet there
// are taken in advance: the bucket owes them, and later calls wait for
// them to be repaid, so a reservation goes before calls that wait in the
// queue, as with x/time/rate. A bucket owes at most one burst, and no
// more than it refills in WithMaxWait, so that reservations never stop
// other calls for longer: beyond that, or for a call larger than the
// bucket, or past a workload's budget, Reserve fails as Acquire would and
// holds nothing. The workload's budget
// is spent now; concurrency slots are taken by Wait. A scope paused by the
// provider (Retry-After) delays the reservation until the pause ends.
func (t *Transport) Reserve(ctx context.Context, charges ...Charge) (*Reservation, error) {
	c, err := t.permitCall(ctx, charges)
	if err != nil {
		return nil, err
	}
	if err := c.spendBudget(ctx); err != nil {
		c.finish()
		return nil, err
	}
	now := t.clock.Now()
	delay, err := c.takeAhead(ctx, now)
	if err != nil {
		c.emitRefusal(err)
		c.refundBudget(ctx)
		c.finish()
		return nil, err
	}
	for _, ch := range c.charges {
		if left, ok := c.cooledDown(ch.bucket, now); !ok {
			delay = max(delay, left)
		}
	}
	c.prepaid = true
	c.countAdmitted(0)
	return &Reservation{t: t, c: c, at: now.Add(delay)}, nil
}

// takeAhead takes the call's tokens, owing them if need be, and returns how
// long until they are repaid.
func (c *call) takeAhead(ctx context.Context, now time.Time) (time.Duration, error) {
	if c.setDemands(); len(c.demands) == 0 {
		return 0, nil
	}
	d, err := c.t.store.Take(ctx, now, c.demands)
	if err == nil && d.OK {
		return 0, nil
	}
	if err == nil && d.Wait != store.Never {
		delay := d.Wait
		owing := slices.Clone(c.demands)
		for i := range owing {
			// What a settlement may leave owing (boundSettlement).
			owing[i].Floor = -boundSettlement(&owing[i], owing[i].Burst, c.t.maxWait)
		}
		if d, err = c.t.store.Take(ctx, now, owing); err == nil && d.OK {
			// The buckets owe until the reserved call may go: what a
			// settlement may add to that is less (debtRoom).
			for i := range c.charges {
				c.charges[i].bucket.owesUntil(now.Add(delay))
			}
			return delay, nil
		}
	}
	if err != nil {
		c.t.emit(observe.Event{Kind: observe.EventStoreFailure, Workload: c.workload.name, Err: err})
		return 0, fmt.Errorf("pacer: taking tokens: %w", err)
	}
	b := blocked{bucket: c.charges[c.owners[d.Blocked]].bucket, reason: observe.ReasonRate, wait: d.Wait}
	if d.Wait == store.Never {
		return 0, c.cannotWait(ctx, b)
	}
	return 0, b.error(fmt.Errorf("the bucket already owes what it may to earlier reservations: one burst, or what it refills in %v", c.t.maxWait))
}

// OK reports whether the reservation is still held: neither waited for nor
// cancelled.
func (r *Reservation) OK() bool { return r != nil && r.state.Load() == reservationHeld }

// Delay returns how long from now until the reserved call may go; zero if
// it may go now, or if r is nil.
func (r *Reservation) Delay() time.Duration {
	if r == nil {
		return 0
	}
	return max(0, r.at.Sub(r.t.clock.Now()))
}

// Cancel gives back the reservation's tokens and budget, as far as the
// buckets hold them, unless Wait or Cancel was called already.
func (r *Reservation) Cancel() {
	if r == nil || !r.state.CompareAndSwap(reservationHeld, reservationUsed) {
		return
	}
	r.c.cancelReservation(context.Background())
}

func (c *call) cancelReservation(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	if len(c.demands) > 0 {
		if err := c.t.store.Refund(ctx, c.t.clock.Now(), c.demands); err != nil {
			c.t.emit(observe.Event{Kind: observe.EventStoreFailure, Workload: c.workload.name, Err: err})
		}
	}
	for i := range c.charges {
		ch := &c.charges[i]
		ch.bucket.spent.Add(-int64(ch.cost))
	}
	c.refundBudget(ctx)
	c.finish()
}

// Wait waits out the reservation's delay, then for the call's concurrency
// slots, and returns its Permit. If the delay cannot end before ctx's
// deadline, or ctx ends first, the reservation is cancelled — its tokens
// given back — and the error says so. Wait on a reservation already used
// returns an error and holds nothing.
func (r *Reservation) Wait(ctx context.Context) (*Permit, error) {
	if r == nil || !r.state.CompareAndSwap(reservationHeld, reservationUsed) {
		return nil, errors.New("pacer: the reservation was already waited for or cancelled; reserve again")
	}
	c := r.c
	if delay := r.Delay(); delay > 0 {
		b := blocked{bucket: c.charges[0].bucket, reason: observe.ReasonRate, wait: delay}
		err := c.cannotWait(ctx, b)
		if err == nil {
			if err = sleep(ctx, r.t.clock, delay); err != nil {
				err = b.error(err)
			}
		}
		if err != nil {
			c.emitRefusal(err)
			c.cancelReservation(ctx)
			return nil, err
		}
	}
	if err := c.admit(ctx); err != nil {
		c.emitRefusal(err)
		c.cancelReservation(ctx)
		return nil, err
	}
	return c.permit(ctx), nil
}
