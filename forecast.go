package pacer

import (
	"context"
	"math"
	"time"

	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/store"
)

// Forecasts: what Stats and WithAlerts say is coming, computed when Stats
// is read or when the alerter looks (at most once a forecastCheck), never
// on a call. A call's only share of it is spendMarks.mark, under the lock
// its budget's count already takes.

const (
	// forecastSpan is how far back a budget's spend rate looks.
	forecastSpan = 10 * time.Minute
	// forecastStep is the resolution of the spend rate's window: it covers
	// the last forecastSpan, from the first step boundary in it.
	forecastStep = 10 * time.Second
	// forecastMarks is how many step boundaries forecastSpan holds.
	forecastMarks = int(forecastSpan/forecastStep) + 1
	// forecastCheck is how often, at most, the alerter looks at the
	// budgets' forecasts, while calls are admitted.
	forecastCheck = time.Minute
	// forecastAlertWindow is the shortest window whose rate may raise a
	// forecast alert (or a tenth of the period, if that is shorter): a
	// rate over the first seconds of a period says little.
	forecastAlertWindow = 5 * time.Minute
)

// spendMarks keeps what a budget had spent at the step boundaries of the
// last forecastSpan: a budget's total (spent and reserved) changes only
// when a call spends or settles, so the total before the first change in
// a step is what it was at the step's start. It is guarded by its
// budgetTally's mu; the zero value has no marks.
type spendMarks struct {
	step  [forecastMarks]int64 // the step each mark is for, plus one: 0 is no mark
	total [forecastMarks]float64
	last  int64 // the step of the latest mark, plus one
}

// mark notes total, the budget's count before a change at now, if this is
// the first change in now's step.
func (r *spendMarks) mark(now time.Time, total float64) {
	s := now.UnixNano()/int64(forecastStep) + 1
	if s == r.last {
		return
	}
	r.last = s
	i := s % int64(forecastMarks)
	r.step[i], r.total[i] = s, total
}

// at returns what the budget had counted at the start of step s (plus
// one), total being its count now at step now (plus one): the mark of the
// first step from s on that has one, or total if none does.
func (r *spendMarks) at(s, now int64, total float64) float64 {
	for ; s <= now; s++ {
		if i := s % int64(forecastMarks); r.step[i] == s {
			return r.total[i]
		}
	}
	return total
}

// spendRate returns the rate at which the budget's count grew over the
// last forecastSpan, in the store's units a second, and the window it was
// measured over: from the first step boundary in the span, or from the
// period's start if it is later. The window is zero when no period is
// current, or it has just begun. A count that fell (calls settled below
// their reservations) is a rate of zero. m.mu must be held, and the
// period rolled to now.
func (m *budgetTally) spendRate(now time.Time) (rate float64, window time.Duration) {
	if m.start.IsZero() || !now.After(m.start) {
		return 0, 0
	}
	total := m.spent + m.reserved
	step := int64(forecastStep)
	from := now.Add(-forecastSpan).UnixNano()
	s := (from + step - 1) / step // the first boundary at or after from
	var base float64
	if since := time.Unix(0, s*step); since.After(m.start) {
		window = now.Sub(since)
		base = m.marks.at(s+1, now.UnixNano()/step+1, total)
	} else {
		window = now.Sub(m.start) // the period so far; its count began at 0
	}
	if window <= 0 {
		return 0, 0
	}
	return max(0, total-base) / window.Seconds(), window
}

// forecast sets ws's spend rate and when, at it, the budget runs out.
func (w *workloadState) forecast(ws *WorkloadStats, now time.Time) {
	if !w.Budget.capped() {
		return
	}
	m := &w.tally
	m.mu.Lock()
	m.roll(w, now, false)
	rate, window := m.spendRate(now)
	m.mu.Unlock()
	if window == 0 {
		return
	}
	scale := w.Budget.scale()
	ws.SpendRate, ws.SpendWindow = rate/scale, window
	left := ws.Limit - ws.Spent - ws.Reserved
	switch {
	case left <= 0:
		ws.RunsOut = now
	case rate > 0:
		ns := left * scale / rate * float64(time.Second)
		ws.RunsOutIn = store.LongestWait
		if ns < float64(store.LongestWait) {
			ws.RunsOutIn = time.Duration(math.Ceil(ns))
		}
		ws.RunsOut = now.Add(ws.RunsOutIn)
	default:
		return // not spent at all in the window: it does not run out at this rate
	}
	if !ws.PeriodEnd.IsZero() && ws.RunsOut.Before(ws.PeriodEnd) {
		ws.RunsOutEarly = ws.PeriodEnd.Sub(ws.RunsOut)
	}
}

// forecastMargin is how long before its period's end a budget must be
// forecast to run out to raise an alert: Budget.ForecastMargin, else a
// tenth of the period.
func (b Budget) forecastMargin(period time.Duration) time.Duration {
	if b.ForecastMargin > 0 {
		return b.ForecastMargin
	}
	return period / 10
}

// backlog adds the calls waiting on bucket s to sc's backlog: their cost,
// and how long the bucket takes to admit them at its pace now, after any
// pause, if that is longer than the scope's other buckets take.
func (s *bucket) backlog(sc *ScopeStats, now time.Time) {
	s.mu.Lock()
	n, cost := s.queue.Len(), s.queue.Cost()
	s.mu.Unlock()
	if n == 0 {
		return
	}
	sc.BacklogCost += cost
	rate, _ := s.pace()
	if rate <= 0 {
		return // a cap on calls in flight drains as calls end: not foreseen
	}
	d := min(cost/rate*float64(time.Second), float64(store.LongestWait))
	in := time.Duration(math.Ceil(d))
	if until := s.cooldown.Load(); until > now.UnixNano() {
		in += time.Duration(until - now.UnixNano())
	}
	sc.DrainIn = max(sc.DrainIn, in)
}

// noForecasts is the alerter's nextForecast once it found no budget to
// look at: budgets do not change at runtime, so it never looks again.
const noForecasts = math.MaxInt64

// forecastSometimes starts a look at the budgets' forecasts, on a
// goroutine of its own, if forecastCheck has passed since the last. A
// Transport without budgets pays an atomic load.
func (a *alerter) forecastSometimes() {
	next := a.nextForecast.Load()
	if next == noForecasts {
		return
	}
	now := a.clock.Now()
	if now.UnixNano() < next || !a.nextForecast.CompareAndSwap(next, now.Add(forecastCheck).UnixNano()) {
		return
	}
	go a.checkForecasts(now)
}

// checkForecasts raises an EventBudgetForecast and an alert for each
// budget forecast to run out more than its margin before its period ends,
// once per period: once for this process, and then only if no process
// sharing the store raised it first. If the store cannot answer, this
// one does: better twice than never.
func (a *alerter) checkForecasts(now time.Time) {
	if !a.forecastMu.TryLock() {
		return // the last look is still sending (a slow notify)
	}
	defer a.forecastMu.Unlock()
	budgets := false
	defer func() {
		if !budgets {
			a.nextForecast.Store(noForecasts)
		}
	}()
	for _, w := range a.t.workloads {
		if !w.Budget.capped() {
			continue
		}
		budgets = true
		ws := w.stats(now)
		w.forecast(&ws, now)
		a.t.readFleet(w, &ws, now)
		if ws.PeriodEnd.IsZero() || a.forecastSaid[w.name].Equal(ws.PeriodEnd) {
			continue
		}
		period := w.Budget.Per
		if w.Budget.calendar() {
			p := w.periodAt(now)
			period = p.end.Sub(p.start)
		}
		window, rate, runsOut, early := ws.SpendWindow, ws.SpendRate, ws.RunsOut, ws.RunsOutEarly
		if ws.FleetSpendWindow > 0 {
			// The fleet's, where a shared store tells it: every process's
			// calls run the budget out, not this one's alone.
			window, rate, runsOut, early = ws.FleetSpendWindow, ws.FleetSpendRate, ws.FleetRunsOut, 0
			if !runsOut.IsZero() && runsOut.Before(ws.PeriodEnd) {
				early = ws.PeriodEnd.Sub(runsOut)
			}
		}
		if window < min(forecastAlertWindow, period/10) || early <= w.Budget.forecastMargin(period) {
			continue
		}
		a.forecastSaid[w.name] = ws.PeriodEnd
		if !a.t.firstToForecast(w, now, ws.PeriodEnd) {
			continue
		}
		a.t.emit(observe.Event{Kind: observe.EventBudgetForecast, Workload: w.name, Wait: early, Rate: rate})
		a.notify(observe.Alert{Workload: w.name, First: now, Last: now, RunsOut: runsOut, PeriodEnd: ws.PeriodEnd})
	}
}

// firstToForecast reports whether no process sharing the store has raised
// w's forecast alert for the period ending at end, taking the period's one
// token if so, as crossed does for a threshold.
func (t *Transport) firstToForecast(w *workloadState, now, end time.Time) bool {
	key := w.budget.Key
	if w.Budget.calendar() {
		key = w.periodAt(now).key
	}
	d := store.Demand{Scope: reservedPrefix + "forecast", Key: key, Burst: 1, Window: end.Sub(now) + time.Second, Cost: 1}
	if !w.Budget.calendar() {
		d.Window = w.Budget.Per
	}
	dec, err := t.store.Take(context.Background(), now, []store.Demand{d})
	return err != nil || dec.OK
}
