package pacer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/store"
)

// alertScope is the name under which a store decides whether an alert may
// be sent: one bucket per configured scope, shared by every process that
// shares the store, whatever its alert interval.
const alertScope = reservedPrefix + "alert"

// WithAlerts calls notify when calls on a scope are throttled (see observe.Alert),
// when a workload's budget crosses 50, 80 and 100 % of its Limit (once
// each per period for the fleet, at once, on a goroutine of its own), and
// when a budget is forecast to run out more than its Budget.ForecastMargin
// before its period ends (once per period for the fleet, with an
// observe.EventBudgetForecast to every observer: see WorkloadStats.RunsOut;
// it looks at most once a minute, while calls are admitted, on a goroutine
// of its own, and only at a rate measured over five minutes at least, or a
// tenth of a shorter period; on a shared store that reads levels, each
// look reads the budget's fleet-wide spend, and the rate and forecast are
// the fleet's: see WorkloadStats.FleetSpent),
// at most once per interval for each scope, however many calls are: an
// eleven-hour flood with a one-hour interval makes twelve calls, not fifty
// thousand — the first at once, then one at the end of each interval that
// counted anything, each carrying the counts since the one before. A scope
// that goes quiet sends its last counts when its interval ends, so the
// counts of all the alerts add up to every call throttled.
//
// Whether an alert may be sent now is decided by the Transport's store, in
// one round trip: processes that share a Redis or Postgres store (WithStore)
// send one alert per interval for the whole fleet, not one each. An
// instance that loses the race keeps its counts and sends them when it next
// wins, so each observe.Alert carries the counts of the instance that sent it;
// added up over time, the fleet's alerts count every throttled call. If the
// store cannot answer, the alert is sent anyway: better twice than never.
// Processes sharing a store share alerts by scope name.
//
// notify is called on a goroutine of its own, one at a time for each scope,
// so it may block (post to a chat, page someone) without holding up a
// request; while it runs, counts accumulate for the next alert. That
// goroutine lives while the scope has counts to send, and ends one interval
// after the last throttled call. Time is the Transport's Clock.
//
// An interval that is not positive, or a nil notify, is a configuration
// error.
func WithAlerts(interval time.Duration, notify func(observe.Alert)) Option {
	return func(c *config) {
		if interval <= 0 || notify == nil {
			c.errs = append(c.errs, fmt.Errorf("WithAlerts(%v, notify): the interval must be positive and notify not nil", interval))
			return
		}
		// A new alerter for each Transport the option configures.
		c.observers = append(c.observers, &alerter{interval: interval, notify: notify, scopes: map[string]*alertState{}, forecastSaid: map[string]time.Time{}})
	}
}

// alerter is the observe.Observer that WithAlerts adds.
type alerter struct {
	interval time.Duration
	notify   func(observe.Alert)
	clock    clock.Clock // the Transport's, set by bind
	store    store.Store

	mu     sync.Mutex
	scopes map[string]*alertState // scope names come from the configuration: bounded

	// Forecasts (forecast.go): the Transport whose budgets it looks at,
	// when it looks next (Unix nanoseconds), and by workload the end of
	// the period whose forecast alert this process raised, under
	// forecastMu.
	t            *Transport
	nextForecast atomic.Int64
	forecastMu   sync.Mutex
	forecastSaid map[string]time.Time
}

type alertState struct {
	pending observe.Alert // Count 0: nothing to send
	next    time.Time     // no alert before this
	sending bool          // a goroutine is sending this scope's alerts
}

func (a *alerter) bind(t *Transport) { a.clock, a.store, a.t = t.clock, t.store, t }

// Observe counts throttled and rejected calls; the first after a quiet
// spell starts the goroutine that sends the scope's alerts.
func (a *alerter) Observe(e observe.Event) {
	if e.Kind == observe.EventBudgetThreshold {
		// At most three a period for each budget, decided for the fleet
		// already: sent at once, without holding up the call.
		now := a.clock.Now()
		go a.notify(observe.Alert{Workload: e.Workload, Percent: e.Percent, First: now, Last: now})
		return
	}
	if e.Kind == observe.EventAdmitted {
		a.forecastSometimes()
		return
	}
	if e.Kind != observe.EventThrottled && e.Kind != observe.EventRejected {
		return
	}
	now := a.clock.Now()
	a.mu.Lock()
	s := a.scopes[e.Scope]
	if s == nil {
		s = &alertState{}
		a.scopes[e.Scope] = s
	}
	p := &s.pending
	if p.Count == 0 {
		*p = observe.Alert{Scope: e.Scope, First: now}
	}
	p.Count++
	p.Last = now
	if e.Kind == observe.EventThrottled {
		p.Throttled++
	} else {
		p.Rejected++
	}
	start := !s.sending
	s.sending = true
	a.mu.Unlock()
	if start {
		go a.send(e.Scope, s)
	}
}

// send sends the scope's alerts, each when its interval allows and the
// store agrees, until an interval passes with nothing to send.
func (a *alerter) send(scope string, s *alertState) {
	var timer clock.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		a.mu.Lock()
		wait := s.next.Sub(a.clock.Now())
		a.mu.Unlock()
		if wait > 0 {
			if timer == nil {
				timer = a.clock.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			<-timer.C()
		}
		now := a.clock.Now()
		a.mu.Lock()
		if s.pending.Count == 0 {
			s.sending = false
			a.mu.Unlock()
			return
		}
		a.mu.Unlock()
		if retry, ok := a.mayNotify(scope, now); !ok {
			a.mu.Lock()
			s.next = now.Add(retry)
			a.mu.Unlock()
			continue
		}
		a.mu.Lock()
		alert := s.pending
		s.pending = observe.Alert{}
		s.next = now.Add(a.interval)
		a.mu.Unlock()
		a.notify(alert)
	}
}

// mayNotify asks the store whether the scope's alert for this interval is
// still to be sent, taking it if so; if not, it says when to ask again.
func (a *alerter) mayNotify(scope string, now time.Time) (retry time.Duration, ok bool) {
	d := store.Demand{Scope: alertScope, Key: scope, Burst: 1, Window: a.interval, Cost: 1}
	dec, err := a.store.Take(context.Background(), now, []store.Demand{d})
	switch {
	case err != nil || dec.OK:
		return 0, true
	case dec.Wait <= 0 || dec.Wait > a.interval:
		return a.interval, false
	}
	return dec.Wait, false
}
