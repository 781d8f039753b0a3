package pacer

import (
	"sync/atomic"
	"time"

	"github.com/pacer-go/pacer/internal/pace"
)

// A bucket paces by one pace.Model: the configured limit, and what the
// provider's answers taught of its capacity (a published limit, live
// counts, a cut and its climb back). The hot path reads it without a lock;
// the learn step (learn.go, remaining.go, recovery.go, slots.go) replaces
// it whole. This file keeps the bucket's side of it.

// configured returns what the scope's configuration says of its pace.
func (s *bucket) configured() pace.Configured {
	return s.scope.configured.Load().Configured
}

// steadyPace is pace's common case, small enough to be inlined where every
// call asks: nothing learned, so the configured pace. ok is false
// otherwise; ask pace.
func (s *bucket) steadyPace() (rate, burst float64, ok bool) {
	if s.model.Load() != nil {
		return 0, 0, false
	}
	rate, burst = s.scope.configuredPace()
	return rate, burst, true
}

// pace returns the bucket's pace now (pace.Model.Pace). Without a live
// count or a cut it reads no clock.
func (s *bucket) pace() (rate, burst float64) {
	m := s.model.Load()
	if m == nil || m.Live.Until == 0 && m.Live.Then == 0 && m.Climb == nil {
		return m.Base(0, s.configured())
	}
	now := s.scope.clock.Now().UnixNano()
	return s.modelAt(now).Pace(now, s.configured())
}

// modelAt returns the bucket's model at now, without what has run out by
// then (pace.Model.Tidy); a climb that ended is reported once
// (reportRecovered).
func (s *bucket) modelAt(now int64) *pace.Model {
	m := s.model.Load()
	t, climbed := m.Tidy(now)
	if t != m && s.model.CompareAndSwap(m, t) && climbed {
		s.recovered.Store(true)
	}
	return t
}

// basePace returns the bucket's pace at now before any cut
// (pace.Model.Base).
func (s *bucket) basePace(now int64) (rate, burst float64) {
	return s.modelAt(now).Base(now, s.configured())
}

// setLive makes l the pace live counts allow (the zero LivePace: none),
// and returns the one it replaces.
func (s *bucket) setLive(l pace.LivePace) (old pace.LivePace) {
	prev, _ := s.amend(func(m pace.Model) (pace.Model, bool) {
		if m.Live == l {
			return m, false
		}
		m.Live = l
		return m, true
	})
	if prev != nil {
		old = prev.Live
	}
	return old
}

// raiseTo sets a to v, unless it holds a later time already.
func raiseTo(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if old >= v || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// amend replaces the bucket's model with what change makes of it, if it
// reports a change, and returns the model it replaced. change may run more
// than once, when another goroutine amends the model meanwhile: it must
// only compute.
func (s *bucket) amend(change func(m pace.Model) (pace.Model, bool)) (old *pace.Model, changed bool) {
	for {
		old = s.model.Load()
		var m pace.Model
		if old != nil {
			m = *old
		}
		m, changed = change(m)
		if !changed {
			return old, false
		}
		var next *pace.Model
		if !m.Empty() {
			next = new(pace.Model)
			*next = m
		}
		if s.model.CompareAndSwap(old, next) {
			return old, true
		}
	}
}

// published returns the limit the provider published, nil if none.
func (s *bucket) published() *pace.Capacity {
	if m := s.model.Load(); m != nil {
		return m.Published
	}
	return nil
}

// forgetPublished forgets the limit the provider published, if it is
// still p (any, if p is nil), and reports whether it did.
func (s *bucket) forgetPublished(p *pace.Capacity) bool {
	_, forgot := s.amend(func(m pace.Model) (pace.Model, bool) {
		if m.Published == nil || p != nil && m.Published != p {
			return m, false
		}
		m.Published = nil
		return m, true
	})
	return forgot
}

// climb returns the climb back after a cut, nil at the full pace.
func (s *bucket) climb() *pace.Curve {
	if m := s.model.Load(); m != nil {
		return m.Climb
	}
	return nil
}

// setClimb makes r the scope's climb back after a cut.
func (s *bucket) setClimb(r *pace.Curve) {
	s.amend(func(m pace.Model) (pace.Model, bool) {
		m.Climb = r
		return m, true
	})
	s.recovered.Store(false)
}

// rateFactor returns the share of the scope's pace in use now: below 1
// while the scope recovers from a cut.
func (s *bucket) rateFactor() float64 {
	if s.climb() == nil {
		return 1
	}
	now := s.scope.clock.Now().UnixNano()
	return s.modelAt(now).Factor(now)
}

// why says what sets the scope's pace now, for Stats, and what pauses it
// first, if anything does: a Rate with "the configured limit" beside it
// read as a scope sending while a pause held it for a minute.
func (s *bucket) why(now time.Time) string {
	cfg := s.configured()
	rate := s.model.Load().Why(now.UnixNano(), cfg, cfg.Rate == 0 && s.scope.Concurrency > 0)
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
