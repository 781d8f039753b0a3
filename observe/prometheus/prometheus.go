// Package pacerprom exports what a pacer Transport does as Prometheus
// metrics.
//
// A Collector is both an observe.Observer, which counts events as they happen,
// and a prometheus.Collector, which reads the Transport's Stats when it is
// scraped for the gauges:
//
//	m := pacerprom.New()
//	tr := pacer.New(nil, pacer.WithObserver(m), …)
//	m.Watch(tr)
//	prometheus.MustRegister(m)
//
// Labels are bounded: scope, workload and pool member names from the
// Transport's configuration, the event's status code, and a scope's unit. No URL, key
// or header ever becomes a label. To tell several Transports apart (one per
// API), give each its own Collector and register it through
// prometheus.WrapRegistererWith(prometheus.Labels{"api": "openai"}, reg).
//
// The metrics, with the default namespace "pacer":
//
//	pacer_admitted_total{scope,workload}            calls admitted and sent
//	pacer_wait_seconds{scope,workload}              histogram of the waits of calls that waited
//	pacer_throttled_total{scope,workload}           calls refused here: their wait could not be made
//	pacer_provider_rejections_total{scope,workload,status}  429s, 503s and back-pressure from the provider
//	pacer_cooldowns_total{scope}                    pauses the provider imposed
//	pacer_retries_total{scope,workload}             calls sent again
//	pacer_budget_exhausted_total{workload}          calls refused by a spend budget
//	pacer_store_failures_total{scope}               store calls that went unanswered
//	pacer_pace_changes_total{scope}                 times what the provider said changed a scope's pace
//	pacer_slots_held_total{scope}                   slots held longer than WithSlotAgeAlert allows
//	pacer_bodies_not_replayable_total{workload}     calls sent once: their body was too large to keep for a retry
//	pacer_limit_changes_total{scope,origin}         runtime changes of a scope's configured limit (SetLimit, or the store)
//	pacer_budget_thresholds_total{workload,percent} budgets crossing 50, 80 and 100 % of their limit
//	pacer_budget_forecasts_total{workload}          budgets forecast to run out before their period ends (pacer.WithAlerts)
//
// and, from a reconcile.Reconciler given the Collector as an observer:
//
//	pacer_budget_drift{group}                       what the provider billed a group less what pacer charged, in the budget's unit, as last reported
//	pacer_reconcile_failures_total{group}           reconciliations whose usage or cost report could not be read
//
// and, from Stats at each scrape:
//
//	pacer_in_flight{scope,workload}                 calls in flight (on scopes that cap concurrency)
//	pacer_waiting{scope}                            calls waiting for admission
//	pacer_waiting_by_reason{scope,reason}           of them, those held back by the rate, the concurrency cap, a reserve or a cooldown
//	pacer_oldest_wait_start_seconds{scope}          when the call waiting longest began to wait, in Unix seconds (while one waits)
//	pacer_rate{scope,unit}                          the pace now, in units a second
//	pacer_tokens{scope,unit}                        what the scope's lowest bucket holds, of every key (in-memory store only)
//	pacer_cooldown_remaining_seconds{scope}         what is left of a provider's pause
//	pacer_retry_credit{scope}                       retries the retry budget allows now
//	pacer_budget_limit{workload,unit}               a workload's spend cap per period
//	pacer_budget_spent{workload,unit}               what this process spent of it this period (dollars for "usd")
//	pacer_budget_reserved{workload,unit}            what its calls in flight reserved, to settle on usage
//	pacer_budget_period_end_seconds{workload}       when the current period ends, in Unix seconds
//	pacer_budget_spend_rate{workload,unit}          what this process spends of it, in its unit a second, over the last ten minutes
//	pacer_budget_spend_window_seconds{workload}     the window that rate covers: ten minutes, or the period so far
//	pacer_budget_runs_out_seconds{workload}         when, at that rate, the budget runs out, in Unix seconds (while it is spent)
//	pacer_budget_runs_out_early_seconds{workload}   how long before its period ends that is; 0 when it lasts the period
//	pacer_backlog{scope,unit}                       what the calls waiting on the scope cost on it
//	pacer_backlog_drain_seconds{scope}              how long the scope takes to admit them at its pace now
//	pacer_window_used_ratio{scope,window}           the share of a long window spent (an hour or more: GitHub's hourly count, Anthropic's 5h and 7d)
//	pacer_window_reset_seconds{scope,window}        how long until that window reopens
//	pacer_window_lasting_pace{scope,unit}           the pace that lasts to the binding window's reset, for the workloads that spread long windows
//
// and, for a Transport with a pool (pacer.WithPool), from Stats().Members:
//
//	pacer_member_state{member,state}                1 for the member's state (ready, parked, out, removed), 0 for the others
//	pacer_member_calls_total{member}                calls sent through the member
//	pacer_member_refused_total{member}              of them, those the provider refused (429, 503, 401, 402 or a spent quota)
//	pacer_member_rotated_away_total{member}         of those, the ones that went on to another member
//	pacer_member_cooldown_remaining_seconds{member} what is left of a pause the provider asked of the member
//	pacer_member_parked_until_seconds{member}       when a parked member is tried again, in Unix seconds (while parked)
//
// The counts of Stats (WorkloadStats.Admitted, Throttled, Refused, Rejected
// and Waited) are what the counters above count from events; they are not
// exported twice.
package pacerprom

import (
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/pool"
)

// DefaultBuckets are the wait histogram's buckets, in seconds: from 10 ms
// to ten minutes, pacer's longest wait by default.
var DefaultBuckets = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// An Option configures a Collector.
type Option func(*options)

type options struct {
	namespace string
	buckets   []float64
}

// WithNamespace sets the metrics' prefix; the default is "pacer".
func WithNamespace(ns string) Option { return func(o *options) { o.namespace = ns } }

// WithBuckets sets the wait histogram's buckets, in seconds.
func WithBuckets(b []float64) Option { return func(o *options) { o.buckets = b } }

// Collector counts a Transport's events and reads its Stats at each scrape.
// It is safe for concurrent use.
type Collector struct {
	transport atomic.Pointer[pacer.Transport]

	admitted, throttled, retries  *prometheus.CounterVec
	rejections                    *prometheus.CounterVec
	cooldowns, storeFailures      *prometheus.CounterVec
	budgetExhausted               *prometheus.CounterVec
	paceChanges, slotsHeld        *prometheus.CounterVec
	notReplayable, limitChanges   *prometheus.CounterVec
	budgetThresholds, forecasts   *prometheus.CounterVec
	drift                         *prometheus.GaugeVec   // package reconcile's
	reconcileFailures             *prometheus.CounterVec // package reconcile's
	wait                          *prometheus.HistogramVec
	inFlight, waiting, rate       *prometheus.Desc
	waitingBy, waitStart          *prometheus.Desc
	tokens, cooldown, retryCredit *prometheus.Desc
	budgetLimit, budgetSpent      *prometheus.Desc
	budgetReserved, budgetEnd     *prometheus.Desc
	spendRate, spendWindow        *prometheus.Desc
	runsOut, runsOutEarly         *prometheus.Desc
	backlog, drain                *prometheus.Desc
	windowUsed, windowReset       *prometheus.Desc
	lastingPace                   *prometheus.Desc
	memberState, memberCalls      *prometheus.Desc
	memberRefused, memberRotated  *prometheus.Desc
	memberCooldown, memberParked  *prometheus.Desc
}

var (
	_ observe.Observer     = (*Collector)(nil)
	_ prometheus.Collector = (*Collector)(nil)
)

// New returns a Collector. Pass it to pacer.WithObserver, then Watch the
// Transport, then register it.
func New(opts ...Option) *Collector {
	o := options{namespace: "pacer", buckets: DefaultBuckets}
	for _, opt := range opts {
		opt(&o)
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: o.namespace, Name: name, Help: help}, labels)
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(o.namespace, "", name), help, labels, nil)
	}
	return &Collector{
		admitted:         counter("admitted_total", "Calls admitted and sent.", "scope", "workload"),
		throttled:        counter("throttled_total", "Calls refused by pacer because their wait could not be made.", "scope", "workload"),
		rejections:       counter("provider_rejections_total", "Calls the provider rejected: 429, 503 or a back-pressure status.", "scope", "workload", "status"),
		cooldowns:        counter("cooldowns_total", "Pauses the provider imposed on a scope.", "scope"),
		retries:          counter("retries_total", "Calls sent again.", "scope", "workload"),
		budgetExhausted:  counter("budget_exhausted_total", "Calls refused because their workload's spend budget was exhausted.", "workload"),
		storeFailures:    counter("store_failures_total", "Calls to the shared store that went unanswered.", "scope"),
		paceChanges:      counter("pace_changes_total", "Times what the provider said changed a scope's pace.", "scope"),
		slotsHeld:        counter("slots_held_total", "Concurrency slots held longer than the slot-age alert allows.", "scope"),
		notReplayable:    counter("bodies_not_replayable_total", "Calls sent once because their body was too large to keep for a retry.", "workload"),
		limitChanges:     counter("limit_changes_total", "Runtime changes of a scope's configured limit.", "scope", "origin"),
		budgetThresholds: counter("budget_thresholds_total", "Times a workload's budget crossed 50, 80 or 100 percent of its limit.", "workload", "percent"),
		forecasts:        counter("budget_forecasts_total", "Times a workload's budget was forecast to run out more than its margin before its period ends.", "workload"),
		drift: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: o.namespace, Name: "budget_drift",
			Help: "What the provider billed a group (a project, key or model) less what pacer charged its workloads, in the budget's unit, as a reconciliation last reported it."},
			[]string{"group"}),
		reconcileFailures: counter("reconcile_failures_total", "Reconciliations whose usage or cost report could not be read.", "group"),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: o.namespace, Name: "wait_seconds",
			Help: "How long calls that waited for admission waited.", Buckets: o.buckets}, []string{"scope", "workload"}),
		inFlight:       desc("in_flight", "Calls in flight, counted on scopes that cap concurrency.", "scope", "workload"),
		waiting:        desc("waiting", "Calls waiting for admission.", "scope"),
		waitingBy:      desc("waiting_by_reason", "Calls waiting for admission, by what holds them back: rate, concurrency, reserve or cooldown.", "scope", "reason"),
		waitStart:      desc("oldest_wait_start_seconds", "When the call waiting longest on the scope began to wait, in Unix seconds.", "scope"),
		rate:           desc("rate", "The scope's pace now, in units a second.", "scope", "unit"),
		tokens:         desc("tokens", "What the scope's lowest bucket, of every key, holds now (in-memory store only).", "scope", "unit"),
		cooldown:       desc("cooldown_remaining_seconds", "What is left of a pause the provider imposed.", "scope"),
		retryCredit:    desc("retry_credit", "Retries the scope's retry budget allows now.", "scope"),
		budgetLimit:    desc("budget_limit", "A workload's spend cap per period.", "workload", "unit"),
		budgetSpent:    desc("budget_spent", "What this process spent of its workload's budget in the current period.", "workload", "unit"),
		budgetReserved: desc("budget_reserved", "What this process's calls in flight reserved of its workload's budget, to be settled on usage.", "workload", "unit"),
		budgetEnd:      desc("budget_period_end_seconds", "When the current period of the workload's budget ends, in Unix seconds.", "workload"),
		spendRate:      desc("budget_spend_rate", "What this process spends of its workload's budget, in the budget's unit a second, over the last ten minutes.", "workload", "unit"),
		spendWindow:    desc("budget_spend_window_seconds", "The window the spend rate covers: the last ten minutes, or the period so far.", "workload"),
		runsOut:        desc("budget_runs_out_seconds", "When, at the spend rate, the workload's budget runs out, in Unix seconds.", "workload"),
		runsOutEarly:   desc("budget_runs_out_early_seconds", "How long before its period ends the workload's budget runs out at the spend rate; 0 when it lasts.", "workload"),
		backlog:        desc("backlog", "What the calls waiting on the scope cost on it, in its unit.", "scope", "unit"),
		drain:          desc("backlog_drain_seconds", "How long the scope takes to admit the calls waiting on it at its pace now.", "scope"),
		windowUsed:     desc("window_used_ratio", "The share of a long window (an hour or more) the provider says is spent.", "scope", "window"),
		windowReset:    desc("window_reset_seconds", "How long until a long window reopens.", "scope", "window"),
		lastingPace:    desc("window_lasting_pace", "The pace, in the scope's unit a second, that lasts to the binding long window's reset, for the workloads that spread long windows.", "scope", "unit"),
		memberState:    desc("member_state", "1 for a pool member's state (ready, parked, out, removed), 0 for the others.", "member", "state"),
		memberCalls:    desc("member_calls_total", "Calls sent through a pool member.", "member"),
		memberRefused:  desc("member_refused_total", "Calls sent through a pool member that the provider refused: 429, 503, 401, 402 or a spent quota.", "member"),
		memberRotated:  desc("member_rotated_away_total", "Calls a pool member refused that went on to another member.", "member"),
		memberCooldown: desc("member_cooldown_remaining_seconds", "What is left of a pause the provider asked of a pool member.", "member"),
		memberParked:   desc("member_parked_until_seconds", "When a parked pool member is tried again, in Unix seconds.", "member"),
	}
}

// Watch makes the Collector report t's Stats as gauges. A Collector
// watches one Transport; a later Watch replaces it.
func (c *Collector) Watch(t *pacer.Transport) { c.transport.Store(t) }

// Observe implements observe.Observer.
func (c *Collector) Observe(e observe.Event) {
	switch e.Kind {
	case observe.EventAdmitted:
		c.admitted.WithLabelValues(e.Scope, e.Workload).Inc()
	case observe.EventWaited:
		c.wait.WithLabelValues(e.Scope, e.Workload).Observe(e.Wait.Seconds())
	case observe.EventThrottled:
		c.throttled.WithLabelValues(e.Scope, e.Workload).Inc()
	case observe.EventRejected:
		c.rejections.WithLabelValues(e.Scope, e.Workload, statusLabel(e.Status)).Inc()
	case observe.EventCooldownStarted:
		c.cooldowns.WithLabelValues(e.Scope).Inc()
	case observe.EventRetried:
		c.retries.WithLabelValues(e.Scope, e.Workload).Inc()
	case observe.EventBudgetExhausted:
		c.budgetExhausted.WithLabelValues(e.Workload).Inc()
	case observe.EventStoreFailure:
		c.storeFailures.WithLabelValues(e.Scope).Inc()
	case observe.EventPaceChanged:
		c.paceChanges.WithLabelValues(e.Scope).Inc()
	case observe.EventSlotHeld:
		c.slotsHeld.WithLabelValues(e.Scope).Inc()
	case observe.EventBodyNotReplayable:
		c.notReplayable.WithLabelValues(e.Workload).Inc()
	case observe.EventLimitChanged:
		c.limitChanges.WithLabelValues(e.Scope, e.Origin).Inc()
	case observe.EventBudgetThreshold:
		c.budgetThresholds.WithLabelValues(e.Workload, strconv.Itoa(e.Percent)).Inc()
	case observe.EventBudgetForecast:
		c.forecasts.WithLabelValues(e.Workload).Inc()
	case observe.EventBudgetDrift:
		c.drift.WithLabelValues(e.Scope).Set(e.Amount)
	case observe.EventReconcileFailed:
		c.reconcileFailures.WithLabelValues(e.Scope).Inc()
	}
}

// statusLabel keeps the status label to the codes HTTP defines.
func statusLabel(status int) string {
	if status < 100 || status > 599 {
		return "other"
	}
	return strconv.Itoa(status)
}

func (c *Collector) vecs() []prometheus.Collector {
	return []prometheus.Collector{c.admitted, c.throttled, c.rejections, c.cooldowns, c.retries, c.budgetExhausted, c.storeFailures, c.wait,
		c.paceChanges, c.slotsHeld, c.notReplayable, c.limitChanges, c.budgetThresholds, c.forecasts, c.drift, c.reconcileFailures}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, v := range c.vecs() {
		v.Describe(ch)
	}
	for _, d := range []*prometheus.Desc{c.inFlight, c.waiting, c.waitingBy, c.waitStart, c.rate, c.tokens, c.cooldown, c.retryCredit, c.budgetLimit, c.budgetSpent, c.budgetReserved, c.budgetEnd,
		c.spendRate, c.spendWindow, c.runsOut, c.runsOutEarly, c.backlog, c.drain, c.windowUsed, c.windowReset, c.lastingPace,
		c.memberState, c.memberCalls, c.memberRefused, c.memberRotated, c.memberCooldown, c.memberParked} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, v := range c.vecs() {
		v.Collect(ch)
	}
	t := c.transport.Load()
	if t == nil {
		return
	}
	st := t.Stats()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, s := range st.Scopes {
		for _, w := range st.Workloads {
			gauge(c.inFlight, float64(s.InFlightBy[w.Name]), s.Name, w.Name)
		}
		gauge(c.waiting, float64(s.Waiting), s.Name)
		for reason, n := range s.WaitingBy {
			gauge(c.waitingBy, float64(n), s.Name, string(reason))
		}
		if !s.WaitingSince.IsZero() {
			gauge(c.waitStart, float64(s.WaitingSince.UnixNano())/1e9, s.Name)
		}
		gauge(c.rate, s.Rate, s.Name, s.Unit)
		if s.TokensKnown {
			gauge(c.tokens, s.Tokens, s.Name, s.Unit)
		}
		gauge(c.cooldown, s.Cooldown.Seconds(), s.Name)
		gauge(c.retryCredit, s.RetryCredit, s.Name)
		gauge(c.backlog, s.BacklogCost, s.Name, s.Unit)
		gauge(c.drain, s.DrainIn.Seconds(), s.Name)
		for _, w := range s.Windows {
			if w.Used >= 0 {
				gauge(c.windowUsed, w.Used, s.Name, w.Name)
			}
			if w.HasReset {
				gauge(c.windowReset, w.Reset.Seconds(), s.Name, w.Name)
			}
		}
		if s.LastingPace > 0 {
			gauge(c.lastingPace, s.LastingPace, s.Name, s.Unit)
		}
	}
	for _, w := range st.Workloads {
		if w.Unit == "" {
			continue // no budget
		}
		unit := w.Unit
		gauge(c.budgetLimit, w.Limit, w.Name, unit)
		gauge(c.budgetSpent, w.Spent, w.Name, unit)
		gauge(c.budgetReserved, w.Reserved, w.Name, unit)
		if !w.PeriodEnd.IsZero() {
			gauge(c.budgetEnd, float64(w.PeriodEnd.UnixNano())/1e9, w.Name)
		}
		if w.SpendWindow > 0 {
			gauge(c.spendRate, w.SpendRate, w.Name, unit)
			gauge(c.spendWindow, w.SpendWindow.Seconds(), w.Name)
			gauge(c.runsOutEarly, w.RunsOutEarly.Seconds(), w.Name)
		}
		if !w.RunsOut.IsZero() {
			gauge(c.runsOut, float64(w.RunsOut.UnixNano())/1e9, w.Name)
		}
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for _, m := range st.Members {
		for _, state := range memberStates {
			v := 0.0
			if m.State == state {
				v = 1
			}
			gauge(c.memberState, v, m.Name, string(state))
		}
		counter(c.memberCalls, m.Admitted, m.Name)
		counter(c.memberRefused, m.Refused, m.Name)
		counter(c.memberRotated, m.RotatedAway, m.Name)
		gauge(c.memberCooldown, m.Cooldown.Seconds(), m.Name)
		if m.State == pool.Parked {
			gauge(c.memberParked, float64(m.Until.UnixNano())/1e9, m.Name)
		}
	}
}

// memberStates are the states pacer_member_state has a series for.
var memberStates = [...]pool.State{pool.Ready, pool.Parked, pool.Out, pool.Removed}
