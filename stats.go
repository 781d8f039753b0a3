package pacer

import (
	"slices"
	"strings"
	"time"

	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/usage/prices"
)

// Stats is a snapshot of a Transport, for health pages and debugging.
type Stats struct {
	Scopes    []ScopeStats    // in name order
	Workloads []WorkloadStats // in name order
	// Undeclared counts the calls whose context named a workload the
	// Transport does not declare, by that name, when a workload
	// TakesUndeclared them; nil when there were none. It holds 64 names
	// at most: the calls of further names count under "(others)".
	Undeclared map[string]int64
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
	// cap; "" for a scope that paces nothing.
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

	// Tokens is what the scope's bucket holds now, when TokensKnown: the
	// store is in this process's memory, the scope is paced by rate, and it
	// holds no keyed buckets (a level per key would be unbounded). A shared
	// store is not asked; its level would cost a round trip on every scrape.
	Tokens      float64
	TokensKnown bool

	Cooldown time.Duration // what is left of a pause the provider asked for
	Admitted int64         // calls admitted since the Transport was made, on every key

	InFlight int
	Waiting  int
	// InFlightBy counts the calls in flight by workload.
	InFlightBy map[string]int
	// RetryCredit is the number of retries the scope's budget allows now.
	RetryCredit float64
	// OldestSlot is how long the longest-held slot in flight has been
	// held, on any key, to within a second; 0 when no slot is. One older
	// than any response should take is most likely a response body that was
	// never closed: see WithSlotAgeAlert.
	OldestSlot time.Duration
}

// WorkloadStats describes one workload's spend budget.
type WorkloadStats struct {
	Name   string
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
}

// Stats returns a snapshot of the Transport's scopes and workloads. It takes each scope's
// lock in turn, not all at once, so the figures of different scopes may be
// a moment apart.
func (t *Transport) Stats() Stats {
	now := t.clock.Now()
	var st Stats
	for _, cs := range t.scopes {
		s := cs.shared
		rate, burst := s.pace()
		sc := ScopeStats{
			Name: cs.Name, Unit: cs.Unit,
			Rate: rate, Burst: burst, Learned: s.learned.Load() != nil, Factor: s.rateFactor(), Why: s.why(now),
			Admitted:    s.admitted.Load(),
			InFlightBy:  map[string]int{},
			RetryCredit: float64(cs.retryCredit.Load()) / retryUnit,
		}
		if until := s.cooldown.Load(); until > now.UnixNano() {
			sc.Cooldown = time.Duration(until - now.UnixNano())
		}
		s.describeCut(&sc, now)
		cs.eachBucket(func(b *bucket) { t.count(&sc, b, now) })
		cs.mu.Lock()
		sc.Keys = len(cs.keyed)
		sc.Admitted += cs.forgotten
		cs.mu.Unlock()
		if sc.Keys == 0 {
			sc.Tokens, sc.TokensKnown = t.tokens(cs.Name, rate, burst, now)
		}
		st.Scopes = append(st.Scopes, sc)
	}
	slices.SortFunc(st.Scopes, func(a, b ScopeStats) int { return strings.Compare(a.Name, b.Name) })
	for _, w := range t.workloads {
		st.Workloads = append(st.Workloads, w.stats(now))
	}
	slices.SortFunc(st.Workloads, func(a, b WorkloadStats) int { return strings.Compare(a.Name, b.Name) })
	st.Undeclared = t.undeclaredCounts()
	return st
}

// describeCut sets sc's caps on calls in flight, and how long until a cut
// of s is over.
func (s *bucket) describeCut(sc *ScopeStats, now time.Time) {
	sc.Concurrency, sc.ConcurrencyNow = s.scope.Concurrency, s.scope.Concurrency
	r := s.recov.Load()
	if r == nil || now.UnixNano() >= r.full {
		return
	}
	sc.RecoveredIn = time.Duration(r.full - now.UnixNano())
	if sc.Concurrency > 0 {
		sc.ConcurrencyNow, _ = s.slots()
	}
}

// tokens returns the level of a scope's shared bucket, when the store can
// tell without a round trip.
func (t *Transport) tokens(scope string, rate, burst float64, now time.Time) (float64, bool) {
	m, ok := t.store.(*store.Memory)
	if !ok || burst == 0 {
		return 0, false
	}
	return m.Level(store.Demand{Scope: scope, Rate: rate, Burst: burst}, now), true
}

// count adds a bucket's calls in flight and waiting, and a keyed bucket's
// admissions, to sc, and reports its slots held too long.
func (t *Transport) count(sc *ScopeStats, s *bucket, now time.Time) {
	sc.OldestSlot = max(sc.OldestSlot, t.checkSlots(s, now))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key != "" {
		sc.Admitted += s.admitted.Load() // the shared bucket's is counted already
	}
	sc.InFlight += int(s.inFlight.Load())
	sc.Waiting += s.queue.n
	for _, w := range t.workloads {
		if n := int(s.inFlightBy[w.index].Load()); n > 0 {
			sc.InFlightBy[w.name] += n
		}
	}
}
