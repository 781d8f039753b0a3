package pace

import "time"

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
	turnDue   int64         // UnixNano by which the long window's turn the counts are at is due (atTurn); 0 when not at one
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
	// Below the margin at a long window's turn (atLongTurn), the scope
	// learns what the turn brought one call at a time (Verdict.WakeOne),
	// not at half its blind pace: a refusal there may cost the next
	// window. httprate's windows start when its limiter does and its
	// reset is the window's end in whole seconds, so its turn comes up to
	// a second after the reset says; sent at half the blind pace into a
	// turn of a minute that gave nothing back, over a route of 300 ms, a
	// call was refused and its Retry-After (the window) cost half the
	// quota. A reset that never comes is no turn (atTurn): a count that
	// said "1 s" at every answer held the scope at a call every two
	// seconds.
	window := o.windowOr(sc.Per) // learned from the resets (LearnWindow), else the configured one
	wakeOne := o.atTurn(seen, reset, window) && left < margin
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
		//
		// Nor beside others seen spending on the key in a long window
		// (slackIsSmall): what they take goes on until the reset, and half
		// the blind pace takes it from them. Three processes each told the
		// whole limit of a sliding minute without Retry-After each paced
		// the others' share at half its blind pace once a turn had passed
		// without a refusal, and one call in fifty was refused.
		rate = supply + (left-margin)/min(horizon, deficit).Seconds()
		shared := local && o.known && !alone && slackIsSmall(reset, window)
		if now.UnixNano()-o.refusedLast > int64(TrustAfter) && !wakeOne && !shared {
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
		rate = max(rate, (next-margin)/(window+land).Seconds())
	}
	if windowed {
		// A fixed window lets its count through in each window, no more:
		// a pace above it only sends the window's calls early, and over a
		// round trip they arrive at the turn as one burst, some in the
		// window before.
		rate = min(rate, float64(limit)/window.Seconds())
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
		if sc.CostlyRefusals || slackIsSmall(reset, window) {
			// A reset in whole seconds may already be here, and the scope
			// does not stop for it (PauseForNoneLeft) — unless a refusal
			// has cost a pause of more than a second (httprate answers
			// each with Retry-After: the window, a minute), or the slack
			// is a small share of the window, so that waiting it out
			// costs little beside what a refusal may cost. Then it is
			// waited out to its slack. Sent into it, the first call at a
			// turn of a window of a minute was refused, and the next
			// minute went unspent.
			pause = min(max(pause, reset+WholeSecondSlack(reset)), sc.MaxWait)
		}
		if pause > 0 {
			v.None, v.Pause = true, pause
			return v
		}
	}
	v.Paced, v.Rate, v.Young, v.Roomless, v.WakeOne = true, rate, first && !full, roomless, wakeOne
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
