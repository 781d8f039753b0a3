package pacer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// A call is one request on its way through the Transport: the scopes it is
// charged to and what it holds of them. Calls are pooled; their buffers
// keep the common case of a few charges free of allocations.
type call struct {
	t        *Transport
	workload *workloadState

	charges []charge // one per distinct bucket
	demands []Demand // what Take asks of the store
	owners  []int    // owners[i] is the charge that demands[i] serves

	waiter      *waiter   // while the call waits in a queue
	budget      [1]Demand // the budget demand with this call's cost; Cost 0 if none
	budgetSpent bool
	metered     callMeter // budget.go
	needsSlots  bool      // some scope charged caps concurrency
	holdsSlots  bool
	prepaid     bool // a reservation took the call's tokens already (permit.go)
	// cancel ends the attempt's own context (RetryPolicy.AttemptTimeout).
	cancel context.CancelFunc

	// What the call's context overrides (ContextWithFailFast and the like).
	failFast bool
	maxWait  time.Duration // 0: none
	priority int           // within the workload's line; larger first
	tenant   string        // the call's tenant, from its context or WithTenant; "" if none
	weight   float64       // the tenant's weight

	routedBuf [4]Charge
	chargeBuf [4]charge
	demandBuf [4]Demand
	ownerBuf  [4]int
}

type charge struct {
	state      *scopeState
	key        string
	cost       float64
	admittedAt int64 // the scope's admitted count when this call was admitted
	spentAt    int64 // the scope's spent units, this call's included, then
	slotEpoch  int64 // when the call took its slot (slotage.go)
}

var defaultCharges = []Charge{{Scope: DefaultScope}}

// newPooledCall returns a call for the Transport's pool, its slices on its
// own buffers.
func newPooledCall(t *Transport) any {
	c := &call{t: t}
	c.charges, c.demands, c.owners = c.chargeBuf[:0], c.demandBuf[:0], c.ownerBuf[:0]
	return c
}

// newCall routes req and reads its workload and costs from its context.
func (t *Transport) newCall(req *http.Request) (*call, error) {
	return t.callFor(req.Context(), req, nil)
}

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
			t.unknownWorkload(vals.workload)
		}
	}
	if c.workload != workload {
		c.workload = workload
	}
	if req != nil && len(t.routes) == 0 || req == nil && len(given) == 0 {
		// The one charge to DefaultScope, without the loop.
		c.addCharge(t.defaultClass, defaultCharges[0], vals)
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
		class := t.defaultClass // the common case, without a map lookup
		if ch.Scope != DefaultScope {
			class = t.scopes[ch.Scope]
		}
		if class == nil {
			c.finish()
			if req == nil {
				return nil, fmt.Errorf("pacer: the permit is charged to scope %q, which is not declared; declare it with WithScope", ch.Scope)
			}
			return nil, fmt.Errorf("pacer: a route charged the request to scope %q, which is not declared; declare it with WithScope", ch.Scope)
		}
		c.addCharge(class, ch, vals)
	}
	return c.plan(req, vals)
}

// addCharge adds a charge. Two charges to one bucket become one, so the
// bucket is never asked twice in one Take.
func (c *call) addCharge(class *scopeClass, ch Charge, vals *callValues) {
	cost := chargeCost(class, ch, vals)
	state := class.state(ch.Key)
	for i := range c.charges {
		if c.charges[i].state == state {
			state.release()
			c.charges[i].cost += cost
			return
		}
	}
	// Names and states left from the call's last use are kept when they are
	// the same, sparing the write barriers (see extend).
	e := extend(&c.charges)
	if e.state != state {
		e.state = state
	}
	if e.key != ch.Key {
		e.key = ch.Key
	}
	e.cost, e.admittedAt, e.spentAt = cost, 0, 0
	c.needsSlots = c.needsSlots || class.Concurrency > 0
}

// pace sets out what the call demands of the store, at each bucket's pace
// as of now: a limit learned or a rate cut while the call waited applies to
// its next attempt.
func (c *call) pace() {
	c.demands, c.owners = c.demands[:0], c.owners[:0]
	w := c.workload.index
	for i, ch := range c.charges {
		rate, burst := ch.state.pace()
		if burst == 0 {
			continue // the scope caps concurrency only
		}
		class := ch.state.class
		sh := class.shares.Load()
		// A floor above burst − cost would make the request wait forever; a
		// reserve too small to hold one request reserves nothing.
		floor := min(sh.othersReserve[w]*burst, max(0, burst-ch.cost))
		c.addDemand(class.Name, ch.key, rate, burst, ch.cost, floor, i)
		if name := sh.maxScope[w]; name != "" {
			share := sh.max[w]
			c.addDemand(name, ch.key, rate*share, max(1, burst*share), ch.cost, 0, i)
		}
	}
}

// extend lengthens *s by one element and returns it, as the element was left
// by the pooled call's last use when the buffer has room: the caller sets
// only what changed, sparing the garbage collector's write barriers.
func extend[T any](s *[]T) *T {
	n := len(*s)
	if n == cap(*s) {
		*s = append(*s, *new(T))
	} else {
		*s = (*s)[:n+1]
	}
	return &(*s)[n]
}

// setNames sets d's scope and key, leaving each as it is when it is the
// same: a pooled call mostly paces the bucket it paced last time, and
// leaving its names spares the garbage collector's write barriers.
func (d *Demand) setNames(scope, key string) {
	if d.Scope != scope {
		d.Scope = scope
	}
	if d.Key != key {
		d.Key = key
	}
}

// addDemand appends a demand.
func (c *call) addDemand(scope, key string, rate, burst, cost, floor float64, owner int) {
	d := extend(&c.demands)
	d.setNames(scope, key)
	d.Rate, d.Burst, d.Window, d.Cost, d.Floor = rate, burst, 0, cost, floor
	c.owners = append(c.owners, owner)
}

func chargeCost(class *scopeClass, ch Charge, vals *callValues) float64 {
	if n, ok := vals.cost(class.Unit); ok {
		return float64(max(n, 0))
	}
	if ch.Cost > 0 {
		return float64(ch.Cost)
	}
	if class.countsRequests {
		return 1
	}
	return 0
}

// holdsResources reports whether finishing the call releases anything.
func (c *call) holdsResources() bool {
	if c.holdsSlots {
		return true
	}
	for _, ch := range c.charges {
		if ch.state.key != "" {
			return true
		}
	}
	return false
}

// finish releases everything the call holds and returns it to the pool.
func (c *call) finish() {
	for _, ch := range c.charges {
		if c.holdsSlots {
			ch.state.releaseSlot(c.workload.index, ch.slotEpoch, nil)
		}
		ch.state.release()
	}
	// The call keeps its workload and the scope states and names of its
	// last charges until it is used again: a few pointers per pooled call,
	// into what the Transport holds anyway. Clearing them, and pointing the
	// slices back at the buffers on the next use, would cost every call the
	// garbage collector's write barriers to spare that little memory.
	c.charges, c.demands, c.owners = c.charges[:0], c.demands[:0], c.owners[:0]
	c.budget[0].Cost = 0
	c.metered.on = false
	c.budgetSpent, c.needsSlots, c.holdsSlots, c.prepaid = false, false, false, false
	if c.cancel != nil {
		c.cancel()
		c.cancel = nil
	}
	c.t.calls.Put(c)
}

// blocked says where and why a call could not be admitted.
type blocked struct {
	state  *scopeState // nil when the call was admitted
	reason string
	wait   time.Duration // until admission might succeed; 0 when unknown
}

func (b blocked) error(cause error) error {
	e := &ThrottledError{Scope: b.state.class.Name, Reason: b.reason, Err: cause}
	if b.wait != Never {
		e.RetryAfter = b.wait
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
		// Calls that were here first, or that matter more, go first.
		if s := c.charges[i].state; s.servesBefore(c.workload.index, s.class.shares.Load().reserve[c.workload.index]) {
			return c.wait(ctx, blocked{state: s, reason: ReasonRate})
		}
	}
	b, err := c.tryAdmit(ctx)
	if err != nil {
		return err
	}
	if b.state == nil {
		c.emitAdmitted()
		return nil
	}
	return c.wait(ctx, b)
}

func (c *call) emitAdmitted() {
	if len(c.t.observers) > 0 {
		c.t.emit(Event{Kind: EventAdmitted, Scope: c.firstScope(), Workload: c.workload.name})
	}
}

func (c *call) firstScope() string {
	if len(c.charges) == 0 {
		return ""
	}
	return c.charges[0].state.class.Name
}

// emitRefusal tells observers why admission refused the call.
func (c *call) emitRefusal(err error) {
	var te *ThrottledError
	if len(c.t.observers) > 0 && errors.As(err, &te) {
		c.t.emit(Event{Kind: EventThrottled, Scope: te.Scope, Workload: c.workload.name, Wait: te.RetryAfter, Err: err})
	}
}

// tryAdmit takes the call's slots and tokens, all or none, without waiting.
func (c *call) tryAdmit(ctx context.Context) (blocked, error) {
	now := c.t.clock.Now()
	for _, ch := range c.charges {
		if wait, ok := c.cooledDown(ch.state, now); !ok {
			return blocked{state: ch.state, reason: ReasonCooldown, wait: wait}, nil
		}
	}
	if c.needsSlots {
		epoch := slotEpoch(now)
		for i := range c.charges {
			ch := &c.charges[i]
			ch.slotEpoch = epoch
			if !ch.state.acquireSlot(c.workload.index, epoch) {
				c.releaseSlots(i)
				// A full scope may be full of slots never given back.
				c.t.checkSlotsSometimes(ch.state, now)
				return blocked{state: ch.state, reason: ReasonConcurrency}, nil
			}
		}
		c.holdsSlots = true
	}
	d := Decision{OK: true}
	var err error
	if c.prepaid {
		// A reservation took the tokens: only its slots were missing.
	} else if c.pace(); len(c.demands) > 0 {
		d, err = c.t.store.Take(ctx, now, c.demands)
	}
	if err == nil && d.OK {
		if c.holdsSlots {
			c.t.checkAllSlots(now)
		}
		for i := range c.charges {
			ch := &c.charges[i]
			ch.admittedAt = ch.state.admitted.Add(1)
			ch.spentAt = ch.state.spent.Add(int64(ch.cost))
		}
		return blocked{}, nil
	}
	if c.holdsSlots {
		c.releaseSlots(len(c.charges))
	}
	if err != nil {
		c.t.emit(Event{Kind: EventStoreFailure, Workload: c.workload.name, Err: err})
		return blocked{}, fmt.Errorf("pacer: taking tokens: %w", err)
	}
	b := blocked{state: c.charges[c.owners[d.Blocked]].state, reason: ReasonRate, wait: d.Wait}
	if d.Wait == Never {
		b.reason = ReasonCapacity
	}
	return b, nil
}

// releaseSlots gives back the slots of the first n charges.
func (c *call) releaseSlots(n int) {
	for _, ch := range c.charges[:n] {
		ch.state.releaseSlot(c.workload.index, ch.slotEpoch, c.waiter)
	}
	c.holdsSlots = false
}

func (c *call) costOn(s *scopeState) float64 {
	for _, ch := range c.charges {
		if ch.state == s {
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
func (c *call) wait(ctx context.Context, b blocked) error {
	if err := c.cannotWait(ctx, b); err != nil {
		return err // before queueing: a call that will not wait takes no place
	}
	seq := c.t.arrivals.Add(1)
	w := &waiter{workload: c.workload.index, priority: b.state.class.shares.Load().reserve[c.workload.index], seq: seq, rank: c.priority, wake: make(chan struct{}, 1)}
	w.tag = c.workload.fair.tag(c.tenant, c.weight, c.costOn(b.state))
	if err := c.workload.waiting.join(w); err != nil {
		return b.queueFull(c.workload, err)
	}
	defer c.workload.waiting.leave(w)
	c.waiter = w
	defer func() { c.waiter = nil }()
	start := c.t.clock.Now()
	var timer Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var expire <-chan time.Time
	if c.maxWait > 0 {
		// The per-call bound on waiting (ContextWithMaxWait), in the clock's time.
		limit := c.t.clock.NewTimer(c.maxWait)
		defer limit.Stop()
		expire = limit.C()
	}
	for {
		if err := c.cannotWait(ctx, b); err != nil {
			return err
		}
		s := b.state
		w.cost = c.costOn(s)
		ahead := s.enqueue(w)
		if rate, _ := s.class.configuredPace(); rate > 0 && ahead > 0 {
			// The calls ahead must be paid for before this one: a lower bound
			// on the wait, good enough to give up at once on a deadline.
			b.wait += time.Duration(ahead / rate * float64(time.Second))
			if err := c.cannotWait(ctx, b); err != nil {
				s.leave(w)
				return err
			}
		}
		for moved, woken := false, false; !moved; {
			h := s.headOf()
			head := h == w
			if !head && woken {
				// The head can change with no call leaving (a workload
				// took or gave back its reserved slots): pass the wake on.
				h.signal()
			}
			if head {
				next, err := c.tryAdmit(ctx)
				switch {
				case err != nil:
					s.leave(w)
					return err
				case next.state == nil:
					s.leave(w)
					c.workload.fair.served(w.tag)
					c.emitAdmitted()
					if len(c.t.observers) > 0 {
						c.t.emit(Event{Kind: EventWaited, Scope: s.class.Name, Workload: c.workload.name, Wait: c.t.clock.Now().Sub(start)})
					}
					return nil
				case next.state != s:
					s.leave(w)
					b, moved = next, true
					continue
				}
				b = next
				if err := c.cannotWait(ctx, b); err != nil {
					s.leave(w)
					return err
				}
			}
			var fire <-chan time.Time
			if b.wait > 0 && head {
				if timer == nil {
					timer = c.t.clock.NewTimer(b.wait)
				} else {
					timer.Reset(b.wait)
				}
				fire = timer.C()
			}
			select {
			case <-ctx.Done():
				s.leave(w)
				return b.error(ctx.Err())
			case <-expire:
				s.leave(w)
				return b.error(context.DeadlineExceeded)
			case <-w.wake:
			case <-fire:
			}
			if w.shed.Load() {
				// A newcomer of higher priority took this call's place in
				// its workload's bounded queue (Workload.MaxWaiting).
				s.leave(w)
				return b.queueFull(c.workload, errShed)
			}
			woken = true
		}
	}
}

// cannotWait returns the error for a wait the call will not make: one that
// no wait ends, one on a scope that fails fast, or one that cannot end
// before the context's deadline — returned now, not at the deadline.
func (c *call) cannotWait(ctx context.Context, b blocked) error {
	switch {
	case b.wait == Never:
		_, burst := b.state.pace()
		return b.error(fmt.Errorf("%w: it costs %v %s and the bucket holds at most %v; "+
			"make the request smaller, or raise the scope's Limit.Burst if the provider allows one request that large",
			ErrExceedsCapacity, c.costOn(b.state), b.state.class.Unit, burst))
	case b.state.class.FailFast || c.failFast:
		return b.error(nil)
	case c.maxWait > 0 && b.wait > c.maxWait:
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
	if err := c.spendBudget(ctx); err != nil { // step 3
		c.finish()
		return err
	}
	if err := c.admit(ctx); err != nil { // step 4
		c.emitRefusal(err)
		c.refundBudget(ctx)
		c.finish()
		return err
	}
	return nil
}
