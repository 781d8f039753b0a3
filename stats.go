package pacer

import (
	"slices"
	"time"
)

// Stats is a snapshot of a Transport, for health pages and debugging.
type Stats struct {
	Scopes []ScopeStats // in name order
}

// ScopeStats describes one scope: its shared bucket's pace, and the calls
// in flight and waiting across all its keys.
type ScopeStats struct {
	Name string
	Unit string
	Keys int // keyed buckets this process holds; 0 for a scope without keys

	Rate    float64 // the pace now, in units a second, after learning and AIMD
	Burst   float64
	Learned bool    // the pace comes from a limit the provider published
	Factor  float64 // the AIMD share of the rate in use, 1 when not cut

	Cooldown time.Duration // what is left of a pause the provider asked for
	Admitted int64         // calls admitted since the Transport was made

	InFlight int
	Waiting  int
	// InFlightBy counts the calls in flight by workload.
	InFlightBy map[string]int
	// RetryCredit is the number of retries the scope's budget allows now.
	RetryCredit float64
}

// Stats returns a snapshot of the Transport's scopes. It takes each scope's
// lock in turn, not all at once, so the figures of different scopes may be
// a moment apart.
func (t *Transport) Stats() Stats {
	now := t.clock.Now()
	var st Stats
	for _, class := range t.scopes {
		s := class.shared
		rate, burst := s.pace()
		sc := ScopeStats{
			Name: class.Name, Unit: class.Unit,
			Rate: rate, Burst: burst, Learned: s.learned.Load() != nil, Factor: s.rateFactor(),
			Admitted:    s.admitted.Load(),
			InFlightBy:  map[string]int{},
			RetryCredit: float64(class.retryCredit.Load()) / retryUnit,
		}
		if until := s.cooldown.Load(); until > now.UnixNano() {
			sc.Cooldown = time.Duration(until - now.UnixNano())
		}
		t.count(&sc, s)
		class.mu.Lock()
		sc.Keys = len(class.keyed)
		keyed := make([]*scopeState, 0, len(class.keyed))
		for _, ks := range class.keyed {
			keyed = append(keyed, ks)
		}
		class.mu.Unlock()
		for _, ks := range keyed {
			t.count(&sc, ks)
		}
		st.Scopes = append(st.Scopes, sc)
	}
	slices.SortFunc(st.Scopes, func(a, b ScopeStats) int {
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	return st
}

// count adds a bucket's calls in flight and waiting to sc.
func (t *Transport) count(sc *ScopeStats, s *scopeState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc.InFlight += s.inFlight
	sc.Waiting += len(s.queue)
	for _, w := range t.workloads {
		if n := s.inFlightBy[w.index]; n > 0 {
			sc.InFlightBy[w.name] += n
		}
	}
}
