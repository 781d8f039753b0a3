// Package paceroptel records what a pacer Transport does as OpenTelemetry
// metrics.
//
// Metrics is an observe.Observer that adds events to counters and a wait
// histogram as they happen, and reports the Transport's Stats through
// observable gauges when the SDK collects:
//
//	m, err := paceroptel.New(otel.GetMeterProvider())
//	tr := pacer.New(nil, pacer.WithObserver(m), …)
//	m.Watch(tr)
//
// Attributes are bounded: pacer.scope, pacer.workload and pacer.member are
// names from the Transport's configuration, pacer.unit a scope's unit, and
// http.response.status_code the provider's status on a rejection. No URL,
// key or header is ever recorded.
//
// Instruments (all under the meter "github.com/pacer-go/pacer"):
//
//	pacer.admitted            counter    calls admitted and sent
//	pacer.wait                histogram  s, the waits of calls that waited
//	pacer.throttled           counter    calls refused here: their wait could not be made
//	pacer.provider.rejections counter    429s, 503s and back-pressure from the provider
//	pacer.cooldowns           counter    pauses the provider imposed
//	pacer.retries             counter    calls sent again
//	pacer.budget.exhausted    counter    calls refused by a spend budget
//	pacer.store.failures      counter    store calls that went unanswered
//	pacer.pace.changes        counter    times what the provider said changed a scope's pace
//	pacer.slots.held          counter    slots held longer than WithSlotAgeAlert allows
//	pacer.not_replayable      counter    calls sent once: their body was too large to keep for a retry
//	pacer.limit.changes       counter    runtime changes of a scope's configured limit (pacer.origin)
//	pacer.budget.thresholds   counter    budgets crossing 50, 80 and 100 % (pacer.budget.percent)
//	pacer.budget.forecasts    counter    budgets forecast to run out before their period ends (pacer.WithAlerts)
//	pacer.budget.drift        gauge      what the provider billed a group less what pacer charged, in the budget's unit, as a reconciliation last reported it (pacer.reconcile.group)
//	pacer.reconcile.failures  counter    reconciliations whose usage or cost report could not be read (pacer.reconcile.group)
//	pacer.in_flight           gauge      calls in flight (on scopes that cap concurrency)
//	pacer.waiting             gauge      calls waiting for admission
//	pacer.waiting.by_reason   gauge      of them, those held back by the rate, the concurrency cap, a reserve or a cooldown (pacer.reason)
//	pacer.wait.oldest_start   gauge      s, when the call waiting longest began to wait, in Unix seconds (while one waits)
//	pacer.rate                gauge      the pace now, in units a second
//	pacer.tokens              gauge      what the scope's lowest bucket holds, of every key (in-memory store only)
//	pacer.cooldown.remaining  gauge      s, what is left of a provider's pause
//	pacer.retry.credit        gauge      retries the retry budget allows now
//	pacer.budget.limit        gauge      a workload's spend cap per period
//	pacer.budget.spent        gauge      what this process spent of it this period (dollars for "usd")
//	pacer.budget.reserved     gauge      what its calls in flight reserved, to settle on usage
//	pacer.budget.period_end   gauge      when the current period ends, in Unix seconds
//	pacer.budget.spend_rate   gauge      what this process spends of it, in its unit a second, over the last ten minutes
//	pacer.budget.spend_window gauge      s, the window that rate covers: ten minutes, or the period so far
//	pacer.budget.runs_out     gauge      when, at that rate, the budget runs out, in Unix seconds (while it is spent)
//	pacer.budget.runs_out_early gauge    s, how long before its period ends that is; 0 when it lasts the period
//	pacer.backlog             gauge      what the calls waiting on the scope cost on it
//	pacer.backlog.drain       gauge      s, how long the scope takes to admit them at its pace now
//	pacer.window.used         gauge      the share of a long window spent (an hour or more: GitHub's hourly count, Anthropic's 5h and 7d) (pacer.window)
//	pacer.window.reset        gauge      s, how long until that window reopens (pacer.window)
//	pacer.window.lasting_pace gauge      the pace that lasts to the binding window's reset, for the workloads that spread long windows
//
// and, for a Transport with a pool (pacer.WithPool), from Stats().Members, each
// with pacer.member, the member's name:
//
//	pacer.member.state        gauge      1 for the member's state (pacer.member.state: ready, parked, out, removed), 0 for the others
//	pacer.member.calls        counter    calls sent through the member
//	pacer.member.refused      counter    of them, those the provider refused (429, 503, 401, 402 or a spent quota)
//	pacer.member.rotated_away counter    of those, the ones that went on to another member
//	pacer.member.cooldown.remaining gauge s, what is left of a pause the provider asked of the member
//	pacer.member.parked_until gauge      s, when a parked member is tried again, in Unix seconds (while parked)
//
// The counts of Stats (WorkloadStats.Admitted, Throttled, Refused, Rejected
// and Waited) are what the counters above count from events; they are not
// reported twice.
package paceroptel

import (
	"context"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/pool"
)

// ScopeName is the instrumentation scope of the meter Metrics uses.
const ScopeName = "github.com/pacer-go/pacer"

// The attribute keys.
const (
	AttrScope    = attribute.Key("pacer.scope")
	AttrWorkload = attribute.Key("pacer.workload")
	AttrUnit     = attribute.Key("pacer.unit")
	AttrStatus   = attribute.Key("http.response.status_code")
	AttrOrigin   = attribute.Key("pacer.origin")         // who changed a limit: observe.OriginSetLimit or observe.OriginStore
	AttrPercent  = attribute.Key("pacer.budget.percent") // the share of a budget crossed: 50, 80 or 100
	AttrReason   = attribute.Key("pacer.reason")         // what holds waiting calls back: an observe.Reason
	AttrWindow   = attribute.Key("pacer.window")         // a long window's name as its headers spell it: "5h", "7d", "core"
	AttrMember   = attribute.Key("pacer.member")         // a pool member's name (pacer.WithPool)
	AttrState    = attribute.Key("pacer.member.state")   // a pool member's state: a pool.State
)

// AttrGroup is the project, key or model a reconciliation compares: a
// reconcile.Group's Name.
const AttrGroup = attribute.Key("pacer.reconcile.group")

// WaitBuckets are the wait histogram's default boundaries, in seconds: from
// 10 ms to ten minutes, pacer's longest wait by default. A View may
// replace them.
var WaitBuckets = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// Metrics records a Transport's events and reports its Stats. It is safe
// for concurrent use.
type Metrics struct {
	transport atomic.Pointer[pacer.Transport]

	admitted, throttled, rejections, cooldowns metric.Int64Counter
	retries, budgetExhausted, storeFailures    metric.Int64Counter
	paceChanges, slotsHeld, notReplayable      metric.Int64Counter
	limitChanges, budgetThresholds, forecasts  metric.Int64Counter
	wait                                       metric.Float64Histogram
	drift                                      metric.Float64Gauge // package reconcile's
	reconcileFailures                          metric.Int64Counter // package reconcile's

	inFlight, waiting, waitingBy        metric.Int64ObservableGauge
	waitStart                           metric.Float64ObservableGauge
	rate, tokens, cooldown, retryCredit metric.Float64ObservableGauge
	budgetLimit, budgetSpent            metric.Float64ObservableGauge
	budgetReserved, budgetEnd           metric.Float64ObservableGauge
	spendRate, spendWindow              metric.Float64ObservableGauge
	runsOut, runsOutEarly               metric.Float64ObservableGauge
	backlog, drain                      metric.Float64ObservableGauge
	windowUsed, windowReset             metric.Float64ObservableGauge
	lastingPace                         metric.Float64ObservableGauge
	memberState                         metric.Int64ObservableGauge
	memberCalls, memberRefused          metric.Int64ObservableCounter
	memberRotated                       metric.Int64ObservableCounter
	memberCooldown, memberParked        metric.Float64ObservableGauge
	attrs                               sync.Map // labels → metric.MeasurementOption, bounded by the configuration
	registration                        metric.Registration
}

var _ observe.Observer = (*Metrics)(nil)

// New makes the instruments on a meter from mp.
func New(mp metric.MeterProvider) (*Metrics, error) {
	meter := mp.Meter(ScopeName)
	m := &Metrics{}
	var err error
	keep := func(e error) { // the first error of the instruments made
		if err == nil {
			err = e
		}
	}
	counter := func(name, desc string, unit ...string) metric.Int64Counter {
		u := "{call}"
		if len(unit) > 0 {
			u = unit[0]
		}
		c, e := meter.Int64Counter(name, metric.WithDescription(desc), metric.WithUnit(u))
		keep(e)
		return c
	}
	m.admitted = counter("pacer.admitted", "Calls admitted and sent.")
	m.throttled = counter("pacer.throttled", "Calls refused by pacer because their wait could not be made.")
	m.rejections = counter("pacer.provider.rejections", "Calls the provider rejected: 429, 503 or a back-pressure status.")
	m.cooldowns = counter("pacer.cooldowns", "Pauses the provider imposed on a scope.")
	m.retries = counter("pacer.retries", "Calls sent again.")
	m.budgetExhausted = counter("pacer.budget.exhausted", "Calls refused because their workload's spend budget was exhausted.")
	m.storeFailures = counter("pacer.store.failures", "Calls to the shared store that went unanswered.")
	m.paceChanges = counter("pacer.pace.changes", "Times what the provider said changed a scope's pace.", "{change}")
	m.slotsHeld = counter("pacer.slots.held", "Concurrency slots held longer than the slot-age alert allows.", "{slot}")
	m.notReplayable = counter("pacer.not_replayable", "Calls sent once because their body was too large to keep for a retry.")
	m.limitChanges = counter("pacer.limit.changes", "Runtime changes of a scope's configured limit.", "{change}")
	m.budgetThresholds = counter("pacer.budget.thresholds", "Times a workload's budget crossed 50, 80 or 100 percent of its limit.", "{crossing}")
	m.forecasts = counter("pacer.budget.forecasts", "Times a workload's budget was forecast to run out more than its margin before its period ends.", "{forecast}")
	m.reconcileFailures = counter("pacer.reconcile.failures", "Reconciliations whose usage or cost report could not be read.", "{poll}")
	m.wait, err = histogram(meter, err, "pacer.wait", "How long calls that waited for admission waited.")
	if err == nil {
		m.drift, err = meter.Float64Gauge("pacer.budget.drift", metric.WithUnit("1"),
			metric.WithDescription("What the provider billed a group (a project, key or model) less what pacer charged its workloads, in the budget's unit, as a reconciliation last reported it."))
	}
	intGauge := func(name, unit, desc string) metric.Int64ObservableGauge {
		g, e := meter.Int64ObservableGauge(name, metric.WithDescription(desc), metric.WithUnit(unit))
		keep(e)
		return g
	}
	floatGauge := func(name, unit, desc string) metric.Float64ObservableGauge {
		g, e := meter.Float64ObservableGauge(name, metric.WithDescription(desc), metric.WithUnit(unit))
		keep(e)
		return g
	}
	m.inFlight = intGauge("pacer.in_flight", "{call}", "Calls in flight, counted on scopes that cap concurrency.")
	m.waiting = intGauge("pacer.waiting", "{call}", "Calls waiting for admission.")
	m.waitingBy = intGauge("pacer.waiting.by_reason", "{call}", "Calls waiting for admission, by what holds them back: rate, concurrency, reserve or cooldown.")
	m.waitStart = floatGauge("pacer.wait.oldest_start", "s", "When the call waiting longest on the scope began to wait, in Unix seconds.")
	m.rate = floatGauge("pacer.rate", "1/s", "The scope's pace now, in its units a second.")
	m.tokens = floatGauge("pacer.tokens", "1", "What the scope's lowest bucket, of every key, holds now (in-memory store only), in its units.")
	m.cooldown = floatGauge("pacer.cooldown.remaining", "s", "What is left of a pause the provider imposed.")
	m.retryCredit = floatGauge("pacer.retry.credit", "{retry}", "Retries the scope's retry budget allows now.")
	m.budgetLimit = floatGauge("pacer.budget.limit", "1", "A workload's spend cap per period, in the budget's unit.")
	m.budgetSpent = floatGauge("pacer.budget.spent", "1", "What this process spent of its workload's budget in the current period.")
	m.budgetReserved = floatGauge("pacer.budget.reserved", "1", "What this process's calls in flight reserved of its workload's budget, to be settled on usage.")
	m.budgetEnd = floatGauge("pacer.budget.period_end", "s", "When the current period of the workload's budget ends, in Unix seconds.")
	m.spendRate = floatGauge("pacer.budget.spend_rate", "1/s", "What this process spends of its workload's budget, in the budget's unit a second, over the last ten minutes.")
	m.spendWindow = floatGauge("pacer.budget.spend_window", "s", "The window the spend rate covers: the last ten minutes, or the period so far.")
	m.runsOut = floatGauge("pacer.budget.runs_out", "s", "When, at the spend rate, the workload's budget runs out, in Unix seconds.")
	m.runsOutEarly = floatGauge("pacer.budget.runs_out_early", "s", "How long before its period ends the workload's budget runs out at the spend rate; 0 when it lasts.")
	m.backlog = floatGauge("pacer.backlog", "1", "What the calls waiting on the scope cost on it, in its unit.")
	m.drain = floatGauge("pacer.backlog.drain", "s", "How long the scope takes to admit the calls waiting on it at its pace now.")
	m.windowUsed = floatGauge("pacer.window.used", "1", "The share of a long window (an hour or more) the provider says is spent.")
	m.windowReset = floatGauge("pacer.window.reset", "s", "How long until a long window reopens.")
	m.lastingPace = floatGauge("pacer.window.lasting_pace", "1/s", "The pace, in the scope's unit a second, that lasts to the binding long window's reset, for the workloads that spread long windows.")
	m.memberState = intGauge("pacer.member.state", "1", "1 for a pool member's state (ready, parked, out, removed), 0 for the others.")
	memberCounter := func(name, desc string) metric.Int64ObservableCounter {
		c, e := meter.Int64ObservableCounter(name, metric.WithDescription(desc), metric.WithUnit("{call}"))
		keep(e)
		return c
	}
	m.memberCalls = memberCounter("pacer.member.calls", "Calls sent through a pool member.")
	m.memberRefused = memberCounter("pacer.member.refused", "Calls sent through a pool member that the provider refused: 429, 503, 401, 402 or a spent quota.")
	m.memberRotated = memberCounter("pacer.member.rotated_away", "Calls a pool member refused that went on to another member.")
	m.memberCooldown = floatGauge("pacer.member.cooldown.remaining", "s", "What is left of a pause the provider asked of a pool member.")
	m.memberParked = floatGauge("pacer.member.parked_until", "s", "When a parked pool member is tried again, in Unix seconds.")
	if err != nil {
		return nil, err
	}
	m.registration, err = meter.RegisterCallback(m.report, m.memberState, m.memberCalls, m.memberRefused, m.memberRotated, m.memberCooldown, m.memberParked, m.inFlight, m.waiting, m.waitingBy, m.waitStart, m.rate, m.tokens, m.cooldown,
		m.retryCredit, m.budgetLimit, m.budgetSpent, m.budgetReserved, m.budgetEnd,
		m.spendRate, m.spendWindow, m.runsOut, m.runsOutEarly, m.backlog, m.drain, m.windowUsed, m.windowReset, m.lastingPace)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// histogram makes the wait histogram unless an instrument failed before.
func histogram(meter metric.Meter, err error, name, desc string) (metric.Float64Histogram, error) {
	if err != nil {
		return nil, err
	}
	return meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
		metric.WithExplicitBucketBoundaries(WaitBuckets...))
}

// Watch makes the gauges report t's Stats. Metrics watches one Transport;
// a later Watch replaces it.
func (m *Metrics) Watch(t *pacer.Transport) { m.transport.Store(t) }

// Close stops reporting the gauges.
func (m *Metrics) Close() error { return m.registration.Unregister() }

// labels returns the attributes of a scope and a workload, made once.
func (m *Metrics) labels(scope, workload string) metric.MeasurementOption {
	key := [2]string{scope, workload}
	if o, ok := m.attrs.Load(key); ok {
		return o.(metric.MeasurementOption)
	}
	o := metric.WithAttributeSet(attribute.NewSet(AttrScope.String(scope), AttrWorkload.String(workload)))
	m.attrs.Store(key, o)
	return o
}

// Observe implements observe.Observer.
func (m *Metrics) Observe(e observe.Event) {
	ctx := context.Background()
	switch e.Kind {
	case observe.EventAdmitted:
		m.admitted.Add(ctx, 1, m.labels(e.Scope, e.Workload))
	case observe.EventWaited:
		m.wait.Record(ctx, e.Wait.Seconds(), m.labels(e.Scope, e.Workload))
	case observe.EventThrottled:
		m.throttled.Add(ctx, 1, m.labels(e.Scope, e.Workload))
	case observe.EventRejected:
		m.rejections.Add(ctx, 1, metric.WithAttributes(AttrScope.String(e.Scope), AttrWorkload.String(e.Workload), AttrStatus.Int(e.Status)))
	case observe.EventCooldownStarted:
		m.cooldowns.Add(ctx, 1, metric.WithAttributes(AttrScope.String(e.Scope)))
	case observe.EventRetried:
		m.retries.Add(ctx, 1, m.labels(e.Scope, e.Workload))
	case observe.EventBudgetExhausted:
		m.budgetExhausted.Add(ctx, 1, metric.WithAttributes(AttrWorkload.String(e.Workload)))
	case observe.EventStoreFailure:
		m.storeFailures.Add(ctx, 1, metric.WithAttributes(AttrScope.String(e.Scope)))
	case observe.EventPaceChanged:
		m.paceChanges.Add(ctx, 1, metric.WithAttributes(AttrScope.String(e.Scope)))
	case observe.EventSlotHeld:
		m.slotsHeld.Add(ctx, 1, metric.WithAttributes(AttrScope.String(e.Scope)))
	case observe.EventBodyNotReplayable:
		m.notReplayable.Add(ctx, 1, metric.WithAttributes(AttrWorkload.String(e.Workload)))
	case observe.EventLimitChanged:
		m.limitChanges.Add(ctx, 1, metric.WithAttributes(AttrScope.String(e.Scope), AttrOrigin.String(e.Origin)))
	case observe.EventBudgetThreshold:
		m.budgetThresholds.Add(ctx, 1, metric.WithAttributes(AttrWorkload.String(e.Workload), AttrPercent.Int(e.Percent)))
	case observe.EventBudgetForecast:
		m.forecasts.Add(ctx, 1, metric.WithAttributes(AttrWorkload.String(e.Workload)))
	case observe.EventBudgetDrift:
		m.drift.Record(ctx, e.Amount, metric.WithAttributes(AttrGroup.String(e.Scope)))
	case observe.EventReconcileFailed:
		m.reconcileFailures.Add(ctx, 1, metric.WithAttributes(AttrGroup.String(e.Scope)))
	}
}

// report observes the gauges from the watched Transport's Stats.
func (m *Metrics) report(_ context.Context, o metric.Observer) error {
	t := m.transport.Load()
	if t == nil {
		return nil
	}
	st := t.Stats()
	for _, s := range st.Scopes {
		scope := metric.WithAttributes(AttrScope.String(s.Name))
		unit := metric.WithAttributes(AttrScope.String(s.Name), AttrUnit.String(s.Unit))
		for _, w := range st.Workloads {
			o.ObserveInt64(m.inFlight, int64(s.InFlightBy[w.Name]), m.labels(s.Name, w.Name))
		}
		o.ObserveInt64(m.waiting, int64(s.Waiting), scope)
		for reason, n := range s.WaitingBy {
			o.ObserveInt64(m.waitingBy, int64(n), metric.WithAttributes(AttrScope.String(s.Name), AttrReason.String(string(reason))))
		}
		if !s.WaitingSince.IsZero() {
			o.ObserveFloat64(m.waitStart, float64(s.WaitingSince.UnixNano())/1e9, scope)
		}
		o.ObserveFloat64(m.rate, s.Rate, unit)
		if s.TokensKnown {
			o.ObserveFloat64(m.tokens, s.Tokens, unit)
		}
		o.ObserveFloat64(m.cooldown, s.Cooldown.Seconds(), scope)
		o.ObserveFloat64(m.retryCredit, s.RetryCredit, scope)
		o.ObserveFloat64(m.backlog, s.BacklogCost, unit)
		o.ObserveFloat64(m.drain, s.DrainIn.Seconds(), scope)
		for _, w := range s.Windows {
			window := metric.WithAttributes(AttrScope.String(s.Name), AttrWindow.String(w.Name))
			if w.Used >= 0 {
				o.ObserveFloat64(m.windowUsed, w.Used, window)
			}
			if w.HasReset {
				o.ObserveFloat64(m.windowReset, w.Reset.Seconds(), window)
			}
		}
		if s.LastingPace > 0 {
			o.ObserveFloat64(m.lastingPace, s.LastingPace, unit)
		}
	}
	for _, w := range st.Workloads {
		if w.Unit == "" {
			continue // no budget
		}
		unit := w.Unit
		attrs := metric.WithAttributes(AttrWorkload.String(w.Name), AttrUnit.String(unit))
		o.ObserveFloat64(m.budgetLimit, w.Limit, attrs)
		o.ObserveFloat64(m.budgetSpent, w.Spent, attrs)
		o.ObserveFloat64(m.budgetReserved, w.Reserved, attrs)
		if !w.PeriodEnd.IsZero() {
			o.ObserveFloat64(m.budgetEnd, float64(w.PeriodEnd.UnixNano())/1e9, metric.WithAttributes(AttrWorkload.String(w.Name)))
		}
		workload := metric.WithAttributes(AttrWorkload.String(w.Name))
		if w.SpendWindow > 0 {
			o.ObserveFloat64(m.spendRate, w.SpendRate, attrs)
			o.ObserveFloat64(m.spendWindow, w.SpendWindow.Seconds(), workload)
			o.ObserveFloat64(m.runsOutEarly, w.RunsOutEarly.Seconds(), workload)
		}
		if !w.RunsOut.IsZero() {
			o.ObserveFloat64(m.runsOut, float64(w.RunsOut.UnixNano())/1e9, workload)
		}
	}
	for _, mb := range st.Members {
		member := metric.WithAttributes(AttrMember.String(mb.Name))
		for _, state := range memberStates {
			v := int64(0)
			if mb.State == state {
				v = 1
			}
			o.ObserveInt64(m.memberState, v, metric.WithAttributes(AttrMember.String(mb.Name), AttrState.String(string(state))))
		}
		o.ObserveInt64(m.memberCalls, mb.Admitted, member)
		o.ObserveInt64(m.memberRefused, mb.Refused, member)
		o.ObserveInt64(m.memberRotated, mb.RotatedAway, member)
		o.ObserveFloat64(m.memberCooldown, mb.Cooldown.Seconds(), member)
		if mb.State == pool.Parked {
			o.ObserveFloat64(m.memberParked, float64(mb.Until.UnixNano())/1e9, member)
		}
	}
	return nil
}

// memberStates are the states pacer.member.state has a series for.
var memberStates = [...]pool.State{pool.Ready, pool.Parked, pool.Out, pool.Removed}
