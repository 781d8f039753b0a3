package pacer

import (
	"time"

	"github.com/pacer-go/pacer/internal/pace"
)

// A rejection that teaches nothing else cuts a scope's pace to what the
// server was measured to accept, and the pace climbs back by time on a
// curve (pace.Cuts, pace.Curve: the rules, and the server property each
// relies on). This file keeps the bucket's side: the count of accepted
// calls, the climb in use, read on the hot path without a lock, and the
// cuts' record under the bucket's lock.

// succeeded counts a call the provider accepted: one atomic add, and every
// pace.AcceptanceStep calls a point of the history a cut measures on.
func (s *bucket) succeeded() {
	if n := s.accepted.Add(1); n%pace.AcceptanceStep == 0 {
		now := s.scope.clock.Now().UnixNano()
		rate, _ := s.pace()
		s.mu.Lock()
		s.cuts.Accepted(now, n, s.admitted.Load(), rate)
		s.mu.Unlock()
	}
}

// cut lowers the scope's pace after a rejection that taught nothing else,
// for a call admitted when the admitted count was admittedAt. retryAfter
// is the rejection's Retry-After, 0 if it has none; shared says the
// scope's bucket is shared with other processes (a shared store). It
// returns whether the rejection cut the pace, and whether it pauses the
// scope (pace.Cuts.Refused). overruled says no count explained the
// rejection: the climb then paces the scope below its counts too
// (pace.Curve.Overruled).
func (s *bucket) cut(admittedAt int64, now time.Time, retryAfter, maxWait time.Duration, shared, overruled bool) (cut, pauses bool) {
	base, burst := s.basePace(now.UnixNano())
	r := pace.Refusal{
		AdmittedAt: admittedAt,
		RetryAfter: retryAfter,
		Shared:     shared,
		Base:       base,
		Burst:      burst,
		WaitFloor:  s.floorRate(maxWait),
		ProbeFloor: s.floorRate(pace.ProbeEvery),
		PausedFrom: s.pausedFrom.Load(),
		PausedTo:   s.pausedTo.Load(),
		Overruled:  overruled,
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r.Admitted, r.Accepted, r.Curve = s.admitted.Load(), s.accepted.Load(), s.climb()
	v := s.cuts.Refused(now, r)
	if v.Curve != nil {
		s.setClimb(v.Curve)
	}
	return v.Curve != nil, v.Pauses
}

// adopt makes r, a cut another instance of the fleet took and published,
// this bucket's climb back, so that the fleet climbs back together, and
// reports whether it did (pace.Cuts.Adopt).
func (s *bucket) adopt(r *pace.Curve, now time.Time, maxWait time.Duration) bool {
	base, burst := s.basePace(now.UnixNano())
	floor := s.floorRate(maxWait)
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.cuts.Adopt(now, r, s.climb(), s.admitted.Load(), base, burst, floor)
	if !ok {
		return false
	}
	s.setClimb(r)
	return true
}
