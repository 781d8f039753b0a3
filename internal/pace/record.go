package pace

import (
	"math"
	"time"
)

// A Record is what a scope has seen of a provider that reports what
// remains: the counts it gave, what the scope had spent when each call it
// answered was admitted, the calls it refused, the refills of a fixed
// window, the round trips. From it, Count reckons the pace each new count
// allows. The zero value has seen nothing. A Record is not safe for
// concurrent use: its owner holds a lock.
type Record struct {
	at        int64   // UnixNano of the report the next measure of supply starts from
	remaining float64 // the count it gave
	spent     int64   // the scope's spent units when the call it answered was admitted
	refusedAt int64   // refused then
	refused   int64   // units of the scope's calls refused with a remaining count, ever
	last      int64   // UnixNano of the last report
	supply    float64 // units a second the provider adds back, less what others take
	drift     float64 // supply averaged over driftTime: whether others take
	interval  float64 // seconds between reports, averaged
	first     int64   // UnixNano of the first report
	latest    int64   // the spent units of the latest report taken
	fleet     bool    // spent units are the fleet's (store.Decision.Taken), not the scope's own
	known     bool    // supply has a first measurement
	peak      float64 // the largest count seen, for a limit that is not published
	rtt       RoundTrips

	// burstStart says the measure starts from the scope's first burst: the
	// least count of it, at the last of its calls (Record.measure).
	burstStart bool

	refusals    [32]refusedCall // the latest refusals, by mark (spentSince)
	nrefusals   int
	refusedLast int64 // UnixNano of the latest refusal, counted or not (Refused)
	// refusedSettled says the provider refused a call once the scope's
	// first seconds were over (TrustAfter from its first count): not a
	// refusal of the blind start (Record.margin).
	refusedSettled bool
	// blindSpent is what the scope spent blind: the units admitted before
	// its first count was taken, or on the burst its bucket started with,
	// whichever is more. refusedPaced is UnixNano of the latest refusal of
	// a call admitted after those, one the counts paced (Refused).
	blindSpent   int64
	refusedPaced int64
	// widened is the calls a refusal of a paced call added to the margin,
	// as of widenedAt (UnixNano), given back over time (Record.widening).
	widened   float64
	widenedAt int64

	// When a fixed window refills, from the jumps in the count: the
	// report that saw the latest one, the gap to the one before, and the
	// gap taken: the first seen, then one within a tenth of the one before
	// it (a gap that spans a window with no jump seen is not taken).
	refillAt    int64
	refillGap   time.Duration
	refillEvery time.Duration
	// The spent units at the latest refill, and those spent between the
	// two latest: what a window took, if the refills are a window's.
	refillMark, refillSpent int64
	refillCount             float64 // the count that showed the latest refill
	// turnAt is when a window's turns are seen, at the earliest, on the
	// window's period, of the latest few refills seen (phase).
	turnAt     int64
	sightings  [2]int64
	nsightings int
	// What the scope had spent by each of the latest reports, oldest
	// first from sends[nsends%len]: the calls sent since a moment, to
	// the resolution of the answers (spentBy).
	sends  [64]spentSample
	nsends int

	// The window the provider does not state, from successive resets.
	turnDue   int64         // UnixNano by which the long window's turn the counts are at is due (atTurn); 0 when not at one
	lastReset int64         // UnixNano of the latest reset seen
	candidate time.Duration // the shortest gap between resets seen so far
	window    time.Duration // a window learned; 0 until one is
	// longestReset is the longest reset a count has stated: a window
	// lasts no shorter than the time to its end (reading.longest).
	longestReset time.Duration

	// Whether the count refills at its reset. resetAt is when the latest
	// count said it would, dueAt the same with a whole-second reset's
	// slack (UnixNano). gradual says a count made after such a reset
	// named a later one, without a refill then or ever: the count gives
	// back as it goes (a sliding window, a bucket), not at its reset.
	resetAt, dueAt int64
	gradual        bool
	// The soonest reset a count has named since the latest turn, and its
	// due time (UnixNano): a later count that names one beyond it before
	// it comes has a reset that moves as the count is spent.
	soonestAt, soonestDue int64

	// The count others' spending is read from, to now (othersTake): one
	// after the first calls' disorder, or the latest refill or turn.
	span countSample

	// The latest counts, one a heldEvery apart, oldest first from
	// held[nheld%len]: what the provider gave back over the latest
	// seconds (givenBack).
	held  [12]countSample
	nheld int
}

// A countSample is a count as a scope measured it: when the server made
// it (UnixNano), the count, and what the scope had spent and had refused
// by then.
type countSample struct {
	at             int64
	count          float64
	spent, refused int64
}

// gaveBack is what the provider gave back since s, in units, by the count
// r made when the scope had spent spent and had refused refused: how much
// less the count fell than the scope spent, its refused calls left out
// (they were never counted). Negative, the count fell faster: others
// spent on the key.
func (s countSample) gaveBack(r float64, spent, refused int64) float64 {
	return r - s.count + float64(spent-s.spent) - float64(refused-s.refused)
}

// A Count is one answer's remaining count, as the scope reads it.
type Count struct {
	Remaining int64         // the units the provider says are left
	Reset     time.Duration // until the count is full again, or its window ends
	Limit     int64         // the published limit; -1 if none
	// Mark is the scope's spent units when the call it answers was
	// admitted, this call's included: the calls admitted since were not
	// all counted yet. In a shared store that says what the fleet took
	// (Fleet), it is the fleet's total then (store.Decision.Taken).
	Mark int64
	// Unanswered is the units of calls sent together with this one,
	// admitted before it, whose answers were not read yet: the server may
	// have counted them after this count, so what is left is net of them
	// too.
	Unanswered int64
	Refused    int64 // the answered call's cost if the provider refused it, which it did not spend; else 0
	// Burst says the call was one of the scope's first burst, sent at
	// once and counted in any order: a count above the one before is
	// that order, not a refill (Record.measure).
	Burst bool
	// Sent is when the answered call was admitted (UnixNano): the count
	// was made a little after, on the way (Count).
	Sent  int64
	Local bool // the scope's bucket is this process's alone
	Fleet bool // Mark is the fleet's total
}

// A Scope is what Count needs to know of the scope a count is about, as it
// stands when the count arrives.
type Scope struct {
	// Spent is the scope's spent units now, in the unit of the marks: the
	// scope's own, or the fleet's total as the latest take said (Fleet).
	Spent int64
	// Blind is the pace from the configured or published limit alone, the
	// one the scope returns to once a report has run out; Configured is the
	// configured limit's pace, and Unreported the one the scope keeps
	// without a report (the configured or published limit's, whichever the
	// counts do not outrank).
	Blind, Configured, Unreported float64
	// Floor is the least pace a report leaves: a call within the maximum
	// wait.
	Floor float64
	// Per is the configured limit's window, the refills' expected period
	// while no window is learned from the resets; Quota is the configured
	// limit's count a window (0 without a configured limit).
	Per   time.Duration
	Quota int64
	// Burst is the burst the scope's bucket started with: the units it
	// may send at once before any count is back.
	Burst float64
	// BlindWithin says the blind pace is within the count's published
	// limit: the published limit's, or a configured one that counts no
	// more per window.
	BlindWithin    bool
	CountsRequests bool // the scope counts requests, not tokens or money
	MaxWait        time.Duration
	// CostlyRefusals says a refusal has paused the scope for longer than
	// BriefRetryAfter, within CostlyFor of it: the server has shown that a
	// call sent into none left costs more than the call (reading.noneLeft).
	CostlyRefusals bool
}

// CostlyFor is how long a refusal that paused a scope for wait is
// remembered as costly (Scope.CostlyRefusals): sixty times the pause.
// Forgotten, it costs at most one more such pause in sixty — a minute an
// hour behind a limiter that answers each refusal with its minute's
// window — and a server that asked once, during an incident say, does not
// keep every count of none left waited out for good.
func CostlyFor(wait time.Duration) time.Duration { return 60 * wait }

// A Verdict is what one count decides.
type Verdict struct {
	// Left is what is left now by the count's reading: the count less the
	// calls admitted since it was made, plus what the provider gave back
	// meanwhile — or, near a fixed window's turn, the next window's.
	Left float64
	// Paced says the count sets a pace: not when it is old news (a later
	// one was taken) or None.
	Paced bool
	// None says nothing is left until a reset far enough away to pause
	// for (PauseForNoneLeft), or for a server whose refusals are costly:
	// the scope pauses for Pause, and no pace holds.
	None  bool
	Pause time.Duration // how long None pauses the scope; 0 when not None
	Rate  float64       // units a second
	Hold  time.Duration // how long the pace holds without another count
	// Young says the measure of what the provider gives back is too young
	// to aim at the edge by: a sliding window that has been idle lets a
	// whole window through, and the next one starts full. A count that
	// holds full while the scope spends is never young: its bucket refills
	// faster than the scope spends.
	Young bool
	// Roomless says the count has no room for its margin: it sets no pace
	// (Rate is Unreported), and Holds is the burst a server's bucket takes.
	Roomless bool
	// WakeAtMost is the fastest what wakes a waiting call may spend
	// (LivePace.WakeAtMost); 0 for no bound.
	WakeAtMost float64
	// Holds is the most calls the count has shown the server holds at
	// once (LivePace.Holds).
	Holds float64
	// WakeOne says the count is below its margin at a long window's turn
	// (atLongTurn): until another count comes, the scope sends one call
	// at a time (LivePace.WakeOne), to learn what the turn brought.
	WakeOne bool
	// Before says the count was made in a fixed window that has turned
	// since: it says nothing of what is left now, and Left is no bound.
	Before bool
	// Why says which reading of the count sets Rate, when it is more than
	// what is left spread to the reset; "" otherwise.
	Why string
}

// Margin is the share of a limit that pacing by counts leaves unspent, at
// least a quarter of a call: what an unpaced neighbour on the same key
// finds when it calls, and slack for the rounding of the count. Not a
// whole call: on a small limit that is a large share (one of GitHub's 9
// code searches a minute is 11 %), and a window that starts at the first
// call after the last one ended loses the gap besides. One call in a
// hundred: a count that says what is left after the call it answers
// already keeps that call's own unit, so with two in a hundred the scope
// settled at 97 % of a sliding window, below the headroom it aims at.
const Margin = 0.01

// TrustAfter is how long a scope measures what the provider adds back
// before that measure may slow it below its blind pace: at least one
// window of a sliding-window counter, which adds nothing back in its first.
const TrustAfter = 1500 * time.Millisecond

// catchUpTime is how soon a scope spends what remains beyond its margin
// when the reset is a second or two away.
const catchUpTime = 500 * time.Millisecond

// deficitTime is how soon a scope that has spent into its margin gives it
// back.
const deficitTime = 250 * time.Millisecond

// Count takes a provider's count c, read at now, and reckons the pace that
// spends what it says is left: what is left after the calls admitted
// since, spread over the time to the reset (a whole-second reset may be up
// to a second late), plus what the provider has been adding back net of
// what others take — measured from successive counts, so that on a key
// shared with clients pacer does not control the scope spends only what
// is left.
//
// In a shared store whose takes say what the whole fleet took (c.Fleet),
// what the fleet spent between two counts is known, as one process knows
// its own, and the fleet measures what the provider gives back net of what
// real neighbours take, as a local scope does. Without it the other
// processes' calls would count as a neighbour's, so only the spread
// applies, never at the edge.
//
// It takes the count into the record (take), reads it against what the
// record has seen (read: what is left now, the margin, how long to spread
// it over), and reckons the pace by the rules of rules.go in turn
// (reading.pace); a count of none left may pause the scope instead
// (reading.noneLeft). An answer overtaken by a later one is old news
// (overtaken): it says what is left, and sets no pace.
//
// A negative count or reset is no count: the zero Verdict.
func (o *Record) Count(now time.Time, c Count, sc Scope) (v Verdict) {
	if c.Reset < 0 || c.Remaining < 0 {
		return v
	}
	o.peak = max(o.peak, float64(c.Remaining))
	o.rebase(c)
	// A fleet that knows what it spent measures what comes back as one
	// process does.
	local := c.Local || c.Fleet
	// A refusal counts even in an answer overtaken by a later one: the
	// baseline took every call admitted before it as counted.
	o.refused += c.Refused
	sent := c.Sent
	if sent <= 0 || sent > now.UnixNano() {
		sent = now.UnixNano() // unknown: counted as it arrived
	}
	o.rtt.Observe(now.UnixNano() - sent)
	// When the server counted: the call's admission plus half the
	// shortest round trip seen, never later than now. Measured so, what
	// comes back does not depend on how late a busy host reads the
	// answer, nor on the jitter of the way back.
	seen := min(now.UnixNano(), sent+o.rtt.Floor/2)
	if c.Mark < o.latest {
		return o.overtaken(now, c, sc, sent, local)
	}
	o.take(now, seen, c, local, sc)
	k := o.read(now, seen, sent, c, local, sc)
	rate := k.pace(sc)
	v.Left = k.left
	if pause, none := k.noneLeft(sc); none {
		v.None, v.Pause = true, pause
		return v
	}
	v.Paced, v.Rate, v.Young, v.Roomless, v.WakeOne = true, rate, k.first && !k.full, k.roomless, k.wakeOne
	v.Why = k.why()
	// A count holds until its reset, at the latest.
	v.Hold = min(k.reset+WholeSecondSlack(k.reset), sc.MaxWait)
	v.Holds = k.room + 1 // what the count showed, and the call it answered
	// The configured pace is more than the server holds in its window, and
	// the count gives back as it goes: what wakes a waiting call spends no
	// faster than it does (LivePace.WakeAtMost).
	if k.gradual && k.local && !k.fleet && k.known && !k.first && k.supply > 0 && sc.Blind*k.window.Seconds() > k.room+1 {
		v.WakeAtMost = k.supply + max(0, k.left)/v.Hold.Seconds()
	}
	return v
}

// rebase starts the record's measures afresh when the marks c is read
// against changed their unit (the fleet's total from the scope's own
// spent, as when a store stops counting), or the store forgot the bucket,
// full, and started its total again: every baseline is read against the
// marks. A step back of a few calls is only the order in which calls were
// admitted and answered.
func (o *Record) rebase(c Count) {
	if c.Fleet != o.fleet || c.Fleet && float64(o.latest-c.Mark) > 2*max(o.peak, float64(c.Limit), 1) {
		o.fleet, o.at, o.latest = c.Fleet, 0, 0
		o.span, o.nheld = countSample{}, 0
	}
}

// overtaken reads the count c in an answer overtaken by a later one, at
// now: old news, which sets no pace. Its Verdict says only what is left
// now by its reading; the call it answers was admitted at sent, and local
// says the record knows every call spent from the count.
func (o *Record) overtaken(now time.Time, c Count, sc Scope, sent int64, local bool) (v Verdict) {
	v.Left = float64(c.Remaining) - float64(o.spentSince(c.Mark, sc.Spent, c.Fleet)+c.Unanswered) + o.flownBack(now, sent)
	refill, turns := o.refill(now, sc.Per)
	if !turns {
		return v
	}
	switch {
	case c.Mark < o.refillMark && float64(c.Remaining)+refillJump(c.Limit, o.peak) < o.refillCount:
		// A fixed window's count from before its latest turn says
		// nothing of the window now: taken as what is left, the
		// answers overtaken at a turn emptied the new window's
		// bucket one after another. It is one admitted before the
		// call that showed the turn, and lower than that call's by
		// as much as a refill adds: a count made after the turn is
		// about as high, or lower by the few calls counted
		// between.
		v.Before = true
	default:
		if next := o.nextCount(now, refill, c.Limit, local, sc); next >= 0 {
			// The calls sent from now on spend the next window (reading.nextWindow).
			v.Left = next
		}
	}
	return v
}

// take takes the count c, made when the server counted (seen), into the
// record: the latest mark, the interval between reports, the measure of
// what the provider gives back, the counts kept for what it gave back over
// seconds, the resets, and the span others' spending is read over.
func (o *Record) take(now time.Time, seen int64, c Count, local bool, sc Scope) {
	r := float64(c.Remaining)
	o.latest = c.Mark
	if o.last != 0 {
		if dt := float64(seen-o.last) / 1e9; dt > 0 {
			o.interval += (dt - o.interval) / 8
		}
	}
	o.last = max(o.last, seen)
	o.measure(now, seen, r, c.Mark, c.Limit, local, c.Burst, sc)
	if n := o.nheld; n == 0 || seen-o.held[(n-1)%len(o.held)].at >= int64(heldEvery) {
		o.held[n%len(o.held)] = countSample{seen, r, c.Mark, o.refused}
		o.nheld++
	}
	turned := o.noteReset(seen, c.Reset, r, c.Limit, local, o.quiet(now))
	if turned {
		o.givesBackFromTurn(now, r, c.Limit, local, sc)
	}
	if o.span.at == 0 && o.first != 0 && now.UnixNano()-o.first >= int64(TrustAfter) || o.refillAt == now.UnixNano() || turned {
		o.span = countSample{seen, r, c.Mark, o.refused}
	}
	if o.first == 0 {
		o.first, o.blindSpent = now.UnixNano(), max(sc.Spent, int64(math.Ceil(sc.Burst)))
	}
}
