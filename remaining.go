package pacer

import (
	"math"
	"time"

	"github.com/pacer-go/pacer/internal/pace"
)

// toldHeadroom is the share of a limit pacer aims at while the provider
// reports live remaining counts. The configured headroom is for flying
// blind; with the provider saying what is left, the remaining count is the
// guard, and the margin it keeps (pace.Margin) is the headroom.
const toldHeadroom = 0.98

// toldPace is what a provider's live remaining count allows: the scope may
// send its remaining calls before the reset, spread over the time to it,
// plus what the provider adds back meanwhile. Immutable; each report
// stores a new one.
type toldPace struct {
	rate  float64 // units a second
	until int64   // UnixNano when the report stops applying
	// edge says the report is about the limit the scope paces by, so that
	// it may aim at toldHeadroom of it. It is not when the scope's
	// configured limit is below the published one: a limit set low on
	// purpose keeps its headroom.
	edge bool
	// room is, for a count with no room for its margin (roomless), the
	// most calls it has shown it holds at once; else 0. A burst beyond it
	// is refused whatever the pace: a server bucket of one refuses the
	// second of two calls sent together.
	room float64
	// roomless says the count has no room for its margin, and set no pace
	// (reportRemaining): a cut applies, as to a scope without counts.
	roomless bool
	// why is the reading of the count that set rate (pace.Verdict.Why),
	// for Stats.
	why string
}

// basePace returns the scope's pace before any cut: the configured or
// published limit at the Transport's headroom, or — while the provider
// reports live remaining counts — at toldHeadroom, and no faster than
// the remaining count allows.
func (s *bucket) basePace(now time.Time) (rate, burst float64) {
	cfg := s.scope.configured.Load()
	rate, burst = cfg.rate, cfg.burst
	raw, edgeBurst := cfg.raw, cfg.edgeBurst
	if p := s.learned.Load(); p != nil {
		rate, burst, raw, edgeBurst = p.rate, p.burst, p.raw, p.edgeBurst
	}
	if tp := s.told.Load(); tp != nil && rate > 0 {
		if now.UnixNano() < tp.until {
			if p := s.learned.Load(); p != nil && s.countsOutrank(p, cfg) {
				// A published figure below the configured limit is a
				// reading of the headers; live counts are what the server
				// does. While they come, they pace the scope up to the
				// configured limit: a token bucket that publishes its
				// capacity (11) with the seconds until it is full (1)
				// reads as 11 a second while it accepts 100. A
				// provisional limit is only a stand-in for the published
				// one (a preset's placeholder may be no limit at all).
				rate, burst, raw, edgeBurst = cfg.rate, cfg.burst, cfg.raw, cfg.edgeBurst
			}
			if tp.edge && edgeBurst > 0 && raw*toldHeadroom > rate {
				// In any window, the burst and what refills add up to
				// the limit, as Limit's doc says of the blind headroom.
				rate, burst = raw*toldHeadroom, edgeBurst
			}
			if tp.room > 0 {
				burst = min(burst, tp.room)
			}
			// A call that waits at the reported pace wakes by the time the
			// report runs out, to pace itself anew: nothing else wakes it
			// when no call is in flight.
			rate = min(rate, max(tp.rate, burst*1e9/float64(tp.until-now.UnixNano())))
		} else {
			s.told.CompareAndSwap(tp, nil)
		}
	}
	return rate, burst
}

// countsOutrank reports whether live remaining counts pace the scope above
// p, a published limit below cfg, the configured one (basePace): not for
// a provisional scope, whose published limit replaces its stand-in.
func (s *bucket) countsOutrank(p *learnedLimit, cfg *configuredLimit) bool {
	return cfg.rate > p.rate && !s.scope.Provisional
}

// steadyPace is pace's common case, small enough to be inlined where every
// call asks: nothing told, nothing cut, nothing published, so the
// configured pace. ok is false otherwise; ask pace.
func (s *bucket) steadyPace() (rate, burst float64, ok bool) {
	if s.told.Load() != nil || s.recov.Load() != nil || s.learned.Load() != nil {
		return 0, 0, false
	}
	rate, burst = s.scope.configuredPace()
	return rate, burst, true
}

// unreportedPace is the rate basePace gives the scope without a report of
// what remains: the configured limit's, or the published one's where that
// is lower and the counts do not outrank it.
func (s *bucket) unreportedPace() float64 {
	cfg := s.scope.configured.Load()
	if p := s.learned.Load(); p != nil && !(cfg.rate > 0 && s.countsOutrank(p, cfg)) {
		return p.rate
	}
	return cfg.rate
}

// blindRate is the scope's rate from its configured or published limit
// alone: the pace it returns to once a report of what remains has run out.
func (s *bucket) blindRate() float64 {
	if p := s.learned.Load(); p != nil {
		return p.rate
	}
	rate, _ := s.scope.configuredPace()
	return rate
}

// pace returns the bucket's current pace: basePace, times the share
// a cut left (recovery.go) unless a live remaining count sets it. The common case — nothing learned, nothing
// cut — reads two pointers and no clock.
func (s *bucket) pace() (rate, burst float64) {
	if s.told.Load() == nil && s.recov.Load() == nil {
		rate, burst = s.scope.configuredPace()
		if p := s.learned.Load(); p != nil {
			rate, burst = p.rate, p.burst
		}
		return rate, burst
	}
	now := s.scope.clock.Now()
	rate, burst = s.basePace(now)
	if r := s.recov.Load(); r != nil {
		f := s.factorOf(r, now.UnixNano())
		if tp := s.told.Load(); tp == nil || now.UnixNano() >= tp.until || tp.roomless {
			// A live remaining count paces by what it says; a cut is
			// for the pace without one.
			rate *= f
		}
	}
	return rate, burst
}

// reportRemaining takes a provider's report that what remains is c, and
// sets the pace that spends it (pace.Record.Count reckons it). It returns
// the verdict — what is left now by the report's reading, and the new pace
// — and whether pacing by what remains has just begun.
func (s *bucket) reportRemaining(now time.Time, c pace.Count, maxWait time.Duration) (v pace.Verdict, began bool) {
	if c.Reset < 0 || c.Remaining < 0 {
		return v, false
	}
	sc := pace.Scope{
		Blind:          s.blindRate(),
		Configured:     s.scope.configured.Load().rate,
		Unreported:     s.unreportedPace(),
		Floor:          s.floorRate(maxWait),
		Per:            s.scope.configured.Load().limit.Per,
		BlindWithin:    s.blindWithin(c.Limit),
		CountsRequests: s.scope.countsRequests,
		MaxWait:        maxWait,
		CostlyRefusals: s.costlyRefusals.Load(),
	}
	s.mu.Lock()
	sc.Spent = s.spentNow(c.Fleet)
	v = s.reports.Count(now, c, sc)
	s.mu.Unlock()
	if v.None {
		s.told.Store(nil)
	}
	if !v.Paced {
		return v, false
	}
	// At the edge of the limit (toldHeadroom) unless the configured limit
	// is below the published one — a limit set low on purpose keeps its
	// headroom — or the measure of what comes back is young.
	edge := !v.Young
	if cfg := s.scope.configured.Load(); cfg.rate > 0 && s.learned.Load() == nil && c.Limit > int64(cfg.limit.Count) {
		edge = false
	}
	tp := &toldPace{rate: v.Rate, until: now.Add(v.Hold).UnixNano(), edge: edge, roomless: v.Roomless, room: v.Room, why: v.Why}
	old := s.told.Swap(tp)
	if old != nil && v.Rate > old.rate {
		// The head of the queue sleeps on the wait the old pace gave it.
		s.paceRose()
	}
	if v.Roomless && (old == nil || !old.roomless) {
		// The calls admitted before the room was known went out at a
		// burst the server cannot hold: their refusals say nothing of
		// its rate, and must not cut it (the first second of a bucket of
		// one, at the default burst of 10, drew nine).
		s.mu.Lock()
		s.cuts.Mark(s.admitted.Load())
		s.mu.Unlock()
	}
	return v, old == nil || old.until <= now.UnixNano()
}

// noteRefused remembers that the provider refused, at now, a call of cost
// admitted at mark (pace.Count.Mark).
func (s *bucket) noteRefused(now time.Time, mark, cost int64) {
	s.mu.Lock()
	s.reports.Refused(now, mark, cost)
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
	if s.learned.Load() != nil {
		return true
	}
	cfg := s.scope.configured.Load()
	return cfg.rate > 0 && limit >= int64(cfg.limit.Count)
}

// floorRate is the pace of one call every every (for a scope counted in
// another unit, a full bucket). Every the maximum wait, it is the least
// pace a report or a cut leaves a scope, so that no response stops a scope
// for longer.
func (s *bucket) floorRate(every time.Duration) float64 {
	units := 1.0
	if !s.scope.countsRequests {
		_, units = s.basePace(s.scope.clock.Now())
	}
	return units / every.Seconds()
}

// edgeBurst is the burst a scope counted in requests keeps while it aims at
// toldHeadroom of a limit of count per window: (1 − toldHeadroom) × count,
// at least one, and no more than burst. A scope counted in another unit
// keeps its burst, which must hold its largest request, and its headroom:
// 0.
func edgeBurst(countsRequests bool, count, burst float64) float64 {
	if !countsRequests || count <= 0 {
		return 0
	}
	return min(burst, max(1, math.Floor((1-toldHeadroom)*count+1e-9)))
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

// why says what sets the scope's pace now, for Stats, and what pauses it
// first, if anything does: a Rate with "the configured limit" beside it
// read as a scope sending while a pause held it for a minute.
func (s *bucket) why(now time.Time) string {
	rate := s.rateWhy(now)
	if s.cooldown.Load() > now.UnixNano() {
		if w := s.pauseWhy.Load(); w != nil {
			if rate == "" {
				return *w
			}
			return *w + "; then " + rate
		}
	}
	return rate
}

// rateWhy says what sets the scope's pace now (why).
func (s *bucket) rateWhy(now time.Time) string {
	if r := s.recov.Load(); r != nil && now.UnixNano() < r.Full {
		if rate, _ := s.scope.configuredPace(); rate == 0 && s.scope.Concurrency > 0 {
			return "a refusal lowered the cap on calls in flight; it climbs back by time"
		}
		return "recovering from a refusal"
	}
	if tp := s.told.Load(); tp != nil && now.UnixNano() < tp.until {
		if tp.why != "" {
			return "what the provider reports remains: " + tp.why
		}
		return "what the provider reports remains"
	}
	if s.learned.Load() != nil {
		return "the provider's published limit"
	}
	if rate, _ := s.scope.configuredPace(); rate > 0 {
		return "the configured limit"
	}
	return ""
}
