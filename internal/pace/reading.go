package pace

// One count read against the record: what is left now, the margin to keep,
// how long to spread what is left over, and what the record says of the
// server behind the count. The pace rules (rules.go) work from these.

import "time"

// A reading is one count as the record reads it (Record.read).
type reading struct {
	r       float64       // the count
	reset   time.Duration // as the count states it
	limit   int64         // the published limit; -1 if none
	local   bool          // the record knows every call spent from the count (Count.Local, or a fleet's marks)
	fleet   bool          // the marks are the fleet's (Count.Fleet)
	known   bool          // what the provider gives back has a first measure
	gradual bool          // the count was seen to give back as it goes, not at its reset (Record.gradual)
	quiet   bool          // nothing was refused for TrustAfter

	// supply is what the provider gives back, units a second, net of
	// what others take (netSupply); 0 while unmeasured or for a count
	// whose spending the record does not all know. first says that
	// measure is too young to go by (TrustAfter).
	supply float64
	first  bool
	alone  bool // nobody else is seen spending on the key (Record.alone)

	// left is what is left now by the count's reading; margin, what the
	// scope leaves of it unspent.
	left, margin float64

	// full says the count, as the server made it, is at its peak, and
	// nothing was refused of late.
	full bool

	// A fixed window's turns: its next refill (Record.refill) and whether
	// the refills are its turns; land, that a call sent later than land
	// from now arrives after the refill (0 unless the turns and the
	// route's floor say so); windowed, that the scope is also alone on the
	// key, so that next, the next window's count for the calls sent from
	// now on, is its own (-1 for none).
	refill   time.Duration
	turns    bool
	land     time.Duration
	windowed bool
	next     float64

	// room is the most calls the count has shown it holds at once;
	// roomless, that it has no room for its margin.
	room     float64
	roomless bool

	// horizon is how long what is left is spread over (spreadOver);
	// deficit, how soon a scope that spent into its margin gives it back.
	horizon, deficit time.Duration
	// window is the scope's window: learned from the resets, else the
	// configured one. longest is, until a window is learned, the longest
	// reset a count has stated (Record.longestReset): a window is no
	// shorter than the time to its end, whatever the scope was told
	// (noneLeft). A window learned from two turns outranks it: one reset
	// a server misstated does not stand for its window for good.
	window, longest time.Duration
	// wakeOne says the count is below its margin at a long window's turn
	// (Verdict.WakeOne).
	wakeOne bool

	// What the provider gave back over the latest seconds (givenBack):
	// units a second, whether it refused none of the scope's calls
	// meanwhile, and whether the count did not refill meanwhile.
	back                    float64
	refusedNone, unrefilled bool
}

// read reads the count c, made when the server counted (seen) and
// answering the call admitted at sent, against the record at now; local
// says the record knows every call spent from the count. The count must
// have been taken (take) first. Besides reading, it keeps what the scope
// had spent by now while it is alone on a fixed window's key (spentBy),
// and notes a long window's turn (atTurn).
func (o *Record) read(now time.Time, seen, sent int64, c Count, local bool, sc Scope) reading {
	k := reading{r: float64(c.Remaining), reset: c.Reset, limit: c.Limit, local: local, fleet: c.Fleet,
		known: o.known, gradual: o.gradual, quiet: o.quiet(now)}
	// Until TrustAfter, the measure of what the provider gives back is too
	// young to go by. Never below nothing: a neighbour's share is already
	// out of what remains, and a negative measure is as likely the noise
	// of calls answered out of order, which would stall the scope.
	k.first = !o.known || now.UnixNano()-o.first < int64(TrustAfter)
	k.refill, k.turns = o.refill(now, sc.Per)
	if local && o.known {
		k.supply = o.netSupply(seen, k.r, c.Mark, k.turns, sc.Blind)
	}
	// Nobody else is seen spending on the key: over the span measured, the
	// count fell no faster than the scope spent, within the noise of calls
	// counted out of order (neighbourNoise).
	k.alone = o.alone(now, local, sc.Blind)
	k.left = k.r - float64(o.spentSince(c.Mark, sc.Spent, c.Fleet)+c.Unanswered) + o.flownBack(now, sent)
	if k.supply < 0 {
		// What a neighbour on a fixed window took since the count was made
		// is gone as surely as what a sliding window gives back comes
		// back (flownBack): left in, the scope spent the neighbour's last
		// calls of each window, and both were refused at its end.
		k.left += k.supply * float64(now.UnixNano()-sent) / 1e9
	}
	// A fixed window counts each call when it arrives, and refills at
	// regular intervals (NextRefill), its window's length: a call sent
	// later than a round trip's floor before the refill the answers see
	// arrives after it, so this window's count is spent by then (land,
	// below). While nobody else is seen spending on the key (windowed),
	// the next window's count is the scope's too (next, below).
	floor := time.Duration(o.rtt.Floor)
	lands := k.turns && k.limit > 0 && o.refillEvery > floor
	k.windowed = k.alone && lands
	k.margin = o.margin(now, k.limit, sc.Quota, k.supply, sc.Per)
	// full: the count, as the server made it, is at its peak, and no call
	// the counts paced was refused of late (after such a refusal, a full
	// count is the refill the scope found the edge of, not room). Not the
	// blind start's refusals: a burst sent at once before any count came
	// back found the bucket's size, not the scope's edge, and taken as the
	// edge, a GCRA told twice its rate on a busy host held full at every
	// answer for a second and a half while its measure of what comes back
	// followed the scope's own pace up from 9 a second. Not net of the
	// calls in flight: over a round trip, thirty of them are, and a bucket
	// that refills faster than the scope spends gave them back before they
	// arrived.
	k.full = local && o.known && o.peak >= 2 && k.r >= o.peak-1 && now.UnixNano()-o.refusedPaced > int64(TrustAfter)
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
	if lands {
		k.land = k.refill - floor
	}
	k.next = -1
	if k.windowed {
		o.sends[o.nsends%len(o.sends)] = spentSample{now.UnixNano(), max(0, sc.Spent)}
		o.nsends++
		k.next = o.nextCount(now, k.refill, k.limit, local, sc)
	}
	// The room is what the count has shown after a call it accepted, or
	// what a published limit says it holds (noRoom).
	k.room = max(o.peak, float64(k.limit)-1)
	k.roomless = sc.CountsRequests && k.room <= k.margin+1
	// A correction reaches the server a round trip after the count that
	// asked for it, and its effect comes back in the counts a trip after
	// that: corrected faster than that, the pace swung between a crawl
	// and the blind pace on a one-second route. So a gap is closed over
	// no less than a round trip, and spent toward the reset over no less
	// than two.
	trip := time.Duration(o.rtt.Floor) + time.Duration(o.rtt.Spread)
	catchUp := max(catchUpTime, 2*trip)
	k.deficit = max(deficitTime, trip)
	k.window = o.windowOr(sc.Per) // learned from the resets (LearnWindow), else the configured one
	o.longestReset = max(o.longestReset, k.reset)
	if o.window == 0 {
		k.longest = o.longestReset
	}
	k.horizon = spreadOver(k.reset, catchUp, k.refill, k.land, lands, k.bucketReset())
	k.wakeOne = o.atTurn(seen, k.reset, k.window) && k.left < k.margin
	k.back, k.refusedNone, k.unrefilled = o.givenBack(seen, k.r, c.Mark)
	return k
}

// bucketReset reports whether a reset of a second or two may be read as
// when a bucket is full again, and what is left spent within catchUp
// (spreadOver): once the count is settled — what comes back is measured,
// or the count holds full while the scope spends. Not the last seconds of
// a long window (its whole-second slack a small share of it) beside others
// seen spending on the key: that reset is the window's end coming, and
// each of them reads what is left as its own. Three processes each told a
// sliding window's 600 a minute over a 200–400 ms route each spent what it
// saw left within half a second at the minute's end, together three times
// it; six calls went into the minute's last second, were answered with
// Retry-After: 60, and the next minute went unspent (0.511 of the quota
// over two). A scope alone spends its own, and keeps the reading.
func (k *reading) bucketReset() bool {
	return (!k.first || k.full) && (k.alone || !slackIsSmall(k.reset, k.window))
}

// margin is the share of the count with published limit limit (-1 if
// none) that the scope leaves unspent (Margin), at least a quarter of a
// call, or a call without a published limit — widened by what reaches the
// count over the route's jitter (arriving: what the provider gives back,
// supply, or more), per being the configured limit's window. A count read
// over a jittery route is as uncertain as what arrives in the jitter of
// half a trip: on a 200–400 ms round trip at 100 a second, five calls. Kept as
// margin, it is what the count's age may hide; without it one call in
// seventy was refused.
//
// A whole call where the published limit is below quota, the configured
// limit's count a window: the published figure is then not the window's
// quota the configuration states, but a bucket's capacity (throttled
// publishes its burst and one) or a limit the server keeps lower than the
// scope was told, and the count is the server's level of what it holds,
// in whole calls. A quarter of a call left holds none, and the next call
// to arrive — an unpaced neighbour's, or the scope's own in a bunch over
// the route — is refused: beside a neighbour taking 4 of a bucket's 10 a
// second (burst 5) over 40–60 ms, the scope settled at 7 a second and the
// neighbour was refused 28 % of its calls. A bucket's level costs nothing
// to keep, since it refills at its rate whatever the level. Where the
// published limit is the configured quota, a quarter of a call it stays:
// a whole one is a large share of a small window (one of GitHub's 9 code
// searches a minute).
//
// Half the bucket where such a count gives back more in a window than twice
// its limit — a bucket; a window kept below what the scope was told gives
// back at most its limit a window — once the server has refused the scope
// after its first seconds (Record.refusedSettled). At the thinner margin the
// arrivals' disorder — the scope's own over a jittery route, an unpaced
// neighbour's — emptied it between counts, and half of it is as far from
// empty as from full: beside a neighbour taking 40 of throttled's 100 a
// second (a bucket of 11) over a 200–400 ms route, one call in eighty-five
// was refused on each side (eight virtual draws); at half the bucket, one
// in three hundred. The blind start's refusals say nothing of the margin:
// their calls went out before the counts paced the scope.
func (o *Record) margin(now time.Time, limit, quota int64, supply float64, per time.Duration) float64 {
	window := o.windowOr(per)
	m := 1.0
	if limit > 0 {
		m = max(0.25, Margin*float64(limit))
		if limit < quota {
			m = max(m, 1)
			if o.refusedSettled && supply*window.Seconds() > 2*float64(limit) {
				m = max(m, max(o.peak, float64(limit)-1)/2)
			}
		}
	}
	m = max(m, o.arriving(supply, limit, per)*(o.rtt.Spread/1e9)/2)
	if o.gradual && (limit <= 0 || limit >= quota) {
		// Only a count that gives back as it goes, spent at its level
		// all the time (Record.arriving): a fixed window's is near empty
		// only at its turn, and a wider margin there goes unspent every
		// window. Nor a bucket's level below the quota, whose refusals
		// settle its margin at half the bucket already.
		m += o.widening(now)
	}
	return m
}

// arriving is how many calls a second reach the count, for the margin's
// share of the route's jitter: what the provider gives back to the scope,
// supply — or, for a count that gives back as it goes (Record.gradual) and
// publishes limit a window of per, the configured limit's window, the
// limit's rate, whichever is more.
//
// The disorder a count is read through is every client's, not the scope's
// alone. A window that gives back as it goes is spent at its level all
// the time by everyone on the key, and what arrives there is its limit's
// rate, where the scope's supply is only its share of it. Beside a
// neighbour taking 40 of a sliding window's 100 a second over a 200–400 ms
// route, the margin read from the scope's 60 left the neighbour's disorder
// uncovered, and each side was refused about one call in ninety (eight
// virtual draws; the real httprate, 1.06–1.51 %); read from the limit's
// 100, one in a hundred and sixty. Not a fixed window, spent near empty
// only at its turn: kept there, the wider margin went unspent every window
// (limit known over the route, 0.946 → 0.930). The configured window, not
// one learned from the resets: a bucket's reset is the time it takes to
// fill, and a bucket of 600 a minute, its window learned as a second, kept
// a margin of seventy calls.
func (o *Record) arriving(supply float64, limit int64, per time.Duration) float64 {
	if o.gradual && limit > 0 && per > 0 {
		return max(supply, float64(limit)/per.Seconds())
	}
	return supply
}

// spreadOver is how long what is left is spread over: the reset as
// stated; no longer than catchUp for a reset of a second or two once the
// count is settled (what comes back is measured, or the count holds full
// while the scope spends); and for a fixed window seen to refill, no later
// than its next refill (refill), or than the time after which a call sent
// lands beyond it (land, when lands). Spending what is left early is
// safe: the clamp keeps the bucket within it.
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
			// refill the answers see arrives after it (reading.land).
			horizon = min(horizon, max(land, RefillFloor))
		}
	}
	return horizon
}
