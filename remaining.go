package pacer

import (
	"time"

	"github.com/pacer-go/pacer/internal/pace"
)

// reportRemaining takes a provider's report that what remains is c, and
// sets the pace that spends it (pace.Record.Count reckons it). It returns
// the verdict — what is left now by the report's reading, and the new pace
// — and whether pacing by what remains has just begun.
func (s *bucket) reportRemaining(now time.Time, c pace.Count, maxWait time.Duration) (v pace.Verdict, began bool) {
	if c.Reset < 0 || c.Remaining < 0 {
		return v, false
	}
	at := now.UnixNano()
	m, cfg, lim := s.modelAt(at), s.configured(), s.scope.configured.Load().limit
	sc := pace.Scope{
		Blind:          m.Blind(cfg),
		Configured:     cfg.Rate,
		Unreported:     m.Unreported(cfg),
		Floor:          s.floorRate(maxWait),
		Burst:          cfg.Burst,
		Per:            lim.Per,
		Quota:          int64(lim.Count),
		BlindWithin:    s.blindWithin(c.Limit),
		CountsRequests: s.scope.countsRequests,
		MaxWait:        maxWait,
		CostlyRefusals: at < s.costlyUntil.Load(),
	}
	s.mu.Lock()
	sc.Spent = s.spentNow(c.Fleet)
	v = s.reports.Count(now, c, sc)
	s.mu.Unlock()
	if v.None {
		s.setLive(pace.LivePace{})
	}
	if !v.Paced {
		return v, false
	}
	// At the limit itself (pace.Model.Base) unless the configured limit
	// is below the published one — a limit set low on purpose keeps its
	// headroom — or the measure of what comes back is young.
	edge := !v.Young
	if cl := s.scope.configured.Load(); cl.Rate > 0 && s.published() == nil && c.Limit > int64(cl.limit.Count) {
		edge = false
	}
	live := pace.LivePace{Rate: v.Rate, Until: now.Add(v.Hold).UnixNano(), Edge: edge, Roomless: v.Roomless, WakeAtMost: v.WakeAtMost, Holds: v.Holds, Why: v.Why,
		WakeOne: (sc.CostlyRefusals || v.WakeOne) && s.scope.countsRequests}
	if live.WakeOne {
		// Run out with no count since, the report goes on waking one call
		// at a time for as long again (pace.LivePace.Then).
		live.Then = now.Add(2 * v.Hold).UnixNano()
	}
	old := s.setLive(live)
	if old.Until != 0 && v.Rate > old.Rate {
		// The head of the queue sleeps on the wait the old pace gave it.
		s.paceRose()
	}
	if v.Roomless && !old.Roomless {
		// The calls admitted before the room was known went out at a
		// burst the server cannot hold: their refusals say nothing of
		// its rate, and must not cut it (the first second of a bucket of
		// one, at the default burst of 10, drew nine).
		s.mu.Lock()
		s.cuts.Mark(s.admitted.Load())
		s.mu.Unlock()
	}
	return v, old.Until <= at
}

// noteRefused remembers that the provider refused, at now, a call of cost
// admitted at mark (pace.Count.Mark) and sent at sent (UnixNano).
func (s *bucket) noteRefused(now time.Time, mark, cost, sent int64) {
	s.mu.Lock()
	s.reports.Refused(now, mark, cost, sent)
	s.mu.Unlock()
}

// sinceMark is what was spent since mark, a call's spent units at its
// admission (pace.SpentSince): the scope's own, or, when fleet is set,
// what the whole fleet took from the shared bucket as the latest take said.
func (s *bucket) sinceMark(mark int64, fleet bool) int64 {
	return pace.SpentSince(mark, s.spentNow(fleet), fleet)
}

// spentNow is the scope's spent units now, or, when fleet is set, the
// whole fleet's as the latest take said.
func (s *bucket) spentNow(fleet bool) int64 {
	if fleet {
		return s.taken.Load()
	}
	return s.spent.Load()
}

// blindWithin reports whether the scope's blind pace is within limit, the
// count the provider publishes (-1 if none): the pace is the published
// limit's, or a configured limit that counts no more per window. A
// configured limit counts in its own window, which the provider's count
// does not state; a count that matches is taken as the same limit.
func (s *bucket) blindWithin(limit int64) bool {
	if s.published() != nil {
		return true
	}
	cfg := s.scope.configured.Load()
	return cfg.Rate > 0 && limit >= int64(cfg.limit.Count)
}

// floorRate is the pace of one call every every (for a scope counted in
// another unit, a full bucket). Every the maximum wait, it is the least
// pace a report or a cut leaves a scope, so that no response stops a scope
// for longer.
func (s *bucket) floorRate(every time.Duration) float64 {
	units := 1.0
	if !s.scope.countsRequests {
		_, units = s.basePace(s.scope.clock.Now().UnixNano())
	}
	return units / every.Seconds()
}

// learnWindow learns the window of a limit published without one, from
// successive resets (pace.Record.LearnWindow).
func (s *bucket) learnWindow(resetAt time.Time, whole bool) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reports.LearnWindow(resetAt, whole)
}

// windowHint takes a provider's Retry-After as the window of a limit
// published without one (pace.Record.WindowHint).
func (s *bucket) windowHint(wait time.Duration) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reports.WindowHint(wait)
}
