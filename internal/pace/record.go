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

	refusals    [32]refusedCall // the latest refusals, by mark (spentSince)
	nrefusals   int
	refusedLast int64 // UnixNano of the latest refusal, counted or not (Refused)

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
	// firstSighting is the first refill of those seen a window apart.
	firstSighting int64
	// What the scope had spent by each of the latest reports, oldest
	// first from sends[nsends%len]: the calls sent since a moment, to
	// the resolution of the answers (spentBy).
	sends  [64]spentSample
	nsends int

	// The window the provider does not state, from successive resets.
	lastReset int64         // UnixNano of the latest reset seen
	candidate time.Duration // the shortest gap between resets seen so far
	window    time.Duration // a window learned; 0 until one is

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
	Mark    int64
	Refused int64 // the answered call's cost if the provider refused it, which it did not spend; else 0
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
	// while no window is learned from the resets.
	Per time.Duration
	// BlindWithin says the blind pace is within the count's published
	// limit: the published limit's, or a configured one that counts no
	// more per window.
	BlindWithin    bool
	CountsRequests bool // the scope counts requests, not tokens or money
	MaxWait        time.Duration
	// CostlyRefusals says a refusal has paused the scope for longer than
	// BriefRetryAfter, within CostlyFor of it: the server has shown that a
	// call sent into none left costs more than the call (Count's None).
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
	// (Rate is Unreported), and Room is the most calls it has shown it
	// holds at once, the burst a server's bucket takes.
	Roomless bool
	Room     float64
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

// neighbourNoise is the share of the blind pace by which the remaining
// count may fall faster than the scope spends before another client is
// taken to spend on the key: calls counted in another order than they were
// admitted in move the count by a call or two over the span measured.
const neighbourNoise = 0.05

// catchUpTime is how soon a scope spends what remains beyond its margin
// when the reset is a second or two away.
const catchUpTime = 500 * time.Millisecond

// deficitTime is how soon a scope that has spent into its margin gives it
// back.
const deficitTime = 250 * time.Millisecond

// supplyTime is how long the measure of what a provider adds back takes to
// follow a change.
const supplyTime = 300 * time.Millisecond

// driftTime is how long the measure of whether others spend on the key
// takes to follow a change: over a jittery route, counts made in the order
// calls arrived, read against marks in the order they were sent, move the
// measure over supplyTime by a fifth of the pace either way (a 200–400 ms
// round trip at 100 a second), and a scope alone read itself as beside a
// neighbour one report in five. Over a second the noise is a third of it;
// a neighbour's spending lasts.
const driftTime = time.Second

// supplySpan is the shortest time over which a scope measures what the
// provider adds back. Calls in flight together are counted by the provider
// in another order than they were admitted in, and answered microseconds
// apart: a count that moves by a call or two between two such answers is
// that order, not thousands of calls a second given back. Over a tenth of
// a second, sixteen callers' disorder is a few calls.
const supplySpan = 100 * time.Millisecond

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
// A negative count or reset is no count: the zero Verdict.
func (o *Record) Count(now time.Time, c Count, sc Scope) (v Verdict) {
	if c.Reset < 0 || c.Remaining < 0 {
		return v
	}
	remaining, reset, limit, spentAt, local, fleet := c.Remaining, c.Reset, c.Limit, c.Mark, c.Local, c.Fleet
	r := float64(remaining)
	o.peak = max(o.peak, r)
	if fleet != o.fleet || fleet && float64(o.latest-spentAt) > 2*max(o.peak, float64(limit), 1) {
		// The marks changed their unit (the fleet's total from the
		// scope's own spent, as when a store stops counting), or the
		// store forgot the bucket, full, and started its total again:
		// measure afresh from this count — every baseline read against
		// the marks. A step back of a few calls is only the order in
		// which calls were admitted and answered.
		o.fleet, o.at, o.latest = fleet, 0, 0
		o.span, o.nheld = countSample{}, 0
	}
	// A fleet that knows what it spent measures what comes back as one
	// process does.
	local = local || fleet
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
	if spentAt < o.latest {
		// An answer overtaken by a later one: old news.
		v.Left = r - float64(o.spentSince(spentAt, sc.Spent, fleet)) + o.flownBack(now, sent)
		if refill, turns := o.refill(now, sc.Per); turns {
			switch {
			case spentAt < o.refillMark && r+refillJump(limit, o.peak) < o.refillCount:
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
				if next := o.nextCount(now, refill, limit, local, sc); next >= 0 {
					// The calls sent from now on spend the next window (Count).
					v.Left = next
				}
			}
		}
		return v
	}
	o.latest = spentAt
	if o.last != 0 {
		if dt := float64(seen-o.last) / 1e9; dt > 0 {
			o.interval += (dt - o.interval) / 8
		}
	}
	o.last = max(o.last, seen)
	o.measure(now, seen, r, spentAt, limit, local, sc)
	if n := o.nheld; n == 0 || seen-o.held[(n-1)%len(o.held)].at >= int64(heldEvery) {
		o.held[n%len(o.held)] = countSample{seen, r, spentAt, o.refused}
		o.nheld++
	}
	turned := o.noteReset(seen, reset, r, limit, local)
	if o.span.at == 0 && o.first != 0 && now.UnixNano()-o.first >= int64(TrustAfter) || o.refillAt == now.UnixNano() || turned {
		o.span = countSample{seen, r, spentAt, o.refused}
	}
	if o.first == 0 {
		o.first = now.UnixNano()
	}
	// Until TrustAfter, the measure of what the provider gives back is too
	// young to go by. Never below nothing: a neighbour's share is already
	// out of what remains, and a negative measure is as likely the noise
	// of calls answered out of order, which would stall the scope.
	supply, first := 0.0, !o.known || now.UnixNano()-o.first < int64(TrustAfter)
	refill, turns := o.refill(now, sc.Per)
	if local && o.known {
		supply = o.netSupply(seen, r, spentAt, turns, sc.Blind)
	}
	// Nobody else is seen spending on the key: over the span measured, the
	// count fell no faster than the scope spent, within the noise of calls
	// counted out of order (neighbourNoise).
	alone := o.alone(local, sc.Blind)
	left := r - float64(o.spentSince(spentAt, sc.Spent, fleet)) + o.flownBack(now, sent)
	if supply < 0 {
		// What a neighbour on a fixed window took since the count was made
		// is gone as surely as what a sliding window gives back comes
		// back (flownBack): left in, the scope spent the neighbour's last
		// calls of each window, and both were refused at its end.
		left += supply * float64(now.UnixNano()-sent) / 1e9
	}
	// A fixed window counts each call when it arrives, and refills at
	// regular intervals (NextRefill), its window's length: a call sent
	// later than a round trip's floor before the refill the answers see
	// arrives after it, so this window's count is spent by then (land,
	// below). While nobody else is seen spending on the key (windowed),
	// the next window's count is the scope's too (next, below).
	floor := time.Duration(o.rtt.Floor)
	lands := turns && limit > 0 && o.refillEvery > floor
	windowed := alone && lands
	margin := 1.0
	if limit > 0 {
		margin = max(0.25, Margin*float64(limit))
	}
	// A count read over a jittery route is as uncertain as what comes
	// back in the jitter of half a trip: on a 200–400 ms round trip at
	// 100 a second, five calls. Kept as margin, it is what the count's
	// age may hide; without it one call in seventy was refused.
	margin = max(margin, supply*(o.rtt.Spread/1e9)/2)
	peak := o.peak
	// full: the count, as the server made it, is at its peak, and nothing
	// was refused of late (after a refusal, a full count is the refill the
	// scope found the edge of, not room). Not net of the calls in flight:
	// over a round trip, thirty of them are, and a bucket that refills
	// faster than the scope spends gave them back before they arrived.
	full := local && o.known && peak >= 2 && r >= peak-1 && now.UnixNano()-o.refusedLast > int64(TrustAfter)
	// A fixed window counts a call when it arrives: one sent later than a
	// round trip's floor before the turn the answers see arrives after it
	// (the turn is seen at least half a floor late, and a call arrives at
	// least half a floor after it is sent), and spends the next window.
	// Once the turn is nearer than the floor (land ≤ 0), every call sent
	// from now on does, and so do those sent since land ago: what this
	// window has left is no longer the scope's to spend, and the next
	// window's is its limit less those. Read against this window's count,
	// the calls in flight emptied the bucket at every window's end and the
	// next began a round trip late.
	var land time.Duration
	if lands {
		land = refill - floor
	}
	next := -1.0
	if windowed {
		o.sends[o.nsends%len(o.sends)] = spentSample{now.UnixNano(), max(0, sc.Spent)}
		o.nsends++
		next = o.nextCount(now, refill, limit, local, sc)
	}
	// A count with no room for its margin: a server bucket that holds
	// about one call reads empty after every call it accepts, so its
	// zeros are its size, not a scarcity, and what it was measured to
	// give back is only what the scope asked of it. Read as scarcity,
	// each answer took the pace a little lower, and a server of 100 a
	// second with a burst of one was paced at 2 a second. Such a count
	// sets no pace: the limit does, at a burst the count's room holds,
	// and a refusal cuts it as a bare 429 does (the root's learn step).
	// The room is what the count has shown after a call it accepted, or
	// what a published limit says it holds.
	room := max(peak, float64(limit)-1)
	roomless := sc.CountsRequests && room <= margin+1
	// Spread over the reset as stated: a whole-second reset may be up to a
	// second later, but spending what is left a little early is safe (the
	// clamp keeps the bucket within it), and spreading it over the longer
	// time would leave a one-second window half used. Once what comes
	// back is measured, a reset a second or two away is as likely a
	// sliding window's, which gives back what was spent a window ago, as a
	// fixed one's: close the gap to the margin within half a second, and
	// let the clamp and the margin guard.
	// A correction reaches the server a round trip after the count that
	// asked for it, and its effect comes back in the counts a trip after
	// that: corrected faster than that, the pace swung between a crawl
	// and the blind pace on a one-second route. So a gap is closed over
	// no less than a round trip, and spent toward the reset over no less
	// than two.
	trip := time.Duration(o.rtt.Floor) + time.Duration(o.rtt.Spread)
	catchUp, deficit := max(catchUpTime, 2*trip), max(deficitTime, trip)
	horizon := spreadOver(reset, catchUp, refill, land, lands, !first || full)
	rate := supply + (left-margin)/horizon.Seconds()
	if left < margin {
		// Below the margin, slow down within a fraction of a second (or
		// a round trip), not by the reset: on a sliding window the next
		// call may be refused. But not below half the blind pace while
		// nothing was refused of late: the calls are what bring the news
		// that the margin is back, and none left at all pauses the scope
		// (PauseForNoneLeft) anyway. After a refusal the server has shown
		// that half the blind pace is too much — other clients take the
		// rest, or the limit is below the configured one — and the count
		// paces alone: held at half the blind pace, three processes each
		// told the whole limit of a sliding window had one call in five
		// refused.
		rate = supply + (left-margin)/min(horizon, deficit).Seconds()
		if now.UnixNano()-o.refusedLast > int64(TrustAfter) {
			rate = max(rate, sc.Blind/2)
		}
	}
	// How long what is left must last at the blind pace for the count to
	// leave that pace alone: until the reset — or, while what the
	// provider gives back is unmeasured, until the soonest a whole-second
	// reset may be, if the blind pace is within the published limit and
	// nobody else is seen spending on the key. A reset stated as a second
	// away may be a moment away, and what is left spread over the whole
	// second slowed the pace at each count by what had been spent since:
	// the first two seconds of a sliding window lost a fifth of their
	// calls. A scope in a shared store whose takes do not say what the
	// fleet took (store.Decision.Taken) never measures what comes back
	// (the fleet's other processes spend as a neighbour would), and
	// spreading held a fleet at half the limit for good: it keeps its
	// blind pace the same way, the shared bucket clamped to what remains.
	// Its first window can leave an unpaced neighbour short, which nothing
	// tells apart from the fleet until the window turns. One whose takes
	// say it measures as a local scope does (local is set above).
	lasts := max(reset, horizon)
	if first && (alone || !local) && sc.BlindWithin {
		lasts = max(0, reset-WholeSecondSlack(reset))
	}
	if left >= margin && left-margin >= (sc.Blind-supply)*lasts.Seconds() {
		// What is left lasts until the reset at the blind pace: the count
		// may raise the pace toward the edge, not lower it below the
		// blind one.
		rate = max(rate, sc.Blind)
	}
	// What the server did outranks what one count seems to say. Over a
	// jittery route a count is a few calls above or below the truth (calls
	// counted in another order than they were sent in), and read against
	// the margin within a round trip the pace dipped by a fifth at every
	// low one while the server refused nothing. What a count gave back
	// over seconds without a refusal it goes on giving back (a sliding
	// window returns what was spent a window ago, a bucket refills at its
	// rate): the scope keeps that pace, and closes a gap to
	// the margin over those seconds, not a round trip. Only for a reset
	// within those seconds: what a sliding window of a minute gives back
	// is what was spent a minute ago, which says nothing of the next
	// seconds, and held to it a window told twice its limit ran out before
	// its reset. Not a fixed window seen to turn, which gives nothing back
	// before its turn; not a count of none, whose rule is below; not a
	// fleet, whose spending the marks do not all say.
	back, refusedNone, unrefilled := o.givenBack(seen, r, spentAt)
	if held := back + min(0, left-margin)/heldSpan.Seconds(); refusedNone && reset <= heldSpan && local && !fleet && !first && !turns && r > 0 && held > rate {
		rate = held
	}
	if full && first {
		// A count that holds at its peak while the scope spends is a
		// bucket refilling at least as fast: it says the scope is below
		// the server's rate, not by how much. Before what comes back is
		// measured long enough to go by (TrustAfter), such a count sets no
		// pace of its own: read as the rate, the young measure followed
		// the scope's own pace up, and the pace the measure, and a token
		// bucket of 100 a second took a second and a half to be spent.
		// Once it is measured, the measure paces: a neighbour the full
		// bucket hid took its share back as the count fell.
		rate = max(rate, sc.Unreported)
	}
	if turns {
		// A fixed window seen to refill every so often is full again at
		// its next refill, whatever this count said of the one ending: a
		// call is due by then. At the crawl a count near the end of a
		// window set, the calls waiting slept on past the refill with
		// nothing in flight to bring its news, the new window unspent.
		// One call, not the blind pace: the refill is a guess, and the
		// calls sent before it were refused.
		rate = max(rate, OneCallBy(refill))
	}
	if next >= 0 {
		// The calls sent from now on spend the next window (land, above).
		left = next
		rate = max(rate, (next-margin)/(o.windowOr(sc.Per)+land).Seconds())
	}
	if windowed {
		// A fixed window lets its count through in each window, no more:
		// a pace above it only sends the window's calls early, and over a
		// round trip they arrive at the turn as one burst, some in the
		// window before.
		rate = min(rate, float64(limit)/o.windowOr(sc.Per).Seconds())
	}
	if roomless {
		rate = sc.Unreported
	}
	// However little is left, the scope sends again within the maximum
	// wait, and a corrected count can teach it back.
	rate = max(rate, sc.Floor)
	v.Left = left
	// A count that gave back a quarter of the blind pace or more over the
	// latest seconds, without a refill, gives back as it goes: a fixed
	// window gives nothing back before it refills. Paused to its reset, a
	// bucket of 50 at 10 a second, spent at twice that until none was
	// left, sat out the five seconds its reset said it takes to be full,
	// every half minute. Not once the server refused a call meanwhile:
	// what came back before is no licence to send into refusals, and a
	// server that turned to refusing every call with none left was sent
	// twenty more.
	givesBack := unrefilled && refusedNone && local && !fleet && back >= sc.Blind/4
	if remaining == 0 && !o.gradual && !givesBack {
		// The scope pauses until the reset and probes at its own pace
		// after it: the count sets no pace of its own. Not a count that
		// was seen not to refill at its reset (gradual), or to give back
		// as it goes: paused to the reset, a sliding window of a minute
		// found the new window as empty and paused again, and half the
		// limit went unspent. It paces by what comes back instead.
		pause := PauseForNoneLeft(reset, sc.MaxWait)
		if sc.CostlyRefusals {
			// A reset in whole seconds may already be here, and the scope
			// does not stop for it (PauseForNoneLeft) — unless a refusal
			// has cost a pause of more than a second: httprate answers
			// each with Retry-After: the window, a minute. Then it is
			// waited out to its slack. Sent into it, the first call at
			// each turn of a window of a minute was refused, and a minute
			// of every two went unspent.
			pause = min(max(pause, reset+WholeSecondSlack(reset)), sc.MaxWait)
		}
		if pause > 0 {
			v.None, v.Pause = true, pause
			return v
		}
	}
	v.Paced, v.Rate, v.Young, v.Roomless = true, rate, first && !full, roomless
	switch {
	case roomless:
		v.Why = "a count with no room for its margin: the limit paces, at the burst the count holds"
	case next >= 0:
		v.Why = "a fixed window's turn is nearer than a round trip: the next window's count, less the calls on their way to it"
	case turns:
		v.Why = "a fixed window, spent to its next turn"
	case full && first:
		v.Why = "a count that holds full while the scope spends: below the server's rate"
	}
	// A count holds until its reset, at the latest.
	v.Hold = min(reset+WholeSecondSlack(reset), sc.MaxWait)
	if roomless {
		v.Room = room + 1 // what the count showed, and the call it answered
	}
	return v
}

// netSupply is what the provider gives back, units a second, net of what
// others are seen to take from the key, read from the count r made when
// the call admitted at spentAt was counted (seen); turns says a fixed
// window's turns are known. Never below minus the blind pace blind.
func (o *Record) netSupply(seen int64, r float64, spentAt int64, turns bool, blind float64) float64 {
	supply := max(0, o.supply)
	if take, span := o.othersTake(seen, r, spentAt); !turns && span >= othersSpan && take > o.neighbourNoise(blind, span) {
		// Before any turn is seen, whatever the window: a count that
		// fell faster than the scope spent over seconds is another
		// client's spending, which goes on until the reset. Spread
		// over the reset without it, what was left ran out seconds
		// before a minute's window turned, and the neighbour was
		// refused one call in twenty.
		supply = max(-take, -blind)
	} else if turns && o.drift < -o.neighbourNoise(blind, driftTime) {
		// A fixed window gives nothing back before it refills: a count
		// that falls faster than the scope spends is another client's,
		// who goes on spending until the refill. Left out, the scope
		// spent the window's count by seven tenths of it, and the
		// neighbour found it empty.
		supply = max(o.drift, -blind)
	}
	return supply
}

// measure takes what the count r, made when the call admitted at spentAt
// was counted (seen), says the provider gave back since the count the
// measure starts from: a refill (a large part of the limit at once), or,
// over supplySpan or more, the supply and drift measures. It moves the
// measure's start to this count when it measured, and for a count that
// cannot be measured against (not local, or the first).
func (o *Record) measure(now time.Time, seen int64, r float64, spentAt, limit int64, local bool, sc Scope) {
	move := o.at == 0 || !local
	if o.at != 0 && local && spentAt >= o.spent && seen > o.at {
		dt := float64(seen-o.at) / 1e9
		// What the provider's count says it added back: the calls
		// admitted since that it did not count — less those it refused,
		// which it never counted, and which would otherwise read as
		// quota given back as fast as the scope sends into the refusals.
		gain := r - o.remaining + float64(spentAt-o.spent) - float64(o.refused-o.refusedAt)
		// A gain of a large part of the limit at once is a fixed window
		// refilled at its reset, not a rate: spreading takes care of it.
		// But what came back over the span at up to the pace the scope
		// may go is supply, not a refill: a token bucket of 11 that
		// refills at 100 a second gives back 10 in a tenth of a second,
		// and read as refills it measured no supply at all. So does a
		// process of a fleet that hears a report only every second or
		// two, when the others win the shared bucket's tokens (a fleet
		// of four beside a neighbour took 0.86 of what was left).
		jump := refillJump(limit, o.peak) + dt*max(sc.Blind, sc.Configured)
		switch {
		case gain > jump:
			move = true
			apart := true
			if o.refillAt != 0 {
				g := time.Duration(now.UnixNano() - o.refillAt)
				if d := g - o.refillGap; d < g/10 && -d < g/10 || o.refillEvery == 0 {
					o.refillEvery = g
				}
				o.refillGap = g
				apart = windowsApart(g, o.refillEvery)
			}
			o.refillAt = now.UnixNano()
			if apart {
				// What a window took, if the refills are a window's: not
				// over a gap off their period. A token bucket's count
				// jumps when answers overtake each other; two such jumps
				// a second apart, then two a tenth of a second apart, read
				// as a window of a second that let through ten, and a
				// bucket of a hundred a second was paced at eleven.
				o.refillSpent = spentAt - o.refillMark
			}
			o.refillMark, o.refillCount = spentAt, r
			// After the window's spent is known: whether the refills are a
			// window's turning depends on it.
			o.phase(sc.Per)
		case dt >= supplySpan.Seconds():
			// Averaged over several reports, at least supplyTime: one
			// report's count is rounded to a whole call, and calls are
			// answered in another order than they were admitted in.
			o.supply = o.follow(o.supply, gain/dt, dt, max(supplyTime.Seconds(), 8*o.interval))
			o.drift = o.follow(o.drift, gain/dt, dt, max(driftTime.Seconds(), 16*o.interval))
			o.known = true
			move = true
		}
	}
	if move {
		o.at, o.remaining, o.spent, o.refusedAt = seen, r, spentAt, o.refused
	}
}

// noteReset takes the reset a count r named, made at seen, and reports
// whether the count turned at the reset the one before named.
func (o *Record) noteReset(seen int64, reset time.Duration, r float64, limit int64, local bool) (turned bool) {
	// A count made once the reset the one before named was due, which
	// names a later one: the count turned at that reset. A fixed window
	// is full then (Record.refill). One with no room, and no refill seen
	// ever, does not refill at its resets: a sliding window gives back
	// what was spent a window before as it goes, and at its turn is as
	// empty as before it (gradual; Count's None).
	//
	// So does a count that names a reset beyond the soonest one an earlier
	// count named, before that one came: its reset moved later as the
	// count was spent. A window's end stays where it is while its count
	// falls; a bucket's reset is when it will be full again, and it gives
	// back as it goes. Paused to that reset, a token bucket of 10 a
	// second and 51 in hand, emptied by the first burst, sat out the five
	// seconds it takes to be full while it took ten a second.
	at, due := seen+int64(reset), seen+int64(reset+WholeSecondSlack(reset))
	turned = o.dueAt != 0 && seen >= o.resetAt && at > o.dueAt
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

// spreadOver is how long what is left is spread over: the reset as
// stated; no longer than catchUp for a reset of a second or two once the
// count is settled (what comes back is measured, or the count holds full
// while the scope spends); and for a fixed window seen to refill, no later
// than its next refill (refill), or than the time after which a call sent
// lands beyond it (land, when lands). Spending what is left early is
// safe: the clamp keeps the bucket within it (Count).
func spreadOver(reset, catchUp, refill, land time.Duration, lands, settled bool) time.Duration {
	horizon := reset
	if reset == 0 {
		// Within the second, for a reset in whole seconds (httprate's
		// near the end of its window); a reset that is exactly now says
		// only that what remains is about to grow.
		horizon = catchUp
	}
	if horizon <= 2*time.Second && settled {
		// A count that stays at its peak while the scope spends, before
		// what comes back is measured too, is a bucket refilling faster
		// than the scope spends: its reset is when it is full again, not
		// a window's end (a window's count falls as it is spent).
		horizon = min(horizon, catchUp)
	}
	if refill > 0 && WholeSecondSlack(reset) > 0 {
		// A fixed window seen to refill every so often: its reset is when
		// it refills next, which the whole-second reset cannot say within
		// a second. Spread over the whole second instead, the pace follows
		// what is left down and leaves a fifth of each window unspent.
		// The refill is seen by the first answer after it, so the estimate
		// errs late, and spending early is safe.
		horizon = min(horizon, max(refill, RefillFloor))
		if lands {
			// A call sent later than a round trip's floor before the
			// refill the answers see arrives after it (Count's land).
			horizon = min(horizon, max(land, RefillFloor))
		}
	}
	return horizon
}

// heldSpan is the least span givenBack reads over: over two seconds, the
// calls counted in another order than they were sent in are a call a
// second or two, where over supplyTime they are a fifth of the pace.
// heldEvery is how far apart the counts it reads are kept.
const (
	heldSpan  = 2 * time.Second
	heldEvery = 250 * time.Millisecond
)

// givenBack is what the provider gave back over the latest heldSpan or
// more, in units a second, read from the count r made when the call
// admitted at spentAt was counted (seen): how much less the count fell
// than the scope spent, its refused calls left out. refusedNone says the
// server refused none of the scope's calls meanwhile; unrefilled, that
// the count did not refill meanwhile (a fixed window's turn, or a bucket
// left to fill while the scope paused): a refill is not a rate. All three
// are zero while no count that old is kept.
func (o *Record) givenBack(seen int64, r float64, spentAt int64) (perSecond float64, refusedNone, unrefilled bool) {
	n := min(o.nheld, len(o.held))
	for i := range n {
		s := o.held[(o.nheld-1-i)%len(o.held)]
		span := seen - s.at
		if span < int64(heldSpan) {
			continue
		}
		refusedNone = o.refused == s.refused && o.refusedLast < s.at
		return max(0, s.gaveBack(r, spentAt, o.refused)) / (float64(span) / 1e9), refusedNone, o.refillAt < s.at
	}
	return 0, false, false
}

// follow moves a measure from was toward x, seen over dt seconds, so that
// it follows a change within span seconds; the first measure is x itself.
func (o *Record) follow(was, x, dt, span float64) float64 {
	if !o.known {
		return x
	}
	return was + min(1, dt/span)*(x-was)
}

// nextCount is, once a fixed window's turn is nearer than the round
// trip's floor (Count's land ≤ 0), what the next window has left for the
// calls sent from now on: its limit less the calls sent since land ago,
// already on their way to it; -1 before then, for a scope not seen alone
// on the key, or when no count that old is kept. refill is the turn's
// NextRefill.
func (o *Record) nextCount(now time.Time, refill time.Duration, limit int64, local bool, sc Scope) float64 {
	floor := time.Duration(o.rtt.Floor)
	alone := o.alone(local || o.fleet, sc.Blind)
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

// neighbourNoise is how much faster than the scope spends, in units a
// second, the count may fall over span before another client is taken to
// spend on the key, at a blind pace of blind: neighbourNoise of it, or,
// over a jittery route, the calls in the jitter of the round trip (its
// spread) over span. A count is made when a call arrives and read against
// the order calls were sent in: on a 200–400 ms round trip at 100 a
// second, a count is a dozen calls ahead or behind, and a measure over
// supplyTime moves by a fifth of the pace either way.
func (o *Record) neighbourNoise(blind float64, span time.Duration) float64 {
	return max(neighbourNoise*blind, blind*(o.rtt.Spread/1e9)/span.Seconds())
}

// alone reports whether nobody else is seen spending on the key: over the
// spans measured, the count fell no faster than the scope spent, within
// the noise of calls counted out of order (neighbourNoise), both of late
// (supply, which sees a neighbour soon) and over driftTime (drift, which a
// jittery route's disorder moves less).
func (o *Record) alone(local bool, blind float64) bool {
	return local && o.known && o.supply > -o.neighbourNoise(blind, supplyTime) && o.drift > -o.neighbourNoise(blind, driftTime)
}

// othersSpan is the shortest span over which othersTake is read: over a
// round trip of up to a second, the calls counted in another order than
// they were sent in move a count by a few calls, a call a second in two
// seconds.
const othersSpan = 2 * time.Second

// othersTake is what others spent on the key, units a second, over the
// span since o.span, read from the count r, made when the call admitted at
// mark spentAt was counted (seen): how much faster than the scope spent
// the count fell, what the scope had refused left out. The span's length
// is the second result. Over a span this long, the calls counted in
// another order than they were admitted in are a few calls, not the
// dozens of the first burst; a measure that follows each count (drift)
// read them as a neighbour, and stalled a scope alone.
func (o *Record) othersTake(seen int64, r float64, spentAt int64) (float64, time.Duration) {
	if o.span.at == 0 || seen <= o.span.at {
		return 0, 0
	}
	span := time.Duration(seen - o.span.at)
	return -o.span.gaveBack(r, spentAt, o.refused) / span.Seconds(), span
}

// refillJump is the least a fixed window's refill adds to a count whose
// published limit is limit (-1 if none) and whose peak is peak: a large
// part of the limit at once.
func refillJump(limit int64, peak float64) float64 {
	return max(3, 0.2*math.Max(float64(limit), peak))
}

// Refused notes that the provider refused, at now, a call of cost admitted
// at mark (Count.Mark): it never counted it, and never will.
func (o *Record) Refused(now time.Time, mark, cost int64) {
	o.refusals[o.nrefusals%len(o.refusals)] = refusedCall{mark, cost}
	o.nrefusals++
	o.refusedLast = now.UnixNano()
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

// phase dates a window's turns from the latest refills seen, once they
// are a window's turning: a window's turn is seen by the first answer
// counted after it, a way back and then some after it, so the earliest of
// the latest few refills, each carried on the period to the latest, is
// nearest the turn. The period is the window's, or longer: a window that
// starts at the first call after the last one ended (as ulule/limiter's
// and GitHub's do) turns a call's gap later each time, measured over the
// refills since they were first seen a window apart. Dated by the latest
// refill alone, the predicted turns wandered by the jitter of the round
// trip, and the gap between two refills by twice it (1.047 s for a window
// of a second): the calls due by a turn were sent late. Carried on the
// window alone, old refills dated the turns early by the gaps since, and
// calls were sent into a window that had not turned.
func (o *Record) phase(per time.Duration) {
	if !o.refillsByWindow(o.refillEvery, per) || o.nsightings == 0 {
		o.sightings[0], o.nsightings, o.firstSighting = o.refillAt, 1, o.refillAt
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

// Supply is what the provider has been measured to add back, net of what
// others take, in units a second; measured is false until a first measure.
func (o *Record) Supply() (perSecond float64, measured bool) { return o.supply, o.known }

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

// spentSince is what was spent since mark, spent being what is spent now
// (spentSince), less what the provider has refused since mark as far as
// the answers in hand say: a refused call was never counted, and never
// will be. Taken off again, the calls refused in a burst sent together
// read as spent, and an empty bucket stalled the scope for seconds. The
// fleet's refusals are not all this process's to know.
func (o *Record) spentSince(mark, spent int64, fleet bool) int64 {
	n := SpentSince(mark, spent, fleet)
	if fleet {
		return n
	}
	for _, r := range o.refusals[:min(o.nrefusals, len(o.refusals))] {
		if r.mark > mark {
			n -= r.cost
		}
	}
	return max(0, n)
}

// SpentSince is what was spent since mark, a call's spent units at its
// admission, with spent spent now: the scope's own, or, when fleet is set,
// what the whole fleet took from the shared bucket as the latest take
// said, which may be a few calls behind a call answered out of order:
// never below nothing.
func SpentSince(mark, spent int64, fleet bool) int64 {
	if fleet {
		return max(0, spent-mark)
	}
	return spent - mark
}

// A refusedCall is a refused call's mark and cost (Refused).
type refusedCall struct{ mark, cost int64 }

// A spentSample is what the scope had spent at a count.
type spentSample struct{ at, spent int64 }

// spentBy returns what the scope had spent by t, as the latest count at or
// before it saw; ok is false when no count that old is kept.
func (o *Record) spentBy(t time.Time) (spent int64, ok bool) {
	at := t.UnixNano()
	n := min(o.nsends, len(o.sends))
	for i := range n {
		smp := o.sends[(o.nsends-1-i)%len(o.sends)]
		if smp.at <= at {
			return smp.spent, true
		}
	}
	return 0, false
}

// flownBack is what the provider gives back, by the supply measured,
// between counting the call admitted at sent (UnixNano) and the arrival of
// a call sent now: a sliding window returns what was spent a window ago, a
// bucket refills. The calls sent since the counted one arrive over that
// span too, so the two are read over the same time: the count's age on
// the way back, and a new call's on the way there, about one round trip.
// Over a round trip of 300 ms at 100 a second, 30 calls are in flight, and
// a window that gives back what it was given keeps what remains where it
// is: taking off the calls in flight alone read that as scarcity, and
// paced a sliding window at 0.73.
func (o *Record) flownBack(now time.Time, sent int64) float64 {
	if !o.known || o.supply <= 0 || sent <= 0 || sent > now.UnixNano() {
		return 0
	}
	return o.supply * float64(now.UnixNano()-sent) / 1e9
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
