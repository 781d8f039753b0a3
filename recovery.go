package pacer

import (
	"sync/atomic"
	"time"

	"github.com/pacer-go/pacer/internal/pace"
)

// What a rejection that teaches nothing else does to a scope's pace.
//
// A 429 is a measurement: the server refused the calls above its capacity
// and accepted the rest, so what it accepted over the last window is its
// capacity, near enough. The pace jumps there, less capacityHeadroom, in
// one step instead of in many geometric ones. When the scope has too little
// history to measure (its first calls were refused), it halves instead.
//
// The pace then climbs back by time, not by successes, on a cubic curve
// like TCP CUBIC's: quickly at first, flat near the level the server last
// refused, then faster again beyond it. So probing the old ceiling again is
// rare, and a scope cut to the floor by an incident is back at its full
// pace after a bounded time, however many cuts the incident made. How long
// the curve takes is priced by what a rejection costs: a bare 429 loses
// one call (cheapRecovery), a 429 that paused the whole scope (Retry-After)
// loses every caller's time (costlyRecovery).
const (
	capacityHeadroom = 0.95
	costlyHeadroom   = 0.9
	shortHistoryCut  = 0.5
	minFactor        = pace.MinFactor

	// From the floor back to the full pace after a cut, when nothing is
	// refused on the way.
	cheapRecovery  = 40 * time.Second
	costlyRecovery = 120 * time.Second

	// A scope that refusals have cut to its floor still sends a call
	// about every probeEvery, if that is at most probeShare of its pace: a
	// bare 429 costs one call.
	probeEvery = time.Second
	probeShare = 0.05

	// briefRetryAfter is the longest Retry-After that, on a rejection
	// whose cut measured the server's capacity, pauses only the call it
	// answers, not the scope: a second is a per-second limiter's stock
	// answer (nginx's, httprate's), and the measured pace already keeps
	// the other callers under the capacity. A longer one is a request to
	// stop, and stops the scope.
	briefRetryAfter = time.Second
)

// rateFactor returns the share of the scope's pace in use now: below 1
// while the scope recovers from a cut.
func (s *bucket) rateFactor() float64 {
	r := s.recov.Load()
	if r == nil {
		return 1
	}
	return s.factorOf(r, s.scope.clock.Now().UnixNano())
}

// factorOf returns r's factor at now, and forgets r once it is back at 1.
func (s *bucket) factorOf(r *pace.Curve, now int64) float64 {
	if now >= r.Full {
		if s.recov.CompareAndSwap(r, nil) {
			s.recovered.Store(true)
		}
		return 1
	}
	return r.Factor(now)
}

// acceptance keeps a few points of the scope's count of accepted calls, so
// that a rejection can tell how many the server accepted over the last
// window. A point is taken every acceptanceStep successes, not every call:
// the history spans acceptancePoints × acceptanceStep calls, whatever the
// rate, and a success costs one atomic add.
const (
	acceptanceStep   = 8
	acceptancePoints = 32
)

type acceptancePoint struct {
	at      int64   // UnixNano
	n       int64   // accepted calls then
	refused int64   // refused calls then
	pace    float64 // the scope's pace then, in units a second
}

type acceptance struct {
	ok      atomic.Int64 // calls the provider accepted
	refused int64        // calls the provider refused, that a cut answered; under the bucket's mu
	points  [acceptancePoints]acceptancePoint
	next    int
}

// succeeded counts a call the provider accepted.
func (s *bucket) succeeded() {
	if n := s.accepted.ok.Add(1); n%acceptanceStep == 0 {
		now := s.scope.clock.Now().UnixNano()
		pace, _ := s.pace()
		s.mu.Lock()
		s.accepted.points[s.accepted.next%acceptancePoints] = acceptancePoint{now, n, s.accepted.refused, pace}
		s.accepted.next++
		s.mu.Unlock()
	}
}

// acceptedRate returns how many calls a second the provider accepted over
// about the last window before now, and false when the scope has less than
// half a window of history. Under s.mu.
func (s *bucket) acceptedRate(now time.Time, window time.Duration) (float64, bool) {
	p, span, ok := s.measuredFrom(now, window)
	if !ok {
		return 0, false
	}
	// The scope sent nothing while it paused itself for a Retry-After: the
	// server's silence then says nothing of what it accepts, and counted,
	// a measure taken soon after a pause read the pause as a scarcity (a
	// leaky bucket beside a neighbour, cut after a one-second pause, was
	// held at 0.6 of its share for good).
	if paused := s.pausedWithin(now, span); paused > 0 {
		if span -= paused; span < window/2 {
			return 0, false
		}
	}
	return float64(s.accepted.ok.Load()-p.n) / span.Seconds(), true
}

// pausedWithin is how much of the span before now the latest pause took.
func (s *bucket) pausedWithin(now time.Time, span time.Duration) time.Duration {
	from, to := s.pausedFrom.Load(), min(s.pausedTo.Load(), now.UnixNano())
	from = max(from, now.UnixNano()-int64(span))
	return time.Duration(max(0, to-from))
}

// minShareSample is the fewest answered calls a shared scope measures the
// share the server accepted on: on fewer, one refusal among a process's
// few calls in a window (its fleet took the rest) read as a share of
// nothing, and cut the whole fleet to the floor.
const minShareSample = 16

// sharedCapacity returns what the server was measured to accept, in units
// a second, for a scope whose bucket other processes share: the share of
// this process's answered calls it accepted since about a window before
// now (further back, if that holds fewer than minShareSample calls), times
// the pace they were sent at, on average over that span — not the pace
// now, which a cut since may have lowered already. false when the scope
// has too little history. Under s.mu.
func (s *bucket) sharedCapacity(now time.Time, window time.Duration) (float64, bool) {
	a := &s.accepted
	from := now.UnixNano() - int64(window)
	ok, refused := a.ok.Load(), a.refused
	count := min(a.next, acceptancePoints)
	// Walk back from the newest point, adding up the pace over time.
	var paced float64 // units the pace allowed from the point to now
	end := now.UnixNano()
	for i := 1; i <= count; i++ {
		p := a.points[(a.next-i)%acceptancePoints]
		if p.at > end {
			continue // recorded out of order by a concurrent success
		}
		paced += p.pace * float64(end-p.at) / 1e9
		end = p.at
		answered := float64(ok - p.n + refused - p.refused)
		if p.at > from || answered < minShareSample {
			continue
		}
		span := float64(now.UnixNano()-p.at) / 1e9
		return float64(ok-p.n) / answered * paced / span, true
	}
	return 0, false
}

// measuredFrom returns the point a measure over about the last window
// before now starts from, and its span; false when the scope has less than
// half a window of history. Under s.mu.
func (s *bucket) measuredFrom(now time.Time, window time.Duration) (acceptancePoint, time.Duration, bool) {
	from := now.UnixNano() - int64(window)
	var newestOld, oldest acceptancePoint
	for i := range min(s.accepted.next, acceptancePoints) {
		p := s.accepted.points[i]
		if p.at <= from && p.at > newestOld.at {
			newestOld = p
		}
		if oldest.at == 0 || p.at < oldest.at {
			oldest = p
		}
	}
	best := newestOld
	if best.at == 0 {
		best = oldest
	}
	if best.at == 0 {
		return best, 0, false
	}
	span := time.Duration(now.UnixNano() - best.at)
	if span < window/2 || span <= 0 {
		return best, 0, false
	}
	return best, span, true
}

// measuringWindow is the window a rejection measures the accepted rate
// over: long enough to hold twenty calls at the scope's base pace, and
// between a second and a minute.
func measuringWindow(base float64) time.Duration {
	w := time.Second
	if base > 0 {
		w = time.Duration(20 / base * float64(time.Second))
	}
	return min(max(w, time.Second), time.Minute)
}

// A cutResult is what a rejection did to a scope's pace (bucket.cut).
type cutResult struct {
	// cut is false when the rejection was old news: a call sent before the
	// last cut, or within a measuring window of it, saw the pace the cut
	// already answered.
	cut    bool
	pauses bool // the rejection pauses the scope
}

// cut lowers the scope's pace after a rejection that taught nothing else,
// for a call admitted when the admitted count was admittedAt. retryAfter
// is the rejection's Retry-After, 0 if it has none. It returns whether
// the rejection cut the pace, and whether it pauses the scope.
//
// A Retry-After pauses the scope, and the climb back is priced as costly,
// unless it is brief (briefRetryAfter) and the scope's pace is a measured
// capacity: this cut's measurement, or for old news, the last cut's. Then
// only the call it answers waits it out (a retry never goes sooner), and
// the other callers go on at the measured pace from an empty bucket.
//
// shared says the scope's bucket is shared with other processes (a shared
// store): what this process saw accepted is then only its part of what the
// server accepted, about 1/N of it in a fleet of N, and as a capacity it
// would cut the pace N times too deep — and the cut pace, carried by this
// process's demands, would slow the whole fleet's bucket. So a shared
// scope measures the share of its answered calls the server accepted over
// the window, times the pace the fleet sent them at: the bucket's
// (sharedCapacity).
func (s *bucket) cut(admittedAt int64, now time.Time, retryAfter, maxWait time.Duration, shared bool) cutResult {
	base, burst := s.basePace(now)
	window := measuringWindow(base)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.accepted.refused++
	if admittedAt <= s.cutAt || now.UnixNano() < s.quietUntil {
		// A call sent before the cut was answered by it; one sent after,
		// within the window, says the measure was too high: that pauses.
		r := s.recov.Load()
		brief := admittedAt <= s.cutAt && r != nil && r.Measured && retryAfter <= briefRetryAfter
		return cutResult{pauses: retryAfter > 0 && !brief}
	}
	s.cutAt = s.admitted.Load()
	s.quietUntil = now.Add(window).UnixNano()
	cur := 1.0
	if r := s.recov.Load(); r != nil {
		cur = r.Factor(now.UnixNano())
	}
	floor := minFactor
	if base > 0 && burst > 0 {
		// However low the pace is cut, the scope always probes again
		// within the maximum wait.
		floor = max(floor, min(1, s.floorRate(maxWait)/base))
		// And, where that is a small part of its pace, about once every
		// probeEvery: in an outage nothing is accepted, each cut finds no
		// capacity, and from the least factor the climb takes seconds to
		// send its first call — which was how long a healed provider
		// waited after the outage (7 s of a 100/s scope's).
		floor = max(floor, min(probeShare, s.floorRate(probeEvery)/base))
	}
	var accepted float64
	var measured bool
	if shared {
		accepted, measured = s.sharedCapacity(now, window)
	} else {
		accepted, measured = s.acceptedRate(now, window)
	}
	measured = measured && base > 0
	costly := retryAfter > 0 && (!measured || retryAfter > briefRetryAfter)
	var wmax, f0 float64
	switch {
	case measured:
		wmax = min(cur, accepted/base)
		f0 = wmax * capacityHeadroom
		if retryAfter > 0 {
			// The measure may hold a burst the server let through after
			// the last pause, and the next refusal costs another pause, or
			// at least a call that waits out its Retry-After.
			f0 = wmax * costlyHeadroom
		}
	default:
		wmax, f0 = cur, cur*shortHistoryCut
	}
	f0 = max(f0, floor)
	wmax = max(wmax, f0)
	over := cheapRecovery
	if costly {
		over = costlyRecovery
	}
	r := pace.NewCurve(now, wmax, f0, over, measured)
	s.recov.Store(r)
	s.recovered.Store(false)
	return cutResult{cut: true, pauses: costly}
}

// maxRecordedRecovery bounds the climb a pace record may ask for: a record
// written by a later version, or by something else, never holds a scope
// down for longer.
const maxRecordedRecovery = 10 * costlyRecovery

// adopt makes r, a cut another instance of the fleet took and published,
// this bucket's climb back, so that the fleet climbs back together, and
// reports whether it did: not when r is over, nor over a cut taken here
// since that is as deep or deeper now. The calls this process admitted
// before it were sent at the pace it answers: their refusals are old news.
func (s *bucket) adopt(r *pace.Curve, now time.Time, maxWait time.Duration) bool {
	n := now.UnixNano()
	if n >= r.Full {
		return false
	}
	at, f0, wmax := min(r.At, n), r.F0, r.Wmax
	base, burst := s.basePace(now)
	if base > 0 && burst > 0 {
		// The floor this instance keeps (its maximum wait may differ).
		if floor := min(1, s.floorRate(maxWait)/base); f0 < floor {
			f0, wmax = floor, max(wmax, floor)
		}
	}
	if at != r.At || f0 != r.F0 {
		// A cut stamped after now (a clock ahead of this one, or a record
		// written by something else) is taken as made now: its climb would
		// otherwise not start until then, and hold the scope at its
		// deepest for as long.
		r = pace.NewCurve(time.Unix(0, at), wmax, f0, r.Over, r.Measured)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.recov.Load(); old != nil && old.At >= r.At && old.Factor(n) <= r.Factor(n) {
		return false
	}
	// Not quiet for a window, as after a cut of its own: a refusal of a
	// call sent at the adopted pace says the other instance's measure was
	// too high, and this one's own measure may tell better.
	s.cutAt = s.admitted.Load()
	s.recov.Store(r)
	s.recovered.Store(false)
	return true
}
