package pace

// A fixed window's turns: the refills the counts show, their period and
// phase, the window learned from successive resets, and the next window's
// count once its turn is nearer than a round trip.

import (
	"math"
	"time"
)

// noteReset takes the reset a count r named, made at seen, and reports
// whether the count turned at a reset an earlier one named; quiet says
// nothing was refused of late.
func (o *Record) noteReset(seen int64, reset time.Duration, r float64, limit int64, local, quiet bool) (turned bool) {
	// A count made once the reset the one before named was due, which
	// names a later one: the count turned at that reset. A fixed window
	// is full then (Record.refill). One with no room, and no refill seen
	// ever, does not refill at its resets: a sliding window gives back
	// what was spent a window before as it goes, and at its turn is as
	// empty as before it (gradual; reading.noneLeft).
	//
	// Or once the soonest reset named since the latest turn came, a
	// count that names one further off than that one's slack, while
	// nothing was refused of late. A reset in whole seconds may be up to
	// a second early as well as late (httprate ends its window on the
	// second; a count read against a Date header rounds it), so the
	// counts of a window's last second name "1 s" and its turn comes
	// before that: read against the latest alone, the first count after
	// the turn came before that reset was due, was no turn, and named
	// the next one — the turn of a sliding minute over a 0.5–1 s route
	// went unseen, and the scope paused at none left for half a minute
	// while the window gave back. Not after a refusal: a server that
	// turned to refusing every call, none left until a reset farther
	// off, reads the same, and taken for a sliding window's turn, which
	// gives back as it goes, it was sent twenty calls into its refusals.
	//
	// So does a count that names a reset beyond the soonest one an earlier
	// count named, before that one came: its reset moved later as the
	// count was spent. A window's end stays where it is while its count
	// falls; a bucket's reset is when it will be full again, and it gives
	// back as it goes. Paused to that reset, a token bucket of 10 a
	// second and 51 in hand, emptied by the first burst, sat out the five
	// seconds it takes to be full while it took ten a second.
	at, due := seen+int64(reset), seen+int64(reset+WholeSecondSlack(reset))
	turned = o.dueAt != 0 && seen >= o.resetAt && at > o.dueAt ||
		quiet && o.soonestDue != 0 && seen >= o.soonestAt && reset > time.Duration(o.soonestDue-o.soonestAt)
	// A reset stated as a time from the answer, not from when the server
	// counted, moves with the route's jitter: beyond it, and beyond a
	// whole-second reset's slack, it moved.
	moved := o.soonestDue != 0 && seen < o.soonestAt && at > o.soonestDue+int64(o.rtt.Spread)
	if (turned || moved) && o.refillAt == 0 && local && r < refillJump(limit, o.peak) {
		o.gradual = true
	}
	o.resetAt, o.dueAt = at, due
	if turned || o.soonestDue == 0 || due < o.soonestDue {
		o.soonestAt, o.soonestDue = at, due
	}
	return turned
}

// atTurn reports whether a count made at seen, naming a reset of reset in
// a window of window, is at a long window's turn (atLongTurn) that is
// still due: the turn the first such count named, with its slack, has not
// passed. A window's turn, once it comes, names a reset a window later;
// a count that names one within its slack again after that is a reset
// that never comes (a count that says "1 s" at every answer), not a turn.
func (o *Record) atTurn(seen int64, reset, window time.Duration) bool {
	if !atLongTurn(reset, window) {
		o.turnDue = 0
		return false
	}
	if o.turnDue == 0 {
		o.turnDue = seen + int64(reset+WholeSecondSlack(reset))
	}
	return seen <= o.turnDue
}

// nextCount is, once a fixed window's turn is nearer than the round
// trip's floor (reading.land ≤ 0), what the next window has left for the
// calls sent from now on: its limit less the calls sent since land ago,
// already on their way to it; -1 before then, for a scope not seen alone
// on the key, or when no count that old is kept. refill is the turn's
// NextRefill.
func (o *Record) nextCount(now time.Time, refill time.Duration, limit int64, local bool, sc Scope) float64 {
	floor := time.Duration(o.rtt.Floor)
	alone := o.alone(now, local || o.fleet, sc.Blind)
	land := refill - floor
	if !alone || limit <= 0 || o.refillEvery <= floor || land > 0 {
		return -1
	}
	by, ok := o.spentBy(now.Add(land))
	if !ok {
		return -1
	}
	return float64(limit) - float64(SpentSince(by, sc.Spent, o.fleet))
}

// refillJump is the least a fixed window's refill adds to a count whose
// published limit is limit (-1 if none) and whose peak is peak: a large
// part of the limit at once.
func refillJump(limit int64, peak float64) float64 {
	return max(3, 0.2*math.Max(float64(limit), peak))
}

// Refill is how long after now the fixed window the counts show refills
// next, per being the configured limit's window; 0 when no regular refill
// has been seen lately.
func (o *Record) Refill(now time.Time, per time.Duration) time.Duration {
	refill, _ := o.refill(now, per)
	return refill
}

// refill is how long after now the counts' refills come next, and whether
// they are a window's turning (refillsByWindow), per being the configured
// limit's window. Refills that are a window's turning come every window,
// on the turns' phase (phase); others, every gap measured from the latest
// (NextRefill). A turn that is due but not yet seen is imminent
// (RefillFloor), for a quarter of a window: the answers that show it are
// on their way.
func (o *Record) refill(now time.Time, per time.Duration) (time.Duration, bool) {
	if !o.refillsByWindow(o.refillEvery, per) {
		return NextRefill(now, o.refillAt, o.refillEvery), false
	}
	p := int64(o.windowOr(per))
	at := now.UnixNano()
	if o.refillAt == 0 || at-o.refillAt >= p+p/4 || at < o.turnAt {
		return 0, false
	}
	last := o.turnAt + (at-o.turnAt)/p*p // the latest turn due by now
	if o.refillAt < last {
		return RefillFloor, true
	}
	return time.Duration(last + p - at), true
}

// phase dates a window's turns from the latest refills seen, once they are a
// window's turning: a window's turn is seen by the first answer counted
// after it, a way back and then some after it, so the earlier of the latest
// two refills, the older carried on the window to the latest, is nearest the
// turn. Dated by the latest refill alone, the predicted turns wandered by
// the jitter of the round trip, and the gap between two refills by twice it
// (1.047 s for a window of a second): the calls due by a turn were sent
// late. Carried on the window from older refills, the turns were dated early
// by the gaps since, and calls were sent into a window that had not turned:
// a window that starts at the first call after the last one ended (as
// ulule/limiter's and GitHub's do) turns a call's gap later each time. Two
// sightings keep that to one gap. Carried instead on the mean gap between
// the refills seen (tried), the turns were dated late by the sightings'
// jitter over the few gaps measured, and calls were held back from turns
// that had come: ulule's window of 100 a second on loopback, limit known,
// 0.976 → 0.966 of its quota, while its window of 50 in 10 s beside a
// neighbour went from 3.1 to 2.8 % refused.
func (o *Record) phase(per time.Duration) {
	if !o.refillsByWindow(o.refillEvery, per) || o.nsightings == 0 {
		o.sightings[0], o.nsightings = o.refillAt, 1
		o.turnAt = o.refillAt
		return
	}
	o.sightings[o.nsightings%len(o.sightings)] = o.refillAt
	o.nsightings++
	p := int64(o.windowOr(per))
	o.turnAt = o.refillAt
	for _, at := range o.sightings[:min(o.nsightings, len(o.sightings))] {
		k := (o.refillAt - at + p/2) / p
		o.turnAt = min(o.turnAt, at+k*p)
	}
}

// windowOr is the window learned from the resets, else per.
func (o *Record) windowOr(per time.Duration) time.Duration {
	if o.window > 0 {
		return o.window
	}
	return per
}

// refillsByWindow reports whether refills every every are the scope's
// window turning: every is the window learned from its resets, else per,
// the configured limit's, within a tenth; and the count has held at least
// half of what the scope spent between the two latest refills (a fixed
// window's count is what it lets through in one). A token bucket's count
// jumps now and then as answers overtake each other (every half second,
// over a jittery round trip), which is not a window that ends; one that
// publishes its capacity (11) while it lets 100 a second through holds a
// tenth of what it let through between two such jumps.
func (o *Record) refillsByWindow(every, per time.Duration) bool {
	w := o.windowOr(per)
	if w <= 0 || o.peak < float64(o.refillSpent)/2 {
		return false
	}
	if every == 0 {
		// One refill seen, after counts that covered half a window or
		// more: the window it ends is the first, whose count held what
		// the scope spent in it; the period is the window's.
		return o.refillAt != 0 && o.first != 0 && time.Duration(o.refillAt-o.first) >= w/2
	}
	d := every - w
	return d < w/10 && -d < w/10
}

// windowsApart reports whether two refills gap apart are a whole number of
// periods every apart, within a tenth of one: a window's turns, seen each
// window or with a window or two between without an answer. Without a
// period yet, any gap is.
func windowsApart(gap, every time.Duration) bool {
	if every <= 0 {
		return true
	}
	k := (gap + every/2) / every
	d := gap - k*every
	return k >= 1 && d < every/10 && -d < every/10
}

// LearnWindow learns the window of a limit published without one, from
// successive resets: the reset moves on by one window each time one ends.
// The shortest gap seen twice is taken, and replaced by a shorter one seen
// twice later (a gap may span windows in which no answer gave a reset).
// resetAt is the reset on the server's clock; whole says it is given in
// whole seconds. It returns the window, once learned.
func (o *Record) LearnWindow(resetAt time.Time, whole bool) time.Duration {
	at := resetAt.UnixNano()
	last := o.lastReset
	if at <= last {
		return o.window
	}
	o.lastReset = at
	if last == 0 {
		return o.window
	}
	gap := time.Duration(at - last)
	if whole {
		gap = gap.Round(time.Second)
	}
	if gap < 900*time.Millisecond || o.window > 0 && gap >= o.window {
		return o.window // the same window read again, or nothing shorter
	}
	switch {
	case gap == o.candidate:
		o.window = gap
	case o.candidate == 0 || gap < o.candidate:
		o.candidate = gap
	}
	return o.window
}

// WindowHint takes a provider's Retry-After as the window of a limit
// published without one, until successive resets teach the real one: a
// server that publishes a count but not its window and asks to come back
// after a while most often means the window. It returns the window as
// learned or hinted so far.
func (o *Record) WindowHint(wait time.Duration) time.Duration {
	if o.window == 0 && o.candidate == 0 && wait >= time.Second && wait <= time.Hour {
		o.candidate = wait
	}
	if o.window > 0 {
		return o.window
	}
	return o.candidate
}
