package pace

import "time"

// What a refusal that teaches nothing else does to a scope's pace.
//
// A 429 is a measurement: the server refused the calls above its capacity
// and accepted the rest, so what it accepted over the last window is its
// capacity, near enough. The pace jumps there, less CapacityHeadroom, in
// one step instead of in many geometric ones — less CostlyHeadroom where
// the measure may hold a burst the server let through (after a pause, or
// with no other refusal in the window). When the scope has too little
// history to measure (its first calls were refused), it halves instead;
// so it does when the calls in flight at a cut that read the scope's own
// pace come back refused in a larger share than the cut kept
// (Cuts.tooShallow), and the share of them the server accepted is then
// the level the climb back flattens at. A halving for want of history is
// measured the same way once sixteen calls are answered after it, where a
// bare 429 priced its climb (Cuts.measureHalving).
//
// The pace then climbs back by time, not by successes, on a Curve: quickly
// at first, flat near the level the server last refused, then faster again
// beyond it. So probing the old ceiling again is rare, and a scope cut to
// the floor by an incident is back at its full pace after a bounded time,
// however many cuts the incident made. How long the curve takes is priced
// by what a refusal costs: a bare 429 loses one call (CheapRecovery), a 429
// that paused the whole scope (Retry-After) loses the calls every caller
// would have sent meanwhile (CostlyRecovery, where that is two or more).
const (
	CapacityHeadroom = 0.95
	CostlyHeadroom   = 0.9
	ShortHistoryCut  = 0.5

	// From the floor back to the full pace after a cut, when nothing is
	// refused on the way.
	CheapRecovery  = 40 * time.Second
	CostlyRecovery = 120 * time.Second

	// A scope that refusals have cut to its floor still sends a call
	// about every ProbeEvery, if that is at most ProbeShare of its pace: a
	// bare 429 costs one call.
	ProbeEvery = time.Second
	ProbeShare = 0.05

	// BriefRetryAfter is the longest Retry-After that, on a refusal whose
	// cut measured the server's capacity, pauses only the call it answers,
	// not the scope: a second is a per-second limiter's stock answer
	// (nginx's, httprate's), and the measured pace already keeps the other
	// callers under the capacity. A longer one is a request to stop, and
	// stops the scope.
	BriefRetryAfter = time.Second

	// MaxRecordedRecovery bounds the climb a fleet's pace record may ask
	// for (ParseRecord): a record written by a later version, or by
	// something else, never holds a scope down for longer.
	MaxRecordedRecovery = 10 * CostlyRecovery
)

// The accepted-calls history a refusal measures on: a point every
// AcceptanceStep accepted calls, not every call, so that a success costs
// its owner one atomic add; and no two points closer than minPointGap, so
// that the history spans acceptancePoints × minPointGap, two seconds, at
// any pace above 128 calls a second (AcceptanceStep ÷ minPointGap).
// Thirty-two points of eight calls span half a second at 500 a second,
// less than half the measuring window: no refusal of a scope paced faster
// could be measured, and each halved its pace, paused it for its
// Retry-After, and set it climbing for two minutes (a leaky bucket of 500
// a second, told twice it: 0.816 of its quota).
const (
	AcceptanceStep   = 8
	acceptancePoints = 32
	minPointGap      = 2 * time.Second / acceptancePoints
)

// silentShare is the share of what it sent before below which a scope
// that sends for longer than a measuring window without a call accepted
// is silent then (measuredFrom): a quarter. Of what it sent, not of its
// pace: a scope whose callers ask for less than its pace is not silent,
// and measured across its gaps it finds a limit below what they ask at
// once (a server of 5 a second, a scope paced at 100 and asked for 8:
// 0.960 of the 5, where read as silence it halved its way down, 0.887).
const silentShare = 0.25

// minShareSample is the fewest answered calls a shared scope measures the
// share the server accepted on: on fewer, one refusal among a process's
// few calls in a window (its fleet took the rest) read as a share of
// nothing, and cut the whole fleet to the floor.
const minShareSample = 16

type acceptancePoint struct {
	at       int64   // UnixNano
	n        int64   // accepted calls then
	admitted int64   // calls the scope had admitted then
	refused  int64   // refused calls then
	pace     float64 // the scope's pace then, in units a second
}

// Cuts is a scope's record of what the provider accepted and refused, and
// of the cuts its refusals made: the history a refusal measures the
// server's capacity on, and which refusals are old news, answered by a cut
// already. Its owner keeps the count of accepted calls (an atomic, on the
// hot path) and the Curve in use, and applies what Refused decides. The
// zero value is an empty record. A Cuts is not safe for concurrent use.
type Cuts struct {
	points  [acceptancePoints]acceptancePoint
	next    int
	refused int64 // refused calls a cut answered

	// mark is the owner's admitted count at the last cut: a refusal of a
	// call admitted before it saw the pace that cut answered.
	mark int64
	// quietUntil is the UnixNano before which a refusal does not cut
	// again: the calls it answers were sent at a pace the cut has not yet
	// had a window to show wrong.
	quietUntil int64
	// ownPace is what the last cut saw, while the calls in flight at it
	// may still show it too shallow (Cuts.tooShallow); unmeasured, what
	// the last halving for want of history saw, until the calls answered
	// since measure it (Cuts.measureHalving).
	ownPace, unmeasured ownPaceCut
}

// An ownPaceCut is what a cut that could not measure the server's capacity
// saw — one that read the scope's own pace as it, or a halving for want of
// history: the accepted and refused calls then, and the share of the full
// pace it read as the capacity, or the pace it halved.
type ownPaceCut struct {
	on                bool
	accepted, refused int64
	wmax              float64
}

// Accepted records, at now (UnixNano), that the provider had accepted ok
// calls in all and the scope had admitted admitted, pacing at pace units a
// second. The owner calls it every AcceptanceStep accepted calls. A point
// within minPointGap of the one before the newest replaces the newest: the
// history keeps its span in time, its newest point always now.
func (c *Cuts) Accepted(now, ok, admitted int64, pace float64) {
	p := acceptancePoint{now, ok, admitted, c.refused, pace}
	if c.next >= 2 && now-c.points[(c.next-2)%acceptancePoints].at < int64(minPointGap) {
		c.points[(c.next-1)%acceptancePoints] = p
		return
	}
	c.points[c.next%acceptancePoints] = p
	c.next++
}

// Mark makes the calls admitted so far, admitted in all, old news to a
// refusal: they went out at a pace something else has answered (a cut
// adopted from the fleet, a count that showed a bucket too small for the
// burst they were sent in).
func (c *Cuts) Mark(admitted int64) {
	c.mark = max(c.mark, admitted)
	c.ownPace.on, c.unmeasured.on = false, false
}

// A Refusal is a refused call that taught nothing else (no count, no
// limit), with what its scope knew when it came back.
type Refusal struct {
	AdmittedAt int64 // the scope's admitted count when the call was admitted
	Admitted   int64 // the scope's admitted count now
	Accepted   int64 // the calls the provider has accepted, in all
	RetryAfter time.Duration
	// Shared says the scope's bucket is shared with other processes.
	Shared bool

	Base, Burst float64 // the scope's full pace, units a second, and its burst; 0 if none
	Curve       *Curve  // the climb in use; nil at the full pace
	// WaitFloor and ProbeFloor are the paces of one call within the
	// maximum wait and one call every ProbeEvery, units a second.
	WaitFloor, ProbeFloor float64
	// PausedFrom and PausedTo are the latest pause the scope took, UnixNano.
	PausedFrom, PausedTo int64
	// Overruled says no count the refusal carried explained it: the cut's
	// climb paces the scope below its counts too (Curve.Overruled).
	Overruled bool
}

// A CutVerdict is what a refusal does to the scope's pace.
type CutVerdict struct {
	// Curve is the new climb; nil when the refusal was old news: a call
	// sent before the last cut, or within a measuring window of it, saw
	// the pace the cut already answered.
	Curve *Curve
	// Pauses says the refusal pauses the scope for its Retry-After.
	Pauses bool
}

// Refused records the refusal r at now and returns what it does to the
// pace.
//
// Server property: a server refuses above its capacity and accepts the
// rest, so what it accepted over the last measuring window, once the
// pacer's own pauses are left out (its silence then says nothing of the
// server), is its capacity.
//
// A Retry-After pauses the scope, and the climb back is priced as costly
// where the pause stops two calls or more, unless it is brief
// (BriefRetryAfter) and the scope's pace is a measured capacity: this
// cut's measurement, or for old news, the last cut's, or a refusal within
// a measured cut's window. Then only the call it answers waits it out (a
// retry never goes sooner), and the other callers go on at the measured
// pace from an empty bucket.
//
// A shared scope's bucket is shared with other processes: what this
// process saw accepted is then only its part of what the server accepted,
// about 1/N of it in a fleet of N, and as a capacity it would cut the pace
// N times too deep, and slow the whole fleet's bucket. So a shared scope
// measures the share of its answered calls the server accepted over the
// window, times the pace they were sent at.
func (c *Cuts) Refused(now time.Time, r Refusal) CutVerdict {
	window := measuringWindow(r.Base)
	c.refused++
	if r.AdmittedAt <= c.mark || now.UnixNano() < c.quietUntil {
		// A call sent before the cut was answered by it; one sent after,
		// within the window, says the measure was too high, or that the
		// server's bucket, which the pace before the cut filled, is not
		// drained yet: below the rate the pace drains it slowly (nginx's
		// burst of 20 at 93.6 a second of its 100, three seconds). A
		// Retry-After pauses the scope, unless it is brief and answers a
		// call sent before the cut — the server's answer to the moment
		// the cut answered, measured or not, whose first refusal paused
		// the scope already — or the cut was measured, whose brief
		// Retry-After paused only its own call: only the call waits it
		// out. Each pausing the scope again as it came back, the answers
		// of the calls that were on their way over a route of 300 ms
		// made a leaky bucket's one-second pause (nginx's Retry-After:
		// 1) a second and a quarter; a refusal of one sent after a
		// measured cut paused for a second, four to eight seconds into
		// the run, in two of four runs told twice the limit (0.92 of
		// the quota in eight runs; 0.94 with only the call waiting).
		brief := r.Curve != nil && r.RetryAfter <= BriefRetryAfter && (r.AdmittedAt <= c.mark || r.Curve.Measured)
		v := CutVerdict{Pauses: r.RetryAfter > 0 && !brief}
		if c.tooShallow(r) {
			v.Curve = c.halve(now, window, r)
		} else {
			v.Curve = c.measureHalving(r)
		}
		return v
	}
	cur := 1.0
	if r.Curve != nil {
		cur = r.Curve.Factor(now.UnixNano())
	}
	floor := r.floor()
	var accepted float64
	var measured bool
	var before int64 // the refusals recorded when the measure starts
	if r.Shared {
		accepted, before, measured = c.sharedCapacity(now, window, r.Accepted)
	} else {
		accepted, before, measured = c.acceptedRate(now, window, r)
	}
	measured = measured && r.Base > 0
	costly := r.RetryAfter > 0 && (!measured || r.RetryAfter > BriefRetryAfter)
	var wmax, f0 float64
	only := measured && c.refused-before == 1
	switch {
	case measured:
		wmax = min(cur, accepted/r.Base)
		f0 = wmax * CapacityHeadroom
		if r.RetryAfter > 0 || only {
			// The measure may hold a burst the server let through: after
			// the last pause — and the next refusal costs another pause,
			// or at least a call that waits out its Retry-After — or where
			// this is the only refusal over the window. A bucket with room
			// accepts a burst above its rate before it refuses: the
			// window's calls were all accepted, and their rate is the
			// scope's pace, not the server's capacity. Beside a neighbour
			// over a 200–400 ms route, nginx's leaky bucket refused a
			// climb at 68 a second where 60 were left, the cut measured
			// 68, and a second cut followed within two seconds.
			f0 = wmax * CostlyHeadroom
		}
	default:
		wmax, f0 = cur, cur*ShortHistoryCut
	}
	// At the full pace, the window's only refusal read the scope's own
	// pace: the calls in flight at the cut check it (tooShallow).
	c.ownPace = ownPaceCut{only && r.Curve == nil, r.Accepted, c.refused, wmax}
	// The climb is priced by what the pause cost: the calls the scope
	// would have sent meanwhile. At the floor a second's pause of a call a
	// second costs that call, as a bare 429 does, and the climb is a bare
	// 429's. Priced as costly, each cut of an outage answered with
	// Retry-After: 1 made the climb from the floor last two minutes:
	// behind a bucket of 100 a second healed after twenty seconds of
	// such refusals, 0.9 of its rate came back after 130 s, against 40 s
	// after bare 429s.
	over := CheapRecovery
	if costly && r.RetryAfter.Seconds()*r.Base*cur >= 2 {
		over = CostlyRecovery
	}
	// A halving for want of history, on a climb a bare 429 priced: the
	// calls answered after it measure it (measureHalving).
	c.unmeasured = ownPaceCut{!measured && !costly, r.Accepted, c.refused, cur}
	return CutVerdict{Curve: c.cut(now, window, r, wmax, max(f0, floor), over, measured), Pauses: costly}
}

// cut starts the climb back from f0 to wmax over over, for the refusal r
// at now: the calls admitted so far were sent at the pace it answers
// (mark), and the refusals of the measuring window after it, at the pace
// it sets, say it was too high (quietUntil).
func (c *Cuts) cut(now time.Time, window time.Duration, r Refusal, wmax, f0 float64, over time.Duration, measured bool) *Curve {
	c.mark = max(c.mark, r.Admitted)
	c.quietUntil = now.Add(window).UnixNano()
	cut := NewCurve(now, max(wmax, f0), f0, over, measured)
	cut.Overruled = r.Overruled
	return cut
}

// tooShallow reports whether the refusal r, within the last cut's
// measuring window or of a call sent before it, shows that cut too
// shallow: a cut at the full pace on the window's only refusal read the
// scope's own pace as the capacity, and kept a tenth below it
// (CostlyHeadroom). The calls in flight at the cut were sent at that pace,
// into a bucket the refusal found at its level; such a bucket refuses the
// share of them above its rate. Of sixteen answered since the cut or more
// (minShareSample), a share refused above the tenth the cut kept says the
// server accepts well below the pace the cut read: the capacity is unknown
// below it, as with too little history. Beside a neighbour taking 40 of
// nginx's 100 a second over a 200–400 ms route, a blind start at 90 a
// second was cut to 81 and sent into refusals for the measuring window,
// sixteen of them, where the calls in flight had shown a third refused
// within a quarter of a second. Not a cut made while the pace climbs back:
// there the pace was near the level the last cut measured, and halved, a
// scope told twice nginx's rate got 0.906 of it where it got 0.986.
func (c *Cuts) tooShallow(r Refusal) bool {
	if !c.ownPace.on {
		return false
	}
	refused, answered := c.since(c.ownPace, r)
	return answered >= minShareSample && float64(refused) > (1-CostlyHeadroom)*float64(answered)
}

// since is what the provider refused of the calls answered since the cut
// that saw p, as of the refusal r, and how many it answered.
func (c *Cuts) since(p ownPaceCut, r Refusal) (refused, answered int64) {
	refused = c.refused - p.refused
	return refused, refused + r.Accepted - p.accepted
}

// measure is the level the calls answered since the cut that saw p measure,
// as of the refusal r: the share of them the server accepted, times the
// pace p read. At least one is answered: r's.
func (c *Cuts) measure(p ownPaceCut, r Refusal) float64 {
	refused, answered := c.since(p, r)
	return p.wmax * float64(answered-refused) / float64(answered)
}

// measureHalving returns the climb of the last halving for want of history
// (unmeasured) flattened at what the calls answered since measure, once
// sixteen are (minShareSample), as of the refusal r: the share of them the
// server accepted, times the pace the halving answered; nil while they are
// too few, once measured, or where the climb already flattens no higher.
// The climb keeps its start and floor, and is marked measured.
//
// The calls in flight at the halving were sent at the pace it answered,
// into a bucket at its level, which accepts its rate's share of them (the
// server property halve relies on). Flattened at that pace instead, the
// climb from half of it crossed the capacity within seconds: over a
// 200–400 ms route nginx's first refusal came before the scope had
// history to measure in one run of two beside a neighbour taking 40 of
// its 100 a second, and a second wave of refusals followed 7–8 s in.
// Only on a climb a bare 429 priced (CheapRecovery): one priced by a
// pause climbs three times slower, and from half the pace to a lower
// level slower still (a Curve's early slope grows with the gap to its
// level) — with Retry-After: 1 beside the neighbour, 0.916 of its share
// measured, 0.888 (forty draws of the virtual matrix's model).
func (c *Cuts) measureHalving(r Refusal) *Curve {
	if !c.unmeasured.on || r.Curve == nil {
		return nil
	}
	if _, answered := c.since(c.unmeasured, r); answered < minShareSample {
		return nil
	}
	c.unmeasured.on = false
	wmax := max(r.Curve.F0, c.measure(c.unmeasured, r))
	if wmax >= r.Curve.Wmax {
		return nil
	}
	cut := NewCurve(time.Unix(0, r.Curve.At), wmax, r.Curve.F0, r.Curve.Over, true)
	cut.Overruled = r.Curve.Overruled
	return cut
}

// halve replaces a cut shown too shallow (tooShallow) by half the pace it
// read, climbing back over what that cut's refusal cost, from now; the
// calls admitted so far answered.
//
// The climb flattens at the share of the calls answered since that cut
// which the server accepted, times the pace it read: the calls were sent
// at that pace into a bucket at its level, which accepts its rate's share
// of them (the server property tooShallow relies on), so the share is a
// measure of the capacity where the cut's own was only a bound. Flattened
// at the pace the cut read instead, the climb crossed the capacity within
// seconds: beside a neighbour taking 40 of nginx's 100 a second over a
// 200–400 ms route (the virtual matrix's model of it), a second wave of
// refusals came 8–10 s into the run, and 26 of 40 draws had more than one
// call in a hundred refused on one side or the other; flattened at the
// share, 20 (with a 429's Retry-After: 1, 12 → 5).
func (c *Cuts) halve(now time.Time, window time.Duration, r Refusal) *Curve {
	over := CheapRecovery
	if r.Curve != nil {
		over = r.Curve.Over
	}
	c.ownPace.on = false
	f0 := max(c.ownPace.wmax*ShortHistoryCut, r.floor())
	return c.cut(now, window, r, max(f0, c.measure(c.ownPace, r)), f0, over, true)
}

// floor is the least share of its full pace a cut leaves the scope that
// refusal r came to.
func (r Refusal) floor() float64 {
	floor := MinFactor
	if r.Base > 0 && r.Burst > 0 {
		// However low the pace is cut, the scope always probes again
		// within the maximum wait.
		floor = max(floor, min(1, r.WaitFloor/r.Base))
		// And, where that is a small part of its pace, about once every
		// ProbeEvery: in an outage nothing is accepted, each cut finds no
		// capacity, and from the least factor the climb takes seconds to
		// send its first call — which was how long a healed provider
		// waited after the outage (7 s of a 100/s scope's).
		floor = max(floor, min(ProbeShare, r.ProbeFloor/r.Base))
	}
	return floor
}

// SlotsRefused records a refusal, at now, of a call sent while held others
// were in flight, for a scope that caps its calls in flight at n and uses
// the climb cur (nil at its full cap), admitted calls in all; it returns
// the new climb, or nil when the refusal says nothing new (SlotsCut).
func (c *Cuts) SlotsRefused(now time.Time, held, n int, cur *Curve, admitted int64) *Curve {
	f := 1.0
	if cur != nil {
		f = cur.Factor(now.UnixNano())
	}
	f, ok := SlotsCut(held, n, f)
	if !ok {
		return nil
	}
	c.refused++
	c.Mark(admitted)
	return NewCurve(now, f, f, CheapRecovery, true)
}

// Adopt returns r, a cut another instance of the fleet took and published,
// as this scope's climb back at now, so that the fleet climbs back
// together, and false when it does not take it: not when r is over, nor
// over the climb cur (nil if none), taken since, that is as deep or deeper
// now. The calls the scope admitted before it, admitted in all, were sent
// at the pace it answers: their refusals are old news. waitFloor is the
// pace of one call within this scope's maximum wait, which may differ from
// the other instance's: the adopted curve never goes below it.
func (c *Cuts) Adopt(now time.Time, r, cur *Curve, admitted int64, base, burst, waitFloor float64) (*Curve, bool) {
	n := now.UnixNano()
	if n >= r.Full {
		return nil, false
	}
	at, f0, wmax := min(r.At, n), r.F0, r.Wmax
	if base > 0 && burst > 0 {
		if floor := min(1, waitFloor/base); f0 < floor {
			f0, wmax = floor, max(wmax, floor)
		}
	}
	if at != r.At || f0 != r.F0 {
		// A cut stamped after now (a clock ahead of this one, or a record
		// written by something else) is taken as made now: its climb would
		// otherwise not start until then, and hold the scope at its
		// deepest for as long.
		overruled := r.Overruled
		r = NewCurve(time.Unix(0, at), wmax, f0, r.Over, r.Measured)
		r.Overruled = overruled
	}
	if cur != nil && cur.At >= r.At && cur.Factor(n) <= r.Factor(n) {
		return nil, false
	}
	// Not quiet for a window, as after a cut of its own: a refusal of a
	// call sent at the adopted pace says the other instance's measure was
	// too high, and this one's own measure may tell better.
	c.Mark(admitted)
	return r, true
}

// acceptedRate returns how many calls a second the provider accepted over
// about the last window before now, and the refusals recorded when that
// measure starts; false when the record holds less than half a window of
// history.
func (c *Cuts) acceptedRate(now time.Time, window time.Duration, r Refusal) (float64, int64, bool) {
	p, span, ok := c.measuredFrom(now, window, r.Admitted, r.Base)
	if !ok {
		return 0, 0, false
	}
	// The scope sent nothing while it paused itself for a Retry-After: the
	// server's silence then says nothing of what it accepts, and counted,
	// a measure taken soon after a pause read the pause as a scarcity (a
	// leaky bucket beside a neighbour, cut after a one-second pause, was
	// held at 0.6 of its share for good).
	if paused := pausedWithin(r.PausedFrom, r.PausedTo, now, span); paused > 0 {
		if span -= paused; span < window/2 {
			return 0, 0, false
		}
	}
	return float64(r.Accepted-p.n) / span.Seconds(), p.refused, true
}

// pausedWithin is how much of the span before now the pause from from to
// to (UnixNano) took.
func pausedWithin(from, to int64, now time.Time, span time.Duration) time.Duration {
	from, to = max(from, now.UnixNano()-int64(span)), min(to, now.UnixNano())
	return time.Duration(max(0, to-from))
}

// sharedCapacity returns what the server was measured to accept, in units
// a second, for a scope whose bucket other processes share: the share of
// this process's answered calls it accepted since about a window before
// now (further back, if that holds fewer than minShareSample calls), times
// the pace they were sent at, on average over that span — not the pace
// now, which a cut since may have lowered already. ok is the count of
// accepted calls now, and the refusals recorded when the measure starts.
// false when the record holds too little history.
func (c *Cuts) sharedCapacity(now time.Time, window time.Duration, ok int64) (float64, int64, bool) {
	from := now.UnixNano() - int64(window)
	count := min(c.next, acceptancePoints)
	// Walk back from the newest point, adding up the pace over time.
	var paced float64 // units the pace allowed from the point to now
	end := now.UnixNano()
	for i := 1; i <= count; i++ {
		p := c.points[(c.next-i)%acceptancePoints]
		if p.at > end {
			continue // recorded out of order by a concurrent success
		}
		paced += p.pace * float64(end-p.at) / 1e9
		end = p.at
		answered := float64(ok - p.n + c.refused - p.refused)
		if p.at > from || answered < minShareSample {
			continue
		}
		span := float64(now.UnixNano()-p.at) / 1e9
		return float64(ok-p.n) / answered * paced / span, p.refused, true
	}
	return 0, 0, false
}

// measuredFrom returns the point a measure over about the last window
// before now starts from, and its span; false when the record holds less
// than half a window of history. admitted is the calls the scope has
// admitted by now, base its full pace in units a second (taken for what
// it sent before when the history holds no earlier point).
//
// A scope that sent at less than silentShare of what it sent before, for
// longer than a window with no call accepted (idle: no caller asked, or
// a caller asked a few) says nothing of the server then, as over its own
// pauses:
// the measure starts after that silence. Spanning it, the first refusal
// after a minute's rest read the few calls accepted since as the
// server's rate over the whole minute, and a bucket of 50 a second was
// paced at 5 (0.04 of it over the next ten seconds). Calls sent into an
// outage at the full pace are not silence: they were refused, and the
// measure of nothing accepted is the lesson (an outage cut to its probes
// is silent, and a refusal then halves a pace already at its floor).
func (c *Cuts) measuredFrom(now time.Time, window time.Duration, admitted int64, base float64) (acceptancePoint, time.Duration, bool) {
	from := now.UnixNano() - int64(window)
	var newestOld, oldest, after acceptancePoint
	for i := range min(c.next, acceptancePoints) {
		p := c.points[i]
		if p.at <= from && p.at > newestOld.at {
			newestOld = p
		}
		if oldest.at == 0 || p.at < oldest.at {
			oldest = p
		}
	}
	var before acceptancePoint
	for i := range min(c.next, acceptancePoints) {
		p := c.points[i]
		if p.at > newestOld.at && (after.at == 0 || p.at < after.at) {
			after = p // the point after newestOld, if any
		}
		if p.at < newestOld.at && p.at > before.at {
			before = p // the one before it
		}
	}
	best := newestOld
	if best.at != 0 {
		// What the scope was sending before: between the two points, or
		// at its pace with one point only.
		sending := base
		if before.at != 0 {
			sending = float64(best.admitted-before.admitted) / (float64(best.at-before.at) / 1e9)
		}
		end, sent := now.UnixNano(), admitted-best.admitted
		if after.at != 0 {
			end, sent = after.at, after.admitted-best.admitted
		}
		if gap := end - best.at; gap > int64(window) && float64(sent) < silentShare*sending*float64(gap)/1e9 {
			best = after // the zero point, when nothing came after
		}
	} else {
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

// measuringWindow is the window a refusal measures the accepted rate over,
// for a scope whose full pace is base units a second: long enough to hold
// twenty calls at that pace, and between a second and a minute.
func measuringWindow(base float64) time.Duration {
	w := time.Second
	if base > 0 {
		w = time.Duration(20 / base * float64(time.Second))
	}
	return min(max(w, time.Second), time.Minute)
}
