package pacer

// Step 4 of the path of a request: admission. A call takes a slot and its
// tokens on every scope it is charged to, all or none, or waits in the
// queue of the scope that blocked it, or is refused at once when its wait
// cannot end in time.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/internal/queue"
	"github.com/pacer-go/pacer/internal/slots"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/store"
)

// blocked says where and why a call could not be admitted.
type blocked struct {
	bucket *bucket // nil when the call was admitted
	reason observe.Reason
	wait   time.Duration // until admission might succeed; 0 when unknown
}

func (b blocked) error(cause error) error {
	e := &ThrottledError{Scope: b.bucket.scope.Name, Reason: b.reason, Err: cause}
	if b.wait != store.Never {
		e.RetryAfter = b.wait
	}
	if b.reason == observe.ReasonCooldown {
		e.Reset, _ = b.bucket.farResetAt(b.bucket.scope.clock.Now())
	}
	return e
}

// admit returns once the call holds a slot and its tokens on every scope, or
// with the reason it never will in time.
func (c *call) admit(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
	}
	for i := range c.charges {
		// Calls that were here first, or that matter more, go first. With
		// none waiting, the common case, servesBefore's own first check is
		// made here, without the call or the workload's priority.
		if s := c.charges[i].bucket; s.waiting.Load() != 0 && s.servesBefore(c.workload.index, s.scope.shares.Load().reserve[c.workload.index]) {
			return c.wait(ctx, blocked{bucket: s, reason: s.queueReason(c.t.clock.Now())})
		}
	}
	b, err := c.tryAdmit(ctx)
	if err != nil {
		return err
	}
	if b.bucket == nil {
		c.workload.counts.admitted.Add(1)
		c.emitAdmitted()
		return nil
	}
	return c.wait(ctx, b)
}

// queueReason says what holds back the calls waiting on s, for a call
// that must queue behind them: a pause the provider asked for, a reserve
// that keeps the tokens or slots from the first of them, every slot of the
// cap in flight (or a scope that paces nothing but its cap), else the
// rate.
func (s *bucket) queueReason(now time.Time) observe.Reason {
	if s.cooldown.Load() > now.UnixNano() {
		return observe.ReasonCooldown
	}
	if s.headReason() == observe.ReasonReserve {
		return observe.ReasonReserve
	}
	if c := s.scope; c.Concurrency > 0 {
		limit := c.Concurrency
		if s.climb() != nil {
			limit, _ = s.slots()
		}
		if rate, _ := s.pace(); rate == 0 || int(s.inFlight.Load()) >= limit {
			return observe.ReasonConcurrency
		}
	}
	return observe.ReasonRate
}

// emitAdmitted tells observers the call was admitted. Without observers it
// is small enough to be inlined.
func (c *call) emitAdmitted() {
	if len(c.t.observers) > 0 {
		c.emitAdmittedNow()
	}
}

func (c *call) emitAdmittedNow() {
	c.t.emit(observe.Event{Kind: observe.EventAdmitted, Scope: c.firstScope(), Workload: c.workload.name})
}

func (c *call) firstScope() string {
	if len(c.charges) == 0 {
		return ""
	}
	return c.charges[0].bucket.scope.Name
}

// emitRefusal counts a refusal of admission for Stats, and tells observers
// why admission refused the call.
func (c *call) emitRefusal(err error) {
	var te *ThrottledError
	if !errors.As(err, &te) {
		return
	}
	c.workload.throttled(c.t.clock.Now(), te)
	if len(c.t.observers) > 0 {
		c.t.emit(observe.Event{Kind: observe.EventThrottled, Scope: te.Scope, Workload: c.workload.name, Wait: te.RetryAfter, Err: err})
	}
}

// tryAdmit takes the call's slots and tokens, all or none, without waiting.
func (c *call) tryAdmit(ctx context.Context) (blocked, error) {
	now := c.t.clock.Now()
	for i := range c.charges {
		// By index, not by copy: a charge is eight words. The check before
		// the call spares it when no scope was paused.
		if s := c.charges[i].bucket; s.cooldown.Load() != 0 {
			if wait, ok := c.cooledDown(s, now); !ok {
				return blocked{bucket: s, reason: observe.ReasonCooldown, wait: wait}, nil
			}
		}
	}
	if c.workload.SpreadLongWindows {
		for i := range c.charges { // longwindow.go
			if s := c.charges[i].bucket; s.long.Load() != nil {
				if wait, held := s.lastingWait(now); held {
					return blocked{bucket: s, reason: observe.ReasonRate, wait: wait}, nil
				}
			}
		}
	}
	if c.needsSlots {
		epoch := slots.Epoch(now)
		for i := range c.charges {
			ch := &c.charges[i]
			ch.slotEpoch = epoch
			if ch.heldWith = ch.bucket.acquireSlot(c.workload.index, epoch); ch.heldWith < 0 {
				c.releaseSlots(i)
				// A full scope may be full of slots never given back.
				c.t.checkSlotsSometimes(ch.bucket, now)
				return blocked{bucket: ch.bucket, reason: ch.bucket.slotRefusal(c.workload.index)}, nil
			}
		}
		c.holdsSlots = true
	}
	d := store.Decision{OK: true}
	var err error
	if c.prepaid {
		// A reservation took the tokens: only its slots were missing.
	} else if c.setDemands(); len(c.demands) > 0 {
		d, err = c.t.store.Take(ctx, now, c.demands)
	}
	if err == nil && d.OK {
		c.admitted = now.UnixNano()
		if c.holdsSlots && c.t.slotCheckDue(now) {
			c.t.checkAllSlots(now)
		}
		if !c.prepaid { // a reservation counted its call when it took the tokens
			c.countAdmitted(d.Taken)
		}
		if c.workload.SpreadLongWindows {
			for i := range c.charges {
				c.charges[i].bucket.spreadAdmitted(now, c.charges[i].cost)
			}
		}
		return blocked{}, nil
	}
	if c.holdsSlots {
		c.releaseSlots(len(c.charges))
	}
	if err != nil {
		c.t.emit(observe.Event{Kind: observe.EventStoreFailure, Workload: c.workload.name, Err: err})
		return blocked{}, fmt.Errorf("pacer: taking tokens: %w", err)
	}
	b := blocked{bucket: c.charges[c.owners[d.Blocked]].bucket, reason: observe.ReasonRate, wait: d.Wait}
	if b.bucket.published() != nil && c.forgetUnconfirmed(b.bucket, now) {
		// Responses forget a published limit nobody confirms; so must a
		// scope that one holds back, or it holds back the very calls whose
		// answers would forget it. Try again at the configured pace: once,
		// since the limit is forgotten now.
		return c.tryAdmit(ctx)
	}
	if d.Wait == store.Never {
		b.reason = observe.ReasonCapacity
	} else if reserveHolds(&c.demands[d.Blocked], d.Wait) {
		b.reason = observe.ReasonReserve
	}
	return b, nil
}

// reserveHolds reports whether the store refused d only for its Floor: the
// bucket holds the call's cost, but not the reserve of other workloads
// beside it. The store's wait is what the cost and the floor need beyond
// the level, in whole nanoseconds (store.Demand), so it is at most the
// floor's worth exactly when the level covers the cost.
func reserveHolds(d *store.Demand, wait time.Duration) bool {
	return d.Floor > 0 && d.Rate > 0 && float64(wait) <= math.Ceil(d.Floor/d.Rate*float64(time.Second))
}

// countAdmitted counts the call as admitted, and its cost as spent, on
// every scope: what learn measures a response's remaining count against.
// taken is what the store says the whole fleet has taken from the first
// demand's bucket (store.Decision.Taken), or 0 if it does not say: the
// fleet's spent, as the scope's own is its spent. A charge whose take did
// not say (another scope of the call, a reservation) keeps the latest
// total its scope saw: a few calls behind, and in the same unit.
//
// The in-memory store's buckets are this process's own, whose spent is
// the fleet's: its totals are not kept, sparing every call a write to a
// word all callers share.
func (c *call) countAdmitted(taken float64) {
	for i := range c.charges {
		ch := &c.charges[i]
		ch.admittedAt = ch.bucket.admitted.Add(1)
		ch.spentAt = ch.bucket.spent.Add(int64(ch.cost))
	}
	if c.t.ownsBuckets() {
		return
	}
	for i := range c.charges {
		c.charges[i].takenAt = c.charges[i].bucket.taken.Load()
	}
	if taken > 0 && len(c.owners) > 0 {
		ch := &c.charges[c.owners[0]]
		ch.takenAt = int64(taken)
		// The latest, not the largest: a store that forgot the bucket
		// (full, idle) starts its total again, and the calls answered out
		// of order that this may step back over are a few units.
		ch.bucket.taken.Store(ch.takenAt)
	}
}

// releaseSlots gives back the slots of the first n charges.
func (c *call) releaseSlots(n int) {
	for _, ch := range c.charges[:n] {
		ch.bucket.releaseSlot(c.workload.index, ch.slotEpoch, c.waiter)
	}
	c.holdsSlots = false
}

func (c *call) costOn(s *bucket) float64 {
	for _, ch := range c.charges {
		if ch.bucket == s {
			return ch.cost
		}
	}
	return 0
}

// wait queues the call on the scope that blocked it until it is admitted.
// Only the head of a queue tries for admission, sleeping until the store
// says its tokens will be there, or until a slot is released; the calls
// behind it sleep until they reach the head. If the next attempt blocks on
// another scope, the call moves to that scope's queue, keeping its place in
// arrival order.
//
// Each turn of its loop moves the call to the queue of the scope that blocks
// it, checks that the wait can still end in time (cannotWait, the one place
// the deadline is judged), tries once if the call heads its queue, and
// otherwise sleeps. It returns once per outcome: admitted, refused by
// cannotWait, the store's error, the context or Call.MaxWait ended,
// or shed from a full queue.
func (c *call) wait(ctx context.Context, b blocked) error {
	if err := c.cannotWait(ctx, b); err != nil {
		return err // before queueing: a call that will not wait takes no place
	}
	b.bucket.burstEnds() // firstburst.go
	start := c.t.clock.Now()
	w := queue.NewWaiter(c.workload.index, b.bucket.scope.shares.Load().reserve[c.workload.index], c.t.arrivals.Add(1), c.priority, start)
	w.Tag = c.workload.fair.Tag(c.tenant, tenantWeight(c.weight), c.costOn(b.bucket))
	if err := c.workload.waiting.Join(w); err != nil {
		return b.queueFull(c.workload, err)
	}
	defer c.workload.waiting.Leave(w)
	c.waiter = w
	var in *bucket // the scope whose queue the call is in
	sleep := c.newWaitTimers()
	defer func() {
		sleep.stop()
		if in != nil {
			in.leave(w)
		}
		c.waiter = nil
	}()
	tried, woken := false, false // since the last sleep
	for {
		if in != b.bucket {
			if in != nil {
				in.leave(w)
			}
			in, woken = b.bucket, false
			w.Cost, w.Reason = c.costOn(in), string(b.reason) // in no queue: Stats cannot see it
			b.wait += c.aheadOf(in, w)
		} else if w.Reason != string(b.reason) {
			in.setReason(w, b.reason)
		}
		if err := c.cannotWait(ctx, b); err != nil {
			return err
		}
		head := in.headOf()
		if head == w && !tried {
			next, err := c.tryAdmit(ctx)
			if err != nil {
				return err
			}
			if next.bucket == nil {
				c.workload.fair.Served(w.Tag)
				c.workload.counts.admitted.Add(1)
				c.workload.counts.waited.Add(1)
				c.emitAdmitted()
				if len(c.t.observers) > 0 {
					c.t.emit(observe.Event{Kind: observe.EventWaited, Scope: in.scope.Name, Workload: c.workload.name, Wait: c.t.clock.Now().Sub(start)})
				}
				return nil
			}
			b, tried = next, true
			continue // judge the new wait, or move, before sleeping on it
		}
		if head != w && woken {
			// The head can change with no call leaving (a workload took or
			// gave back its reserved slots): pass the wake on.
			head.Signal()
		}
		if err := sleep.until(ctx, w, b, head == w); err != nil {
			return err
		}
		if w.Shed() {
			// A newcomer of higher priority took this call's place in its
			// workload's bounded queue (Workload.MaxWaiting).
			return b.queueFull(c.workload, queue.ErrShed)
		}
		// The wait b told of is over, or a wake says to look again: what
		// is left of it is known only from the next try.
		b.wait = 0
		tried, woken = false, true
	}
}

// aheadOf queues w on s and returns a lower bound on its wait for the calls
// ahead of it, which must be paid for before it: good enough to give up at
// once on a deadline.
func (c *call) aheadOf(s *bucket, w *queue.Waiter) time.Duration {
	ahead := s.enqueue(w)
	if rate, _ := s.scope.configuredPace(); rate > 0 && ahead > 0 {
		return time.Duration(ahead / rate * float64(time.Second))
	}
	return 0
}

// waitTimers are what a waiting call sleeps on besides its wake: the time
// the store said its tokens will be there (one timer, reset turn by turn),
// and the call's own bound on waiting (Call.MaxWait).
type waitTimers struct {
	clock  clock.Clock
	tokens clock.Timer
	expire clock.Timer // nil without a Call.MaxWait
}

func (c *call) newWaitTimers() *waitTimers {
	t := &waitTimers{clock: c.t.clock}
	if c.maxWait > 0 {
		t.expire = c.t.clock.NewTimer(c.maxWait)
	}
	return t
}

// until sleeps until w is woken (a slot was released, it reached the head,
// or it was shed from its workload's full queue), until the wait b says the
// store asked for has passed, or a lowered cap has risen (for the head of
// its queue only), or until the call must stop waiting: its context ended,
// or its Call.MaxWait passed.
func (t *waitTimers) until(ctx context.Context, w *queue.Waiter, b blocked, head bool) error {
	var fire, expire <-chan time.Time
	d := b.wait
	if d <= 0 && head && (b.reason == observe.ReasonConcurrency || b.reason == observe.ReasonReserve) {
		// A cap that a cut lowered climbs back by time, and nothing else
		// would wake the head while the calls in flight hold their slots.
		// Unlike b.wait this bounds the wait from above, so no deadline is
		// judged by it; it is found here, off the path of a call admitted
		// at once.
		d = b.bucket.slotsRiseIn(w.Workload, t.clock.Now())
	}
	if d > 0 && head {
		if t.tokens == nil {
			t.tokens = t.clock.NewTimer(d)
		} else {
			t.tokens.Reset(d)
		}
		fire = t.tokens.C()
	}
	if t.expire != nil {
		expire = t.expire.C()
	}
	select {
	case <-ctx.Done():
		return b.error(ctx.Err())
	case <-expire:
		return b.error(context.DeadlineExceeded)
	case <-w.Wake():
	case <-fire:
	}
	return nil
}

func (t *waitTimers) stop() {
	if t.tokens != nil {
		t.tokens.Stop()
	}
	if t.expire != nil {
		t.expire.Stop()
	}
}

// cannotWait returns the error for a wait the call will not make: one that
// no wait ends, one on a scope that fails fast, or one that cannot end
// before the context's deadline — returned now, not at the deadline.
func (c *call) cannotWait(ctx context.Context, b blocked) error {
	if b.reason == observe.ReasonCooldown && b.bucket.farReset.Load() != nil {
		// A pause the provider asked for beyond the maximum wait: said at
		// once, with when it says the quota returns (farreset.go).
		now := c.t.clock.Now()
		if at, far := b.bucket.farResetAt(now); far {
			b.wait = time.Duration(b.bucket.cooldown.Load() - now.UnixNano()) // until it checks again
			return b.error(beyondMaxWait(now, at, b.wait, c.t.maxWait))
		}
	}
	switch {
	case b.wait == store.Never:
		_, burst := b.bucket.pace()
		return b.error(fmt.Errorf("%w: it costs %v %s and the bucket holds at most %v; "+
			"make the request smaller, or raise the scope's Limit.Burst if the provider allows one request that large",
			ErrExceedsCapacity, c.costOn(b.bucket), b.bucket.scope.Unit, burst))
	case b.bucket.scope.FailFast || c.failFast:
		return b.error(nil)
	case c.maxWait != 0 && b.wait > c.maxWait: // a negative MaxWait allows none
		// A lower bound on the wait already past the call's own bound:
		// say so now (the bound's timer in wait covers the rest).
		return b.error(context.DeadlineExceeded)
	}
	if deadline, ok := ctx.Deadline(); ok && b.wait > 0 && b.wait > deadline.Sub(c.t.clock.Now()) {
		return b.error(context.DeadlineExceeded)
	}
	return nil
}

// enter spends the call's budget and admits it: steps 3 and 4 of every
// attempt, a request's or a permit's, which is what keeps the two alike.
// On a refusal the call is finished, its budget given back.
func (c *call) enter(ctx context.Context) error {
	if c.budget[0].Cost > 0 { // spendBudget's own first check, without the call
		if err := c.spendBudget(ctx); err != nil { // step 3
			c.finish()
			return err
		}
	}
	if err := c.admit(ctx); err != nil { // step 4
		c.emitRefusal(err)
		c.refundBudget(ctx)
		c.finish()
		return err
	}
	return nil
}
