// Package observe is what a pacer Transport tells the outside world: the
// Events it emits, the Observer that hears them, the Alerts that
// pacer.WithAlerts sends, and the Reason a call was held back or refused. A Transport takes observers with
// pacer.WithObserver(o) and alerts with pacer.WithAlerts(interval, notify).
//
// Write an Observer to count, log or trace what pacer does; or use one of
// the adapters: observe/slog (log/slog), observe/prometheus and observe/otel
// (metrics).
//
//	tr := pacer.New(nil, pacer.WithObserver(observe.Func(func(e observe.Event) {
//		if e.Kind == observe.EventThrottled {
//			log.Printf("pacer refused a call on %s: %v", e.Scope, e.Err)
//		}
//	})))
//
// The package depends on nothing of pacer's, so that an implementer need
// not import the Transport's package to write an Observer.
package observe

import (
	"fmt"
	"time"
)

// An Observer hears what pacer does, to count it, log it or page someone.
// Observe is called on the request's goroutine, so it must be quick and must
// not block; it may be called from many goroutines at once.
//
// Labels are bounded: Scope and Workload are names from the configuration,
// never a scope's key, a URL or a header, so they are safe as metric labels.
type Observer interface {
	Observe(Event)
}

// Func adapts a function to the Observer interface.
type Func func(Event)

// Observe calls f(e).
func (f Func) Observe(e Event) { f(e) }

// An Event is one thing pacer did.
type Event struct {
	Kind     EventKind
	Scope    string        // the scope concerned; "" for events of the whole call
	Workload string        // the call's workload
	Wait     time.Duration // EventWaited: how long; EventCooldownStarted: how long the pause is; EventBudgetForecast: how long before its period ends the budget runs out
	Status   int           // EventRejected: the provider's status
	Attempt  int           // EventRetried: the attempt about to be made, 2 or more
	Err      error         // EventThrottled, EventStoreFailure, EventImplausibleUsage: what happened
	// EventLimitChanged: the scope's new Limit, the one it replaced, and
	// who changed it (OriginSetLimit); EventWorkloadChanged: who changed
	// the workload (OriginSetWorkload); EventPaceChanged: OriginStore for
	// a cut another instance took, "" for this one's; EventMemberOut,
	// EventMemberParked, EventMemberUnparked: OriginStore for a member's
	// state another instance of the fleet published, "" for this one's.
	Limit, Previous Limit
	Origin          string
	Percent         int     // EventBudgetThreshold: the share of the budget crossed, 50, 80 or 100
	Rate            float64 // EventPaceChanged: the scope's pace now, in units a second; EventBudgetForecast: the budget's spend rate, in its unit a second
	Why             string  // EventPaceChanged: why the pace changed
	// EventBudgetDrift: what the provider billed less what pacer charged,
	// in the budget's unit (dollars for a budget in money); Percent is it
	// as a share of what pacer charged, rounded.
	Amount float64
	// Member is the pool member concerned (pacer.WithPool), by its name
	// alone; "" outside a pool.
	Member string
}

// A Limit is a pacer.Limit as an Event carries it: the same fields, so
// that each converts to the other (observe.Limit(l), pacer.Limit(e.Limit)).
// The zero Limit means no rate limit.
type Limit struct {
	Count int
	Per   time.Duration
	Burst int // zero: pacer's default burst
}

// String returns the limit in the form "100/1m0s burst 10", or
// "unlimited" for the zero Limit.
func (l Limit) String() string {
	switch {
	case l == Limit{}:
		return "unlimited"
	case l.Burst == 0:
		return fmt.Sprintf("%d/%v", l.Count, l.Per)
	}
	return fmt.Sprintf("%d/%v burst %d", l.Count, l.Per, l.Burst)
}

// The Origin of an event says who made the change it reports.
const (
	// OriginSetLimit is the Origin of an EventLimitChanged that
	// Transport.SetLimit made in this process.
	OriginSetLimit = "set_limit"
	// OriginSetWorkload is the Origin of an EventWorkloadChanged that
	// Transport.SetWorkload made in this process.
	OriginSetWorkload = "set_workload"
	// OriginStore is the Origin of an EventLimitChanged that another
	// instance made, or of an EventPaceChanged that applies a cut another
	// instance took, read from the shared store (store.Policy.LimitSync).
	OriginStore = "store"
)

// An EventKind says what kind of thing happened.
type EventKind int

const (
	EventAdmitted          EventKind = iota // a call was admitted and is about to be sent
	EventWaited                             // a call was admitted after waiting
	EventThrottled                          // a call was refused locally: its wait could not be made
	EventRejected                           // the provider rejected a call (429, 503 or back-pressure)
	EventCooldownStarted                    // the provider paused a scope
	EventCooldownEnded                      // a paused scope admitted its first call again
	EventRetried                            // a call is about to be sent again
	EventBudgetExhausted                    // a workload's budget refused a call
	EventStoreFailure                       // the store failed to answer
	EventBodyNotReplayable                  // a request body too large for retry.Policy.MaxBufferedBody: the call is sent once
	EventSlotHeld                           // a slot was held longer than WithSlotAgeAlert allows; Wait: how long, to the second
	EventLimitChanged                       // a scope's configured Limit was changed at runtime (SetLimit)
	EventWorkloadChanged                    // a workload's Reserve, Max or queue bound was changed at runtime (SetWorkload)
	EventBudgetThreshold                    // a workload's budget crossed 50, 80 or 100 % (Percent), once per period for the fleet
	EventPaceChanged                        // what the provider said changed a scope's pace (Rate, Why)
	EventImplausibleUsage                   // a response reported more usage than its call could cost (Err says what, and of which call)
	EventBudgetForecast                     // a workload's budget is forecast to run out Wait before its period ends, at Rate; once per period for the fleet, when pacer.WithAlerts looks

	// Reconciliation with the provider's own bill (package reconcile).
	EventBudgetDrift     // what the provider billed differs from what pacer charged (Scope: the group; Amount, Percent, Err say by how much)
	EventReconcileFailed // the provider's usage or cost report could not be read (Err says why); calls go on as before

	// A pool's members (pacer.WithPool); Member names the member.
	EventMemberOut      // a member answered 401 (Status), or another instance removed it: out of rotation until put back (Why)
	EventMemberParked   // a member's quota is spent (Status), or the caller parked it (Status 0): no calls until Wait has passed, then a probe (Why)
	EventMemberUnparked // a parked, out or removed member takes calls again
	EventMemberRotated  // a call a member refused goes on to another member (Status: the refusal's; 0 for a connection that never left)
)

var eventNames = [...]string{"admitted", "waited", "throttled", "rejected", "cooldown_started", "cooldown_ended", "retried", "budget_exhausted", "store_failure",
	"body_not_replayable", "slot_held", "limit_changed", "workload_changed", "budget_threshold", "pace_changed", "implausible_usage",
	"budget_forecast", "budget_drift", "reconcile_failed",
	"member_out", "member_parked", "member_unparked", "member_rotated"}

// String returns the kind's name in snake case, fit for a metric label.
func (k EventKind) String() string {
	if k >= 0 && int(k) < len(eventNames) {
		return eventNames[k]
	}
	return "unknown"
}
