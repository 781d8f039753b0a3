package pacer

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/pool"
	"github.com/pacer-go/pacer/ratelimitheader"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/usage/prices"
)

// Stats is a snapshot of a Transport, for health pages and debugging.
type Stats struct {
	Scopes    []ScopeStats    // in name order
	Workloads []WorkloadStats // in name order
	// Undeclared counts the calls whose context named a workload the
	// Transport does not declare, by that name: refused, or taken by the
	// workload that TakesUndeclared them; nil when there were none. It
	// holds 64 names at most: the calls of further names count under
	// "(others)".
	Undeclared map[string]int64
	// Members describes the members of the Transport's pool (WithPool),
	// in their declared order; nil without a pool.
	Members []pool.MemberStats
}

// ScopeStats describes one scope: its shared bucket's pace, and the calls
// in flight and waiting across all its keys.
type ScopeStats struct {
	Name string
	Unit string
	Keys int // keyed buckets this process holds; 0 for a scope without keys

	Rate    float64 // the pace now, in units a second, after learning and any cut
	Burst   float64
	Learned bool    // the pace comes from a limit the provider published
	Factor  float64 // the share of the rate a cut left (of the slots, for a scope without a rate), 1 when not cut
	// Why says what sets Rate: the configured limit, the provider's
	// published one, what it reports remains, or a climb back after a
	// refusal — for a scope without a rate, a refusal that lowered its
	// cap; "" for a scope that paces nothing. While a pause holds the
	// scope (Cooldown), it first says what asked for the pause: "paused
	// for the provider's Retry-After; then recovering from a refusal".
	Why string
	// Concurrency is the scope's configured cap on calls in flight (0: no
	// cap), and ConcurrencyNow the cap in force now on its shared bucket:
	// lower while a scope without a rate climbs back from a refusal that
	// cut its cap (Factor says how far, Why says so, RecoveredIn how long
	// until the whole cap is back). Calls waiting for a slot are admitted as
	// it climbs.
	Concurrency, ConcurrencyNow int
	// RecoveredIn is how long until a scope cut by a refusal is back at its
	// full pace, or its full cap; 0 when it is not cut.
	RecoveredIn time.Duration

	// Tokens is the lowest level among the scope's buckets this process
	// holds, when TokensKnown: the store is in this process's memory and
	// the scope is paced by rate. TokensKey says which bucket that is: ""
	// for the scope's shared bucket (the only one of a scope without keys),
	// else the key. A shared store is not asked; its levels would cost a
	// round trip on every scrape.
	Tokens      float64
	TokensKey   string
	TokensKnown bool

	Cooldown time.Duration // what is left of a pause the provider asked for
	Admitted int64         // calls admitted since the Transport was made, on every key
	// Rejected counts the answers that refused a call of the scope for the
	// provider's limits, on every key: a 429, a 503 or a back-pressure
	// status (classify.BackPressure), or a permit's Rejected.
	Rejected int64

	InFlight int
	Waiting  int
	// WaitingBy counts the calls waiting now by what holds them back:
	// observe.ReasonRate, ReasonConcurrency (a lowered cap too:
	// ConcurrencyNow), ReasonReserve or ReasonCooldown. On each bucket (each
	// key) only the first call in the queue tries; what it met when it last
	// tried holds every call queued behind it, and they are all counted
	// under it. nil when no call waits.
	WaitingBy map[observe.Reason]int
	// WaitingSince is when the call that has waited longest on the scope,
	// on any key, began to wait (on this scope or another of its scopes);
	// WaitingReason is what holds it back now, as WaitingBy counts it, and
	// WaitingWorkload its workload. Zero when no call waits.
	WaitingSince    time.Time
	WaitingReason   observe.Reason
	WaitingWorkload string
	// InFlightBy counts the calls in flight by workload.
	InFlightBy map[string]int
	// RetryCredit is the number of retries the scope's budget allows now.
	RetryCredit float64
	// BacklogCost is what the calls waiting on the scope (Waiting) cost on
	// it, in Unit, on every key. DrainIn is how long the scope takes to
	// admit them at its pace now (Rate, on each key its own), after any
	// pause (Cooldown): their cost over the rate, the longest of its keys.
	// It is a forecast as of now, a lower bound: calls that join the queue
	// ahead of them, another workload's reserve, a cap on calls in flight
	// or a further pause make it longer; on a store shared by a fleet, so do
	// the other processes' calls. Zero when no call waits, and when the
	// scope paces nothing by rate: a cap on calls in flight drains as calls
	// end, which cannot be foreseen.
	BacklogCost float64
	DrainIn     time.Duration
	// OldestSlot is how long the longest-held slot in flight has been
	// held, on any key, to within a second; 0 when no slot is. One older
	// than any response should take is most likely a response body that was
	// never closed: see WithSlotAgeAlert.
	OldestSlot time.Duration

	// Long windows (longwindow.go). Windows are the windows of an hour or
	// more the provider last reported for the scope, on any of its keys,
	// the shared bucket's first, each in the order first seen: Anthropic's
	// unified 5-hour and weekly windows as a share used (Used), a count
	// whose window is an hour or more (GitHub's
	// hourly one) with its Limit and Remaining too; each Reset is from the
	// time of the snapshot. OpenAI's daily limits are not among them: no
	// header reports them (providers/openai). nil when none was reported.
	// LastingPace is the pace, in units a second, at which the workloads
	// that SpreadLongWindows are admitted so that the window that binds
	// lasts to its reset, the slowest among the scope's keys; 0 when none
	// applies.
	Windows     []ratelimitheader.Window
	LastingPace float64
}

// WorkloadStats describes one workload: what its calls met, and its spend
// budget.
type WorkloadStats struct {
	Name string
	// Admitted counts the attempts admitted since the Transport was made
	// (a retry is an attempt too), at once or after waiting; Waited counts
	// those of them that waited first. Throttled counts the attempts that
	// a scope's limits refused, each with a *ThrottledError (a wait that
	// could not end in time, a full queue, a context that ended while it
	// waited), and Refused those its budget refused, each with a
	// *BudgetError. Rejected counts the answers that refused its calls for
	// the provider's limits: a 429, a 503 or a back-pressure status, or a
	// permit's Rejected.
	Admitted, Waited, Throttled, Refused, Rejected int64
	// LastRefused is when an attempt of the workload was last refused, by
	// a scope's limits or its budget; LastRefusedReason says why: the
	// *ThrottledError's Reason, or observe.ReasonBudget; LastRefusedScope
	// is the scope that refused it, "" for the budget. Zero when none was.
	LastRefused       time.Time
	LastRefusedReason observe.Reason
	LastRefusedScope  string

	Budget Budget // the configured cap; the zero Budget when there is none
	// Unit is what the budget counts: "requests", a unit such as "tokens",
	// or "usd" for a budget in money (Budget.Spend); "" when there is no
	// budget. Limit, Spent and Reserved are in it: for money, in dollars
	// (SpentMoney and ReservedMoney say them to the micro-dollar).
	Unit  string
	Limit float64
	// Spent is what this process spent of the budget in the current period,
	// in Unit: each attempt once it is
	// admitted to spend (a retry as much as a first attempt), less what was
	// given back for attempts that never reached the provider; a call
	// settled on usage counts what it was billed. Processes sharing a store
	// share the budget, but each counts only its own spend.
	Spent float64
	// Reserved is what this process's calls in flight reserved of the
	// budget and have yet to settle on usage, in Unit.
	Reserved float64
	// SpentMoney and ReservedMoney are Spent and Reserved, exact, for a
	// budget in money; zero for any other.
	SpentMoney, ReservedMoney prices.Money
	// ResetIn is how long until the current period ends, and PeriodEnd when
	// it ends; zero when no period has started or the last one is over.
	ResetIn   time.Duration
	PeriodEnd time.Time

	// SpendRate is how fast the budget is being spent, in Unit a second
	// (dollars for money): what Spent and Reserved together grew by over
	// SpendWindow, never below zero. SpendWindow is the last ten minutes,
	// from the first ten-second boundary in them (so between 9m50s and
	// 10m), or the period so far when it began later; zero, with
	// SpendRate, when no period is current.
	SpendRate   float64
	SpendWindow time.Duration
	// RunsOut is when, at SpendRate, Spent and Reserved reach Limit, and
	// RunsOutIn how long until then: now, with RunsOutIn zero, for a
	// budget spent already; zero, both, for one not spent at all over the
	// window, which does not run out at this rate. RunsOutEarly is how
	// long before PeriodEnd that comes, zero when the budget lasts the
	// period: a RunsOut after PeriodEnd is a budget to spare. A forecast
	// longer than store.LongestWait is that.
	//
	// Like Spent, these are this process's: on a store shared by a fleet,
	// its own rate against what is left by its own count. The Fleet
	// figures below are the fleet's.
	RunsOut      time.Time
	RunsOutIn    time.Duration
	RunsOutEarly time.Duration

	// FleetSpent is what the whole fleet sharing the store had spent of
	// the budget in the period, its calls in flight at their reservation,
	// in Unit, as last read from the store's ledger (Transport.FleetSpent)
	// at FleetRead. FleetSpendRate is the fleet's rate between its
	// readings over FleetSpendWindow (about the last ten minutes), and
	// FleetRunsOut when, at that rate, the fleet's spend reaches Limit
	// (FleetRead for a budget spent already; zero if it does not run out
	// at this rate). The readings are taken by WithAlerts' check of the
	// forecasts, at most once a minute and off the path of a call, on a
	// shared store that reads levels (store.LevelReader); the forecast
	// alert uses them where they span its window. Stats does no I/O for
	// them. All zero without a reading in the period.
	FleetSpent       float64
	FleetRead        time.Time
	FleetSpendRate   float64
	FleetSpendWindow time.Duration
	FleetRunsOut     time.Time
}

// Stats returns a snapshot of the Transport's scopes and workloads. It takes each scope's
// lock in turn, not all at once, so the figures of different scopes may be
// a moment apart.
//
// DefaultScope and DefaultWorkload, which every Transport has, are listed
// when an option declared them (WithLimit, WithConcurrency, WithFailFast or
// WithScope for the scope; WithWorkload for the workload), or once
// something was charged to them: a call admitted, refused, in flight or
// waiting, a 429. A Transport whose routes charge every request elsewhere
// does not list a scope it never uses.
func (t *Transport) Stats() Stats {
	now := t.clock.Now()
	var st Stats
	for _, cs := range t.scopes {
		s := cs.shared
		rate, burst := s.pace()
		sc := ScopeStats{
			Name: cs.Name, Unit: cs.Unit,
			Rate: rate, Burst: burst, Learned: s.published() != nil, Factor: s.rateFactor(), Why: s.why(now),
			Admitted:    s.admitted.Load(),
			Rejected:    cs.rejected.Load(),
			InFlightBy:  map[string]int{},
			RetryCredit: float64(cs.retryCredit.Load()) / retryUnit,
		}
		if until := s.cooldown.Load(); until > now.UnixNano() {
			sc.Cooldown = time.Duration(until - now.UnixNano())
		}
		s.describeCut(&sc, now)
		var reported []int64 // longwindow.go
		cs.eachBucket(func(b *bucket) {
			t.count(&sc, b, now)
			t.lowest(&sc, b, now)
			b.backlog(&sc, now)
			b.addLongStats(&sc, &reported, now)
		})
		cs.mu.Lock()
		sc.Keys = len(cs.keyed)
		sc.Admitted += cs.forgotten
		cs.mu.Unlock()
		if cs.implicit && sc.unused() {
			continue
		}
		st.Scopes = append(st.Scopes, sc)
	}
	slices.SortFunc(st.Scopes, func(a, b ScopeStats) int { return strings.Compare(a.Name, b.Name) })
	for _, w := range t.workloads {
		ws := w.stats(now)
		w.forecast(&ws, now)
		w.fleet.describe(&ws)
		w.counts.read(&ws)
		if w.implicit && ws.unused() {
			continue
		}
		st.Workloads = append(st.Workloads, ws)
	}
	slices.SortFunc(st.Workloads, func(a, b WorkloadStats) int { return strings.Compare(a.Name, b.Name) })
	st.Undeclared = t.undeclaredCounts()
	if t.pool != nil {
		st.Members = t.pool.memberStats(now) // pool.go
	}
	return st
}

// unused reports whether nothing was ever charged to the scope.
func (sc *ScopeStats) unused() bool {
	return sc.Admitted == 0 && sc.Rejected == 0 && sc.InFlight == 0 && sc.Waiting == 0 && sc.Keys == 0 && sc.Cooldown == 0
}

// unused reports whether nothing was ever charged to the workload.
func (ws *WorkloadStats) unused() bool {
	return ws.Admitted == 0 && ws.Throttled == 0 && ws.Refused == 0 && ws.Rejected == 0 && ws.Spent == 0 && ws.Reserved == 0
}

// workloadCounts is what a workload's calls met, for Stats: counted on the
// paths that already run, one atomic add for a call admitted at once.
type workloadCounts struct {
	admitted, waited, throttled, refused, rejected atomic.Int64
	last                                           atomic.Pointer[refusal] // nil until a call is refused
}

// refusal is the last refusal of a workload's call.
type refusal struct {
	at     time.Time
	reason observe.Reason
	scope  string
}

// refuse counts a refusal in n, one of w's counts, and keeps it as the last.
func (w *workloadCounts) refuse(n *atomic.Int64, at time.Time, reason observe.Reason, scope string) {
	n.Add(1)
	w.last.Store(&refusal{at, reason, scope})
}

// throttled counts a refusal by a scope's limits.
func (w *workloadState) throttled(at time.Time, e *ThrottledError) {
	w.counts.refuse(&w.counts.throttled, at, e.Reason, e.Scope)
}

// read sets ws's counts.
func (w *workloadCounts) read(ws *WorkloadStats) {
	ws.Admitted, ws.Waited = w.admitted.Load(), w.waited.Load()
	ws.Throttled, ws.Refused, ws.Rejected = w.throttled.Load(), w.refused.Load(), w.rejected.Load()
	if r := w.last.Load(); r != nil {
		ws.LastRefused, ws.LastRefusedReason, ws.LastRefusedScope = r.at, r.reason, r.scope
	}
}

// describeCut sets sc's caps on calls in flight, and how long until a cut
// of s is over.
func (s *bucket) describeCut(sc *ScopeStats, now time.Time) {
	sc.Concurrency, sc.ConcurrencyNow = s.scope.Concurrency, s.scope.Concurrency
	r := s.climb()
	if r == nil || now.UnixNano() >= r.Full {
		return
	}
	sc.RecoveredIn = time.Duration(r.Full - now.UnixNano())
	if sc.Concurrency > 0 {
		sc.ConcurrencyNow, _ = s.slots()
	}
}

// lowest keeps in sc the level of bucket b if it is the lowest of its
// scope's yet, when the store can tell without a round trip. Of equal
// levels it keeps the first key in order, the shared bucket's "" first.
func (t *Transport) lowest(sc *ScopeStats, b *bucket, now time.Time) {
	m, ok := t.store.(*store.Memory)
	if !ok {
		return
	}
	rate, burst := b.pace()
	if burst == 0 {
		return
	}
	l, _ := m.Level(context.Background(), now, store.Demand{Scope: b.scope.Name, Key: b.key, Rate: rate, Burst: burst})
	if !sc.TokensKnown || l < sc.Tokens || l == sc.Tokens && b.key < sc.TokensKey {
		sc.Tokens, sc.TokensKey, sc.TokensKnown = l, b.key, true
	}
}

// count adds a bucket's calls in flight and waiting, and a keyed bucket's
// admissions, to sc, and reports its slots held too long.
func (t *Transport) count(sc *ScopeStats, s *bucket, now time.Time) {
	sc.OldestSlot = max(sc.OldestSlot, t.checkSlots(s, now))
	s.mu.Lock()
	if s.key != "" {
		sc.Admitted += s.admitted.Load() // the shared bucket's is counted already
	}
	sc.InFlight += int(s.inFlight.Load())
	for _, w := range t.workloads {
		if n := int(s.inFlightBy[w.index].Load()); n > 0 {
			sc.InFlightBy[w.name] += n
		}
	}
	s.mu.Unlock()
	t.countWaits(sc, s)
}

// countWaits adds the calls waiting on bucket s to sc: how many, what holds
// them back, and the one that has waited longest, if it has waited longer
// than any other of the scope's so far.
func (t *Transport) countWaits(sc *ScopeStats, s *bucket) {
	n, reason, since, workload := s.waits()
	if n == 0 {
		return
	}
	sc.Waiting += n
	if sc.WaitingBy == nil {
		sc.WaitingBy = map[observe.Reason]int{}
	}
	sc.WaitingBy[reason] += n
	if sc.WaitingSince.IsZero() || since.Before(sc.WaitingSince) {
		sc.WaitingSince, sc.WaitingReason = since, reason
		for _, w := range t.workloads {
			if w.index == workload {
				sc.WaitingWorkload = w.name
			}
		}
	}
}
