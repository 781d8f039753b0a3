package pacer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/period"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/usage"
	"github.com/pacer-go/pacer/usage/prices"
)

// A Budget caps what a workload may spend in a period: Limit units (requests
// by default) or Spend dollars, per Per or per calendar Period:
//
//	Budget{Spend: pacer.Dollars(0.50), Period: period.Daily(0, 0, time.UTC)} // 50 cents a day
//	Budget{Limit: 5000, Per: 24 * time.Hour}                                 // 5,000 requests a day
//	Budget{Limit: 1e6, Unit: "tokens", Per: time.Hour}                       // a million tokens an hour
//
// Set exactly one of Limit and Spend (the zero Budget sets neither, and is
// no cap), and one of Per and Period.
//
// With Per, the period starts with the first attempt after the previous one
// ended, so a budget of 50,000 requests per 24h allows 50,000 requests, then
// none until 24 hours after the first of them. With Period, it follows the
// calendar — period.Daily(0, 0, loc) resets at midnight in loc, the way an
// invoice does — and every process of a fleet sharing a store shares it:
// the store keys the period's spend by its start.
//
// A budget counts attempts that reach the provider, since the provider sees
// and may bill each of them: a GET retried twice spends 3. An attempt pacer
// does not send (throttled, cancelled while waiting) is given back, and so
// is one whose connection could not be made. When the budget refuses a
// retry, the call returns a *retry.Error saying how many attempts were sent
// and the last status, wrapping the *BudgetError.
//
// # Budgets in tokens and money
//
// On a Transport with a Meter (WithMeter; the OpenAI and Anthropic presets
// set one), a budget in tokens or in money is reserved on the call's
// estimate and settled on what the provider billed, read from the response
// as it streams past: when the body ends (read to its end, or closed), the
// difference is charged or given back, in the shared store too.
//
//   - A call the provider rejected (a 4xx or 5xx status, or a connection
//     that could not be made) settles at zero: OpenAI and Anthropic bill
//     nothing for those.
//   - A stream that ends before the provider reported its usage (closed
//     mid-way, as a chat UI's "stop" does) settles on what streamed: its
//     input (the provider's figure when the stream gave it, else the
//     estimate), the output the usage.Counter counted pass
//     (usage.StreamBytesPerToken), and cutMargin (64 tokens) for what the
//     provider generated but had not sent, never more than its
//     reservation. A cut stream is then billed beyond its charge only by
//     the output generated more than 64 tokens past the last byte read,
//     and by what the input estimate misses. A stream that may hold
//     output it does not show (CallEstimate.HiddenOutput, or a reasoning
//     item or thinking block in the stream), or that showed none of its
//     provider's events, settles at its estimate, as below.
//   - A call whose body is closed before the provider reported its usage
//     (an early close, a body pacer cannot read) otherwise settles at its
//     estimate: what was reserved stays spent. A body
//     pacer cannot read is one the Meter's Usage gives no reader for — for
//     the presets, a Content-Type other than JSON or an event stream, or a
//     Content-Encoding such as gzip (which Go's transport decodes before
//     pacer reads when it asked for it itself; a base transport with
//     DisableCompression, or a request with its own Accept-Encoding, is
//     answered compressed) — or no body at all (nil, http.NoBody, a HEAD
//     or a 204); so is a call whose connection failed once it was sent.
//     Every call settles once: when its body is closed or read to its end,
//     or at once when nothing holds it; Reserved (WorkloadStats) counts
//     only calls in flight.
//   - A usage, however large, is charged to the budget in full: the
//     provider may have billed it. A bucket is charged at most one burst
//     beyond what the call took, and at most what it refills in MaxWait
//     (boundSettlement), so no count keeps a scope from sending beyond
//     MaxWait. A usage beyond what the call could cost (more output than
//     both its worst case and 2^20 tokens, or more input than both twice
//     its estimate and 2^22 tokens) is also an observe.EventImplausibleUsage and a
//     log line naming the call.
//   - A call reserves its input and, of output, the 99th percentile of what
//     the model's last calls produced (at most its max_tokens), once 50 of
//     them have settled; before that, its worst case: its max_tokens, or
//     the preset's default when it sets none (which it may then exceed).
//     It is admitted only if its worst case fits what the budget has left,
//     the calls in flight counted at their reservations.
//
// So the budget's promise, give or take what the input estimate misses by:
// calls one at a time never spend beyond the Limit (or Spend); when the budget runs
// out with calls in flight together, each of them may be billed up to its
// worst case less its reservation beyond it. The spend in a period stays
// within
//
//	Limit + Σ (worst case − reservation) over the other calls in flight
//	when the last one was admitted
//
// where a call is in flight until its settlement reaches the store (on a
// shared store, it goes out in the background: see Transport.Flush). With C
// calls in flight across a fleet, that is at most Limit + (C−1) × (the
// largest call's worst case less its reservation); before a model's output
// is learned, a call reserves its worst case and adds nothing.
//
// A budget in money (Spend) counts cost at the Meter's prices (the presets
// bring their provider's; WithPrices overrides them model by model), in
// integer micro-dollars, so a fleet's sum is exact. A
// call to a model without a price is refused with an error matching
// prices.ErrNoPrice, never counted as free; a call the Meter does not estimate (a
// request that bills no tokens, such as a list of models) costs what its
// context states (ContextWithSpend), else nothing. A Permit is never metered: see Permit for what it is charged.
type Budget struct {
	// Limit is how many of Unit may be spent in a period.
	Limit int64
	// Spend, set instead of Limit, is how much money may be spent in a
	// period: Spend: pacer.Dollars(0.50) is fifty cents. It needs a Meter
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

// Dollars returns d US dollars as prices.Money, for Budget.Spend:
// Dollars(0.50) is fifty cents. It keeps d to the micro-dollar, dropping
// the digits beyond it, so a limit is never more money than was said; see
// prices.Dollars.
func Dollars(d float64) prices.Money { return prices.Dollars(d) }

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

// A Meter tells a Transport what LLM calls will cost before they are sent,
// and what they cost once they are answered; see Budget. The OpenAI and
// Anthropic presets set one.
type Meter struct {
	// Estimate returns the model a request calls and the usage it may
	// reach — its worst case: a budget admits the call only if that fits,
	// and reserves it until the Transport has learned what the model's
	// calls produce (see Budget) — or false for a request it does not
	// meter. It must not consume req.Body (read req.GetBody), and should
	// not allocate for a request it does not meter.
	//
	// The Transport calls it only with a request it is about to send:
	// never for a Permit, which has none and charges what its caller
	// states (see Permit). An Estimate must still be safe for a nil
	// request, and return false for it, as the presets' do: code of
	// yours may call it directly.
	Estimate func(req *http.Request) (CallEstimate, bool)
	// Usage returns the reader of a response's usage (see usage.Selector).
	Usage usage.Selector
	// Prices are the models' prices, for budgets in money (Budget.Spend).
	// WithPrices overrides them model by model.
	Prices prices.Table
	// Tokens returns how many of a call's tokens count on a scope or a
	// budget counted in unit, or false if unit is not one of the provider's
	// token units. A scope counted in such a unit, charged with the call's
	// estimate by the preset's route, is settled on usage like a budget,
	// unless KeepScopeCharges is set.
	Tokens func(unit string, u usage.Usage) (int64, bool)
	// KeepScopeCharges leaves a metered call's scopes at what the route
	// charged them, whatever its usage says; only budgets settle on usage.
	// A provider whose rate limiter counts a call at a charge made before
	// it runs and never corrects it by the tokens used (OpenAI's tokens
	// per minute) sets it: settling the scope down to the usage would make
	// the bucket hold more than the provider's, and the difference would
	// come back as 429s.
	KeepScopeCharges bool

	// outputs learns the output of the Transport's calls, per model
	// (outputestimate.go); each Transport has its own.
	outputs *outputLearner
}

// A CallEstimate is what a Meter expects of a request.
type CallEstimate struct {
	Model string
	Usage usage.Usage
	// HiddenOutput says the call may be billed output that its stream
	// does not show (a reasoning model's thinking): a stream of it cut
	// before its usage settles at its reservation, not on what it
	// streamed (see Budget).
	HiddenOutput bool
}

// WithMeter sets the Transport's Meter; a later one replaces it, but for
// its Prices, which are added to the earlier ones'.
func WithMeter(m Meter) Option {
	return func(c *config) {
		prior := c.meter
		c.meter = &m
		if prior != nil && len(prior.Prices) > 0 {
			c.meter.Prices = maps.Clone(prior.Prices)
			maps.Copy(c.meter.Prices, m.Prices)
		}
	}
}

// WithPrices sets the prices of models, over the Meter's (a price given here
// wins, whatever the order of the options). The OpenAI and Anthropic presets
// bring their provider's prices already (prices.OpenAI(), prices.Anthropic()):
// give WithPrices only for a model they lack or a price you negotiated.
// Each price needs its Source and the date it was Read: a price you set is
// as much a figure as a preset's.
func WithPrices(t prices.Table) Option {
	return func(c *config) {
		if err := t.Validate(); err != nil {
			c.errs = append(c.errs, fmt.Errorf("WithPrices: %w", err))
			return
		}
		if c.prices == nil {
			c.prices = prices.Table{}
		}
		maps.Copy(c.prices, t)
	}
}

// meterFor returns the Transport's meter with the user's prices merged, or
// nil when there is none.
func (c *config) meterFor() *Meter {
	if c.meter == nil {
		if len(c.prices) > 0 {
			c.errs = append(c.errs, errors.New("WithPrices: no Meter reads what calls cost; use a preset that sets one (openai.Preset, anthropic.Preset) or WithMeter"))
		}
		return nil
	}
	m := *c.meter
	m.outputs = &outputLearner{}
	if len(c.prices) > 0 {
		m.Prices = maps.Clone(m.Prices)
		if m.Prices == nil {
			m.Prices = prices.Table{}
		}
		maps.Copy(m.Prices, c.prices)
	}
	return &m
}

// meterCounts reports whether the Meter counts unit: a budget in it is
// spent by every metered call.
func (c *config) meterCounts(unit string) bool {
	if c.meter == nil || c.meter.Tokens == nil {
		return false
	}
	_, ok := c.meter.Tokens(unit, usage.Usage{})
	return ok
}

// checkMeter reports a budget the Transport cannot count.
func (t *Transport) checkMeter(w *workloadState) error {
	if w.Budget.money() && (t.meter == nil || t.meter.Estimate == nil) {
		return fmt.Errorf("workload %q: a Budget in money (Spend %v) needs a Meter to price calls; use a preset that sets one (openai.Preset, anthropic.Preset) or WithMeter", w.name, w.Budget.Spend)
	}
	return nil
}

// tokens is what u counts in unit, if unit is a token unit of the meter.
func (m *Meter) tokens(unit string, u usage.Usage) (int64, bool) {
	if m.Tokens == nil {
		return 0, false
	}
	return m.Tokens(unit, u)
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
	meter   budgetMeter                  // this process's spend, for Stats
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

// callMeter is what a metered call reserved, to settle when it ends.
type callMeter struct {
	on    bool // the Meter estimated the call: it settles on usage
	model string
	// est is what the call reserves: the Meter's estimate, its output
	// lowered to what the model's calls were learned to produce; worst is
	// the Meter's estimate.
	est, worst usage.Usage
	price      prices.Price // the model's, for a budget in money, when priced
	priced     bool
	hidden     bool // CallEstimate.HiddenOutput
	// periodStart is the start of the budget's period when the call spent
	// it, so that Stats count a settlement in the period it belongs to.
	periodStart time.Time
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
			"with ContextWithSpend(ctx, pacer.Dollars(x)) (0 if unknown), then report what it cost with p.SettleSpend(pacer.Dollars(y)).Accept()", w.name)
	}
	return fmt.Errorf("pacer: workload %q has a budget in %s, and a permit runs no Meter: state the permit's estimated cost with "+
		"a Charge on a scope counted in %q, or ContextWithCost(ctx, %q, n) (0 if unknown), then report what it cost with p.Settle(%q, n).Accept()",
		w.name, unit, unit, unit, unit)
}

// meterFor estimates a call the Meter meters.
func (c *call) meterFor(req *http.Request, m *Meter) error {
	e, ok := m.Estimate(req)
	if !ok {
		return nil
	}
	c.metered = callMeter{on: true, model: e.Model, est: e.Usage, worst: e.Usage, hidden: e.HiddenOutput}
	if n, ok := m.outputs.estimate(e.Model); ok && n < e.Usage.Output {
		c.metered.est.Output = n
	}
	if !c.workload.Budget.money() {
		return nil
	}
	p, ok := m.Prices.Lookup(e.Model)
	if !ok {
		c.metered.on = false
		return fmt.Errorf("%w: workload %q has a budget in money, and model %q has no price in the Meter's table; "+
			"give its price WithPrices (from the provider's pricing page) so that its calls are counted, not free",
			prices.ErrNoPrice, c.workload.name, e.Model)
	}
	c.metered.price, c.metered.priced = p, true
	return nil
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
		w.counts.refuse(&w.counts.refused, now, ReasonBudget, "")
		c.t.emit(observe.Event{Kind: observe.EventBudgetExhausted, Workload: w.name})
		e := &BudgetError{Workload: w.name, Budget: w.Budget, ResetIn: d.Wait}
		if w.Budget.calendar() {
			e.ResetIn = w.periodAt(now).end.Sub(now)
		}
		e.Unsettled = w.meter.unsettled() > 0
		return e
	}
	c.budgetSpent = true
	c.metered.periodStart = w.meter.spend(w, now, c.budget[0].Cost, w.settles && c.metered.on)
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
		next = w.meter.nextThreshold(w, now)
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
			return d, w.meter.cross(len(budgetThresholds) - 1), nil
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
		return d, w.meter.cross(len(budgetThresholds) - 1), nil
	}
	return d, w.meter.cross(next), nil
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
		c.workload.meter.settle(now, c.metered.periodStart, c.budget[0].Cost, 0, c.workload.settles && c.metered.on)
		// The call was often refused because its context ended: the refund
		// must not go out on that context. Best effort: a failed refund
		// leaves the budget spent, the safe side. A shared store's refund
		// goes out in the background (refundBudget).
		_ = c.t.refundBudget(context.WithoutCancel(ctx), now, c.budget[:])
	}
}

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

// settleBudget replaces what the call reserved of its workload's budget by
// actual, in full: a budget is billing, and is never clipped. settles is
// how the reservation was counted (budgetMeter.spend).
func (c *call) settleBudget(now time.Time, actual float64, settles bool) {
	reserved := c.budget[0].Cost
	c.workload.meter.settle(now, c.metered.periodStart, reserved, actual, settles)
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
	for {
		old := s.owedUntil.Load()
		if old >= at.UnixNano() || s.owedUntil.CompareAndSwap(old, at.UnixNano()) {
			return
		}
	}
}

// settleAtEstimate settles the call on what it reserved: its scopes keep
// their charges, and its budget counts the reservation as spent, as the
// store has it already.
func (c *call) settleAtEstimate() {
	c.metered.on = false
	if c.budgetSpent && c.workload.settles {
		r := c.budget[0].Cost
		c.workload.meter.settle(time.Time{}, c.metered.periodStart, r, r, true) // no change of the count: no time needed
	}
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

// budgetMeter counts what a process spends of a workload's budget in the
// current period: for Per, by the rule every store applies to a fixed
// window (a period starts with the first spend after the previous one
// ended); for a calendar Period, the calendar's. Figures are in the store's
// units (micro-dollars for a budget in money).
type budgetMeter struct {
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
func (m *budgetMeter) nextThreshold(w *workloadState, now time.Time) int {
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
func (m *budgetMeter) cross(i int) int {
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
func (m *budgetMeter) spend(w *workloadState, now time.Time, cost float64, settles bool) time.Time {
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
func (m *budgetMeter) roll(w *workloadState, now time.Time, spending bool) {
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
func (m *budgetMeter) settle(now, start time.Time, reserved, actual float64, settles bool) {
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

func (m *budgetMeter) unsettled() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reserved
}

// read returns the current period's spend and reservations, and its end;
// all zero when no period is current.
func (m *budgetMeter) read(w *workloadState, now time.Time) (spent, reserved float64, end time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.roll(w, now, false)
	return m.spent, m.reserved, m.end
}

// meteredBody is the body of a response whose usage a Meter reads: the
// bytes pass to the caller as they come, and the reader sees each once.
// Only LLM responses get one; every other body is a releasingBody.
type meteredBody struct {
	io.ReadCloser
	call *call
	req  *http.Request // for a report of an implausible usage
	done atomic.Bool
	// mu serializes the reader, which is not safe for concurrent use,
	// between a Read and a Close from another goroutine.
	mu sync.Mutex
	r  usage.Reader
}

func (b *meteredBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.mu.Lock()
		b.r.Observe(p[:n])
		b.mu.Unlock()
	}
	if err == io.EOF {
		b.release()
	}
	return n, err
}

func (b *meteredBody) Close() error {
	defer b.release()
	return b.ReadCloser.Close()
}

// release settles the call on what was read, and finishes it, once.
func (b *meteredBody) release() {
	if b.done.CompareAndSwap(false, true) {
		b.mu.Lock()
		u, final := b.r.End()
		var cut usage.Streamed
		counted := false
		if sc, ok := b.r.(usage.Counter); ok && !final {
			cut, counted = sc.Streamed()
		}
		b.mu.Unlock()
		if c := b.call; final && c.metered.on {
			if c.metered.implausible(u) {
				c.reportImplausible(b.req, u)
			} else {
				c.t.meter.outputs.observe(c.metered.model, u.Output)
			}
		}
		if counted {
			b.call.settleCut(cut)
		} else {
			b.call.settle(u, final, false)
		}
		b.call.finish()
	}
}

// The ceilings of a plausible usage: pacer's own rule, not a provider's
// figure, set far above what one call to a model produces or reads, so
// that a count beyond them is an error of the provider's (or of a proxy's)
// and never a long answer.
const (
	plausibleOutput = 1 << 20 // 1,048,576 tokens
	plausibleInput  = 1 << 22 // 4,194,304 tokens
)

// implausible reports whether u is more than the call could have cost:
// more output than both its worst case (its max_tokens, where it sets one)
// and plausibleOutput, or more input than both twice its estimate and
// plausibleInput. Such a count is still charged to budgets in full (the
// provider may have billed it) and to buckets within boundSettlement, as
// every count is; it is also an observe.EventImplausibleUsage and a log line, so
// that a budget it exhausts is explained.
func (m *callMeter) implausible(u usage.Usage) bool {
	return u.Output > max(m.worst.Output, plausibleOutput) ||
		u.InputTotal() > max(2*m.worst.InputTotal(), plausibleInput)
}

// reportImplausible tells observers and the log of a usage implausible for
// the call, naming the call by its method, host and path alone: a query or
// userinfo may hold a credential.
func (c *call) reportImplausible(req *http.Request, u usage.Usage) {
	var host, path string
	if req.URL != nil {
		host, path = req.URL.Host, req.URL.Path
	}
	scope := ""
	if len(c.charges) > 0 {
		scope = c.charges[0].bucket.scope.Name
	}
	err := fmt.Errorf("%s %s%s (model %q) reported usage of %d input and %d output tokens, beyond what the call could cost "+
		"(estimated %d input, at most %d output): charged in full to the workload's budget, to each rate limit's bucket at most what it refills in MaxWait",
		req.Method, host, path, c.metered.model, u.InputTotal(), u.Output, c.metered.worst.InputTotal(), c.metered.worst.Output)
	c.t.emit(observe.Event{Kind: observe.EventImplausibleUsage, Scope: scope, Workload: c.workload.name, Err: err})
	c.t.log.Warn("pacer: implausible usage", "method", req.Method, "host", host, "path", path, "model", c.metered.model,
		"workload", c.workload.name, "input_tokens", u.InputTotal(), "output_tokens", u.Output, "err", err)
}

// usageReader returns the reader of a metered call's response, or nil.
func (c *call) usageReader(req *http.Request, resp *http.Response) usage.Reader {
	if !c.metered.on || c.t.meter.Usage == nil || resp.Body == nil {
		return nil
	}
	if _, ok := resp.Body.(io.Writer); ok {
		return nil // a 101's body: not an LLM's answer
	}
	return c.t.meter.Usage(req, resp)
}

// stats reports the workload's budget in its unit.
func (w *workloadState) stats(now time.Time) WorkloadStats {
	st := WorkloadStats{Name: w.name, Budget: w.Budget}
	if !w.Budget.capped() {
		return st
	}
	spent, reserved, end := w.meter.read(w, now)
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
