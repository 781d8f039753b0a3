package pacer

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/period"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/usage/prices"
)

// A Budget caps what a workload may spend in a period: Limit units (requests
// by default) or Spend dollars, per Per or per calendar Period:
//
//	Budget{Spend: prices.Dollars(0.50), Period: period.Daily(0, 0, time.UTC)} // 50 cents a day
//	Budget{Limit: 5000, Per: 24 * time.Hour}                                 // 5,000 requests a day
//	Budget{Limit: 1e6, Unit: "tokens", Per: time.Hour}                       // a million tokens an hour
//
// Set exactly one of Limit and Spend, and one of Per and Period; the zero
// Budget sets neither and is no cap. With Per, the period starts with the
// first attempt after the previous one ended; with Period, it follows the
// calendar, and every process of a fleet sharing a store shares it.
//
// A budget counts attempts that reach the provider, which may bill each of
// them: a GET retried twice spends 3. An attempt pacer does not send, or
// whose connection could not be made, is given back. A refused call fails
// at once with a *BudgetError (errors.Is ErrBudgetExhausted), wrapped in a
// *retry.Error when it was a retry.
//
// On a Transport with a Meter (the OpenAI and Anthropic presets set one), a
// budget in tokens or money is reserved on the call's estimate and settled,
// when its body ends, on what the provider billed, read from the response:
// a rejected call at zero, a cut stream on what streamed (plus a stated
// margin), a body pacer cannot read at its estimate. A call is admitted
// only if its worst case fits what is left, so the spend in a period stays
// within
//
//	Limit + Σ (worst case − reservation) over the other calls in flight
//	when the last one was admitted
//
// give or take what the input estimate misses by. Money is counted in
// integer micro-dollars at the Meter's prices (WithPrices overrides them);
// a model without a price is refused (prices.ErrNoPrice), never counted as
// free. A Permit is never metered: see Permit for what it is charged.
// README's "Budgets in money and tokens" says each case, with the figures
// measured.
type Budget struct {
	// Limit is how many of Unit may be spent in a period.
	Limit int64
	// Spend, set instead of Limit, is how much money may be spent in a
	// period: Spend: prices.Dollars(0.50) is fifty cents. It needs a Meter
	// to price calls (the OpenAI and Anthropic presets set one). A Spend of
	// $100,000 or more in a period is said in the log, since it is most
	// likely micro-dollars given as dollars (prices.Micros says those);
	// one beyond $9,007,199,254 (2^53 micro-dollars, what every store
	// counts exactly) is an error.
	Spend prices.Money
	Per   time.Duration
	// Period, set instead of Per, is a calendar period: period.Daily,
	// Weekly or Monthly. A period.Window is Per.
	Period period.Period
	// Unit is what Limit counts: "requests" (the default) counts one per
	// attempt; any other unit counts the request's cost in that unit, as
	// estimated by a route for a scope counted in it, by the Meter (the
	// presets' token units), or as stated with ContextWithCost. It must be
	// one of those the Transport counts: UnitRequests, a unit some scope or
	// the Meter counts, matched whatever its case; or, with Stated, one that
	// callers state. Any other is an error in Err(), so that a typo
	// ("token", "request") is not a budget every call passes free. Money is
	// not a unit: set Spend.
	Unit string
	// Stated declares Unit as a unit that callers state the cost of, with
	// ContextWithCost, and that no scope or Meter counts: only calls that
	// state a cost in it spend the budget; every other call passes it free.
	Stated bool
	// FollowStoreFailure makes the budget follow the Transport's
	// store.Policy.OnFailure while its shared store is down, instead of
	// refusing every call: store.FailOpen spends without the store, and
	// store.FallBackLocal lets this process spend Limit/Instances in the
	// period. Set it for a workload that must keep working through an
	// outage more than it must hold its cap. Either way, a process never
	// spends more than Limit in a period by its own count. See
	// store.Policy.OnFailure.
	FollowStoreFailure bool
	// ForecastMargin is how long before its period ends the budget must be
	// forecast to run out, at its spend rate (WorkloadStats.SpendRate), for
	// WithAlerts to raise an EventBudgetForecast and an alert; zero means a
	// tenth of the period (2h24m of a day, six minutes of an hour). A
	// margin as long as the period never alerts. See WorkloadStats.RunsOut.
	ForecastMargin time.Duration
}

// unitUSD is what a budget in money counts, as Stats and metrics name it;
// the store counts it in micro-dollars.
const unitUSD = "usd"

// spendKey is the unit a money cost is stated in, by ContextWithSpend and
// Permit.SettleSpend: no unit a caller can type, so that a plain number
// never reaches a budget in money.
const spendKey = "\x00money"

// implausibleSpend is the Spend from which a budget is said in the log: a
// budget that large is most likely micro-dollars given as dollars.
var implausibleSpend = prices.Dollars(100_000)

func (b Budget) unit() string {
	switch {
	case b.money():
		return unitUSD
	case b.Unit == "":
		return UnitRequests
	}
	return b.Unit
}

// money reports whether the budget counts money (Spend).
func (b Budget) money() bool { return !b.Spend.IsZero() }

// counts reports whether a cost stated in unit is in the budget's unit:
// spendKey for money, else the unit whatever its case.
func (b Budget) counts(unit string) bool {
	if b.money() {
		return unit == spendKey
	}
	return strings.EqualFold(b.unit(), unit)
}

// capped reports whether the budget caps anything: the zero Budget does not.
func (b Budget) capped() bool { return b.Limit != 0 || b.money() }

// amount is the budget's cap in the store's units (micro-dollars for money).
func (b Budget) amount() float64 {
	if b.money() {
		return float64(b.Spend.Micros())
	}
	return float64(b.Limit)
}

// String says the budget's cap: "5 requests per 1h0m0s", "$0.50 daily at
// 00:00 UTC".
func (b Budget) String() string {
	if !b.capped() {
		return "no budget"
	}
	if b.money() {
		return b.Spend.String() + " " + b.per()
	}
	return strconv.FormatInt(b.Limit, 10) + " " + b.unit() + " " + b.per()
}

func (b Budget) calendar() bool { return b.Period != (period.Period{}) }

// scale is how many of the store's units make one of the budget's.
func (b Budget) scale() float64 {
	if b.money() {
		return prices.MicrosPerDollar
	}
	return 1
}

// per describes the budget's period: "per 24h0m0s", "daily at 00:00 UTC".
func (b Budget) per() string {
	if b.calendar() {
		return b.Period.String()
	}
	return "per " + b.Per.String()
}

func (b Budget) validate(name string) error {
	switch {
	case b.Limit != 0 && b.money():
		return fmt.Errorf("workload %q: Budget sets both Limit (%d) and Spend (%v); set Spend for money, Limit for requests or another Unit", name, b.Limit, b.Spend)
	case b.money() && (b.Unit != "" || b.Stated):
		return fmt.Errorf("workload %q: Budget sets Spend (%v) and a Unit: a budget in money counts dollars; leave Unit and Stated unset", name, b.Spend)
	case b.Spend.Micros() < 0:
		return fmt.Errorf("workload %q: Budget.Spend %v must not be negative", name, b.Spend)
	case b.ForecastMargin < 0:
		return fmt.Errorf("workload %q: Budget.ForecastMargin %v must not be negative; leave it 0 for a tenth of the period, or give the period itself to never alert", name, b.ForecastMargin)
	case b.Limit < 0 || b.Per < 0:
		return fmt.Errorf("workload %q: Budget %d per %v must not be negative", name, b.Limit, b.Per)
	case b.calendar() && b.Per > 0:
		return fmt.Errorf("workload %q: Budget sets both Per and Period; set one", name)
	case b.calendar() && b.Period.IsWindow():
		return fmt.Errorf("workload %q: Budget.Period is a window (%v); set Per instead", name, b.Period)
	case b.calendar():
		if err := b.Period.Validate(); err != nil {
			return fmt.Errorf("workload %q: Budget.Period: %w", name, err)
		}
		if !b.capped() {
			return fmt.Errorf("workload %q: Budget needs a Limit (or a Spend) with its Period", name)
		}
	case b.capped() != (b.Per > 0):
		return fmt.Errorf("workload %q: Budget needs both a Limit (or a Spend) and Per (or a calendar Period)", name)
	}
	if b.Spend.Micros() > 1<<53 {
		return fmt.Errorf("workload %q: Budget.Spend %v is more than the store counts exactly (2^53 micro-dollars, $9,007,199,254.740992); "+
			"for micro-dollars, say prices.Micros(n)", name, b.Spend)
	}
	return nil
}

// budgetState is a workload's budget as the Transport uses it.
type budgetState struct {
	// budget is the demand that spends the budget; Cost (and, for a
	// calendar period, Key and Window) are set per call.
	budget store.Demand
	// settles: the budget is counted on usage (tokens or money), so a
	// metered call's reservation is settled when its body ends.
	settles bool
	period  atomic.Pointer[budgetPeriod] // the calendar period last used
	tally   budgetTally                  // this process's spend, for Stats
	fleet   fleetReadings                // the fleet's, as the alerter last read it (fleetforecast.go)
}

// budgetPeriod is a calendar period and the store key of its spend.
type budgetPeriod struct {
	start, end time.Time
	key        string
}

// periodAt returns the calendar period containing now.
func (w *workloadState) periodAt(now time.Time) *budgetPeriod {
	if p := w.period.Load(); p != nil && !now.Before(p.start) && now.Before(p.end) {
		return p
	}
	s, e := w.Budget.Period.Bounds(now)
	p := &budgetPeriod{start: s, end: e, key: w.name + "@" + strconv.FormatInt(s.Unix(), 10)}
	w.period.Store(p)
	return p
}

// initBudget sets up w's budget.
func (t *Transport) initBudget(w *workloadState) error {
	b := w.Budget
	w.budget = store.Demand{Scope: reservedPrefix + "budget", Key: w.name, Burst: b.amount(), Window: b.Per}
	w.settles = b.capped() && b.unit() != UnitRequests && t.meter != nil
	return t.checkMeter(w)
}

// plan reads what the call reserves of its budget, and of the Meter's
// estimate; it finishes the call if the budget cannot count it. A permit
// (req nil) is never metered: it charges what its caller states, and one
// on a workload whose budget counts tokens or money must state its cost
// in the budget's unit (see Permit).
func (c *call) plan(req *http.Request, vals *callValues) (*call, error) {
	if m := c.t.meter; m != nil && m.Estimate != nil && req != nil {
		if err := c.meterFor(req, m); err != nil {
			c.finish()
			return nil, err
		}
	}
	stated := c.budgetFor(vals)
	if req == nil && c.workload.budget.Burst > 0 && c.workload.Budget.unit() != UnitRequests {
		if !stated {
			w := c.workload // finish puts c back in the pool, for another call
			c.finish()
			return nil, unstatedPermitCost(w)
		}
		// At least one unit, so that a spent budget refuses the permit
		// even when it states a cost of zero, to be settled at its end.
		c.budget[0].Cost = max(c.budget[0].Cost, 1)
	}
	return c, nil
}

// unstatedPermitCost is the error of a permit that states no cost in the
// unit of its workload's budget, which nothing else can price.
func unstatedPermitCost(w *workloadState) error {
	unit := w.Budget.unit()
	if w.Budget.money() {
		return fmt.Errorf("pacer: workload %q has a budget in money, and a permit runs no Meter: state the permit's estimated cost "+
			"with ContextWithSpend(ctx, prices.Dollars(x)) (0 if unknown), then report what it cost with p.SettleSpend(prices.Dollars(y)).Accept()", w.name)
	}
	return fmt.Errorf("pacer: workload %q has a budget in %s, and a permit runs no Meter: state the permit's estimated cost with "+
		"a Charge on a scope counted in %q, or ContextWithCost(ctx, %q, n) (0 if unknown), then report what it cost with p.Settle(%q, n).Accept()",
		w.name, unit, unit, unit, unit)
}

// budgetFor sets out what the call spends of its workload's budget. It
// reports false for a permit whose cost nothing states (see budgetCost).
func (c *call) budgetFor(vals *callValues) bool {
	w := c.workload
	b := &w.budget
	if b.Burst <= 0 {
		return true
	}
	d := &c.budget[0]
	key, window := b.Key, b.Window
	if w.Budget.calendar() {
		p := w.periodAt(c.t.clock.Now())
		key, window = p.key, p.end.Sub(p.start)
	}
	setNames(d, b.Scope, key)
	cost, headroom, stated := c.budgetCost(vals)
	// The Floor is the call's headroom: see takeBudget.
	d.Rate, d.Burst, d.Window, d.Cost, d.Floor = b.Rate, b.Burst, window, cost, headroom
	return stated
}

// budgetCost is what the call reserves of its workload's budget, and its
// headroom: how much more its worst case may cost. For a budget in money,
// it is the metered call's estimated cost, else what the context states
// with ContextWithSpend (micro-dollars); for any other, the cost the context states
// in the budget's unit, else one request; else the Meter's estimate in
// that unit, or the largest charge in that unit.
//
// stated is false when nothing gave the call a cost in a unit other than
// requests: a request then costs nothing (one the Meter does not meter, a
// list of models), but a permit, which no Meter estimates, cannot be
// admitted (plan).
func (c *call) budgetCost(vals *callValues) (cost, headroom float64, stated bool) {
	unit := c.workload.Budget.unit()
	if c.workload.Budget.money() {
		if c.metered.on {
			if c.metered.priced {
				p := &c.metered.price
				r := p.Cost(c.metered.est).Micros()
				return float64(r), float64(max(p.Cost(c.metered.worst).Micros()-r, 0)), true
			}
			return 0, 0, true
		}
		if n, ok := vals.cost(spendKey); ok {
			return float64(max(n, 0)), 0, true
		}
		return 0, 0, false
	}
	if n, ok := vals.cost(unit); ok {
		return float64(max(n, 0)), 0, true
	}
	if unit == UnitRequests {
		return 1, 0, true
	}
	if c.metered.on {
		if n, ok := c.t.meter.tokens(unit, c.metered.est); ok {
			w, _ := c.t.meter.tokens(unit, c.metered.worst)
			return float64(n), float64(max(w-n, 0)), true
		}
	}
	for _, ch := range c.charges {
		if ch.bucket.scope.Unit == unit {
			cost, stated = max(cost, ch.cost), true
		}
	}
	return cost, 0, stated
}

// spendBudget takes the call's cost from its workload's budget, or fails
// with a *BudgetError.
func (c *call) spendBudget(ctx context.Context) error {
	if c.budget[0].Cost <= 0 {
		return nil
	}
	w := c.workload
	now := c.t.clock.Now()
	d, crossed, err := c.takeBudget(ctx, now)
	if err != nil {
		c.t.emit(observe.Event{Kind: observe.EventStoreFailure, Workload: w.name, Err: err})
		return fmt.Errorf("pacer: checking the budget of workload %q: %w", w.name, err)
	}
	if crossed > 0 {
		c.t.crossed(w, crossed, c.budget[0], now)
	}
	if !d.OK {
		w.counts.refuse(&w.counts.refused, now, observe.ReasonBudget, "")
		c.t.emit(observe.Event{Kind: observe.EventBudgetExhausted, Workload: w.name})
		e := &BudgetError{Workload: w.name, Budget: w.Budget, ResetIn: d.Wait}
		if w.Budget.calendar() {
			e.ResetIn = w.periodAt(now).end.Sub(now)
		}
		e.Unsettled = w.tally.unsettled() > 0
		return e
	}
	c.budgetSpent = true
	c.metered.periodStart = w.tally.spend(w, now, c.budget[0].Cost, w.settles && c.metered.on)
	return nil
}

// budgetThresholds are the shares of a budget whose crossing is an event.
var budgetThresholds = [...]int{50, 80, 100}

// takeBudget takes the call's reservation from its budget, leaving at least
// its headroom (the Floor budgetFor set): a call is admitted only if its
// worst case fits what the budget has left, reservations of the calls in
// flight counted at their reservation.
//
// When observers listen, it also tells whether the budget just crossed the
// next of its thresholds this process has not seen crossed in the period,
// for the whole fleet, at no extra round trip until it does: the take
// leaves the part of the budget above the threshold as its Floor, so it is
// refused only once the fleet's spend (reservations included) would reach
// it; then it is taken again with the headroom alone. It returns the
// threshold crossed, or 0.
func (c *call) takeBudget(ctx context.Context, now time.Time) (store.Decision, int, error) {
	w := c.workload
	next := -1
	if len(c.t.observers) > 0 {
		next = w.tally.nextThreshold(w, now)
	}
	b := &c.budget[0]
	headroom := b.Floor
	if next >= 0 {
		// Half a unit more, so that a spend that reaches the threshold
		// exactly crosses it: spends are whole units (requests, tokens,
		// micro-dollars).
		b.Floor = max(headroom, b.Burst*float64(100-budgetThresholds[next])/100+0.5)
	}
	d, err := c.t.takeBudget(ctx, now, c.budget[:], w.Budget.FollowStoreFailure)
	if b.Floor == headroom || err != nil || d.OK {
		b.Floor = 0
		if next >= 0 && err == nil && !d.OK {
			// Refused outright: the fleet has spent it all.
			return d, w.tally.cross(len(budgetThresholds) - 1), nil
		}
		return d, 0, err
	}
	b.Floor = headroom
	d, err = c.t.takeBudget(ctx, now, c.budget[:], w.Budget.FollowStoreFailure)
	b.Floor = 0
	if err != nil {
		return d, 0, err
	}
	if !d.OK {
		return d, w.tally.cross(len(budgetThresholds) - 1), nil
	}
	return d, w.tally.cross(next), nil
}

// crossed tells observers that w's budget crossed percent, if no process
// sharing the store has told its own in this period: the first to take the
// threshold's one token in the period does. If the store cannot answer,
// this one does: better twice than never.
func (t *Transport) crossed(w *workloadState, percent int, b store.Demand, now time.Time) {
	window := w.Budget.Per
	if w.Budget.calendar() {
		window = w.periodAt(now).end.Sub(now) + time.Second
	}
	d := store.Demand{Scope: reservedPrefix + "threshold", Key: b.Key + "/" + strconv.Itoa(percent), Burst: 1, Window: window, Cost: 1}
	if dec, err := t.store.Take(context.Background(), now, []store.Demand{d}); err == nil && !dec.OK {
		return
	}
	t.emit(observe.Event{Kind: observe.EventBudgetThreshold, Workload: w.name, Percent: percent})
}

// refundBudget gives back the budget of a call that was not sent.
func (c *call) refundBudget(ctx context.Context) {
	if c.budgetSpent {
		c.budgetSpent = false
		now := c.t.clock.Now()
		c.workload.tally.settle(now, c.metered.periodStart, c.budget[0].Cost, 0, c.workload.settles && c.metered.on)
		// The call was often refused because its context ended: the refund
		// must not go out on that context. Best effort: a failed refund
		// leaves the budget spent, the safe side. A shared store's refund
		// goes out in the background (refundBudget).
		_ = c.t.refundBudget(context.WithoutCancel(ctx), now, c.budget[:])
	}
}

// budgetTally counts what a process spends of a workload's budget in the
// current period: for Per, by the rule every store applies to a fixed
// window (a period starts with the first spend after the previous one
// ended); for a calendar Period, the calendar's. Figures are in the store's
// units (micro-dollars for a budget in money).
type budgetTally struct {
	mu       sync.Mutex
	start    time.Time
	end      time.Time
	spent    float64 // settled, or never to be settled
	reserved float64 // reserved by calls in flight, to be settled
	crossed  int     // how many of budgetThresholds this process saw crossed in the period

	marks spendMarks // the count at the last steps, for the spend rate (forecast.go)
}

// nextThreshold returns the index of the next threshold not yet seen
// crossed in the period containing now, or -1.
func (m *budgetTally) nextThreshold(w *workloadState, now time.Time) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.roll(w, now, false)
	if m.crossed >= len(budgetThresholds) {
		return -1
	}
	return m.crossed
}

// cross records that threshold i was crossed, and returns its percentage,
// or 0 if it was seen already.
func (m *budgetTally) cross(i int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.crossed > i {
		return 0
	}
	m.crossed = i + 1
	return budgetThresholds[i]
}

// spend counts cost, reserved if the call settles later, and returns the
// start of the period it was counted in.
func (m *budgetTally) spend(w *workloadState, now time.Time, cost float64, settles bool) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.roll(w, now, true)
	m.marks.mark(now, m.spent+m.reserved)
	if settles {
		m.reserved += cost
	} else {
		m.spent += cost
	}
	return m.start
}

// roll starts a new period if the current one is over; for Per, only when
// spending (the window starts with a spend).
func (m *budgetTally) roll(w *workloadState, now time.Time, spending bool) {
	if !m.start.IsZero() && now.Before(m.end) {
		return
	}
	switch {
	case w.Budget.calendar():
		p := w.periodAt(now)
		m.start, m.end = p.start, p.end
	case spending:
		m.start, m.end = now, now.Add(w.Budget.Per)
	default:
		m.start, m.end = time.Time{}, time.Time{}
	}
	m.spent, m.reserved, m.crossed = 0, 0, 0
	m.marks = spendMarks{}
}

// settle replaces a reservation made in the period starting at start by
// what the call cost, at now. A refund of a call not sent is a settlement
// at zero.
func (m *budgetTally) settle(now, start time.Time, reserved, actual float64, settles bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.start.Equal(start) {
		return // counted in a period that is over
	}
	if actual != reserved {
		m.marks.mark(now, m.spent+m.reserved)
	}
	if settles {
		m.reserved = max(0, m.reserved-reserved)
		m.spent += actual
	} else {
		m.spent = max(0, m.spent-reserved+actual)
	}
}

func (m *budgetTally) unsettled() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reserved
}

// read returns the current period's spend and reservations, and its end;
// all zero when no period is current.
func (m *budgetTally) read(w *workloadState, now time.Time) (spent, reserved float64, end time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.roll(w, now, false)
	return m.spent, m.reserved, m.end
}

// stats reports the workload's budget in its unit.
func (w *workloadState) stats(now time.Time) WorkloadStats {
	st := WorkloadStats{Name: w.name, Budget: w.Budget}
	if !w.Budget.capped() {
		return st
	}
	spent, reserved, end := w.tally.read(w, now)
	scale := w.Budget.scale()
	st.Unit, st.Limit = w.Budget.unit(), w.Budget.amount()/scale
	st.Spent, st.Reserved = spent/scale, reserved/scale
	if w.Budget.money() {
		st.SpentMoney, st.ReservedMoney = prices.Micros(int64(spent)), prices.Micros(int64(reserved))
	}
	if !end.IsZero() {
		st.ResetIn, st.PeriodEnd = end.Sub(now), end
	}
	return st
}
