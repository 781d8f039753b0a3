package pace

// The rules a count's pace is reckoned by, in the order Count applies
// them to a reading. Each names the server property it relies on.

import (
	"math"
	"time"
)

// pace is the pace the reading k allows, units a second: what is left
// spread to the reset, then each rule below in turn.
//
// Spread over the reset as stated: a whole-second reset may be up to a
// second later, but spending what is left a little early is safe (the
// clamp keeps the bucket within it), and spreading it over the longer time
// would leave a one-second window half used. Once what comes back is
// measured, a reset a second or two away is as likely a sliding window's,
// which gives back what was spent a window ago, as a fixed one's: close
// the gap to the margin within half a second, and let the clamp and the
// margin guard (spreadOver).
func (k *reading) pace(sc Scope) float64 {
	rate := k.supply + (k.left-k.margin)/k.horizon.Seconds()
	rate = k.belowMargin(sc, rate)
	rate = k.lastsAtBlind(sc, rate)
	rate = k.goesOnGivingBack(rate)
	rate = k.fullWhileSpending(sc, rate)
	rate = k.refillDue(rate)
	rate = k.nextWindow(rate)
	rate = k.windowLetsThrough(rate)
	rate = k.noRoom(sc, rate)
	// However little is left, the scope sends again within the maximum
	// wait, and a corrected count can teach it back.
	return max(rate, sc.Floor)
}

// belowMargin: below the margin, slow down within a fraction of a second (or
// a round trip), not by the reset: on a sliding window the next call may be
// refused. But not below half the blind pace while nothing was refused of
// late: the calls are what bring the news that the margin is back, and none
// left at all pauses the scope (PauseForNoneLeft) anyway. Nor above what the
// provider has been measured to give back to the scope, once that measure
// goes by: paced there, what is left holds where it is and the calls still
// bring the news; above it, the floor itself spends the margin away. Three
// processes each told the whole limit of a bucket of 50 at 10 a second each
// measured 3.3 a second given back (each sees the others' take as a slower
// refill, and itself alone), and each one whose count fell below the margin
// went up to half its blind pace, 4.5, into a bucket of 10: past the first
// seconds, 22 of 1,200 calls were refused, none with the cap. Not a fixed
// window seen to turn: it gives nothing back before its turn, which brings
// the margin back at once, and held to the little its count seemed to give
// back, the scope sent too slowly into the turn (a window of 100 a second
// over a 200–400 ms route, 0.945 → 0.943). After a refusal the server has
// shown that half the blind pace is too much — other clients take the rest,
// or the limit is below the configured one — and the count paces alone: held
// at half the blind pace, three processes each told the whole limit of a
// sliding window had one call in five refused.
//
// Nor beside others seen spending on the key in a long window
// (slackIsSmall): what they take goes on until the reset, and half the blind
// pace takes it from them. Three processes each told the whole limit of a
// sliding minute without Retry-After each paced the others' share at half
// its blind pace once a turn had passed without a refusal, and one call in
// fifty was refused.
//
// Nor at a long window's turn (atLongTurn): the scope learns what the turn
// brought one call at a time (Verdict.WakeOne), not at half its blind pace,
// for a refusal there may cost the next window. httprate's windows start
// when its limiter does and its reset is the window's end in whole seconds,
// so its turn comes up to a second after the reset says; sent at half the
// blind pace into a turn of a minute that gave nothing back, over a route of
// 300 ms, a call was refused and its Retry-After (the window) cost half the
// quota. A reset that never comes is no turn (atTurn): a count that said
// "1 s" at every answer held the scope at a call every two seconds.
func (k *reading) belowMargin(sc Scope, rate float64) float64 {
	if k.left >= k.margin {
		return rate
	}
	rate = k.supply + (k.left-k.margin)/min(k.horizon, k.deficit).Seconds()
	shared := k.local && k.known && !k.alone && slackIsSmall(k.reset, k.window)
	if k.quiet && !k.wakeOne && !shared {
		floor := min(sc.Blind/2, k.lastsToReset())
		if k.local && k.known && !k.first && !k.turns && k.supply > 0 {
			floor = min(floor, k.supply)
		}
		rate = max(rate, floor)
	}
	return rate
}

// lastsToReset is the fastest pace at which what is left lasts until the
// soonest the reset may be, whatever the server counts by: by then it has
// given back at most what it holds at once, its room, and that only if
// everything it counts now came back before the reset (a fixed window gives
// nothing back before it; a sliding window gives back what it counted a
// window ago, and its window is no shorter than its reset; a bucket fills
// its room in the time its reset states). Unbounded for a reset that may
// already be here.
func (k *reading) lastsToReset() float64 {
	soonest := k.reset - WholeSecondSlack(k.reset)
	if soonest <= 0 {
		return math.Inf(1)
	}
	return (max(k.left, 0) + k.room + 1) / soonest.Seconds()
}

// lastsAtBlind: what is left lasts until the reset at the blind pace, so
// the count may raise the pace toward the edge, not lower it below the
// blind one.
//
// How long what is left must last: until the reset — or, while what the
// provider gives back is unmeasured, until the soonest a whole-second
// reset may be, if the blind pace is within the published limit and
// nobody else is seen spending on the key. A reset stated as a second away
// may be a moment away, and what is left spread over the whole second
// slowed the pace at each count by what had been spent since: the first
// two seconds of a sliding window lost a fifth of their calls. A scope in
// a shared store whose takes do not say what the fleet took
// (store.Decision.Taken) never measures what comes back (the fleet's
// other processes spend as a neighbour would), and spreading held a fleet
// at half the limit for good: it keeps its blind pace the same way, the
// shared bucket clamped to what remains. Its first window can leave an
// unpaced neighbour short, which nothing tells apart from the fleet until
// the window turns. One whose takes say it measures as a local scope does
// (reading.local).
func (k *reading) lastsAtBlind(sc Scope, rate float64) float64 {
	lasts := max(k.reset, k.horizon)
	if k.first && (k.alone || !k.local) && sc.BlindWithin {
		lasts = max(0, k.reset-WholeSecondSlack(k.reset))
	}
	if k.left >= k.margin && k.left-k.margin >= (sc.Blind-k.supply)*lasts.Seconds() {
		rate = max(rate, sc.Blind)
	}
	return rate
}

// goesOnGivingBack: what the server did outranks what one count seems to
// say. Over a jittery route a count is a few calls above or below the
// truth (calls counted in another order than they were sent in), and read
// against the margin within a round trip the pace dipped by a fifth at
// every low one while the server refused nothing. What a count gave back
// over seconds without a refusal it goes on giving back (a sliding window
// returns what was spent a window ago, a bucket refills at its rate): the
// scope keeps that pace, and closes a gap to the margin over those
// seconds, not a round trip. Only for a reset within those seconds: what
// a sliding window of a minute gives back is what was spent a minute ago,
// which says nothing of the next seconds, and held to it a window told
// twice its limit ran out before its reset. Not a fixed window seen to
// turn, which gives nothing back before its turn; not a count of none,
// whose rule is noneLeft; not a fleet, whose spending the marks do not
// all say.
func (k *reading) goesOnGivingBack(rate float64) float64 {
	held := k.back + min(0, k.left-k.margin)/heldSpan.Seconds()
	if k.refusedNone && k.reset <= heldSpan && k.local && !k.fleet && !k.first && !k.turns && k.r > 0 && held > rate {
		return held
	}
	return rate
}

// fullWhileSpending: a count that holds at its peak while the scope
// spends is a bucket refilling at least as fast: it says the scope is
// below the server's rate, not by how much. Before what comes back is
// measured long enough to go by (TrustAfter), such a count sets no pace
// of its own: read as the rate, the young measure followed the scope's
// own pace up, and the pace the measure, and a token bucket of 100 a
// second took a second and a half to be spent. Once it is measured, the
// measure paces: a neighbour the full bucket hid took its share back as
// the count fell.
func (k *reading) fullWhileSpending(sc Scope, rate float64) float64 {
	if k.full && k.first {
		rate = max(rate, sc.Unreported)
	}
	return rate
}

// refillDue: a fixed window seen to refill every so often is full again
// at its next refill, whatever this count said of the one ending: a call
// is due by then. At the crawl a count near the end of a window set, the
// calls waiting slept on past the refill with nothing in flight to bring
// its news, the new window unspent. One call, not the blind pace: the
// refill is a guess, and the calls sent before it were refused.
func (k *reading) refillDue(rate float64) float64 {
	if k.turns {
		rate = max(rate, OneCallBy(k.refill))
	}
	return rate
}

// nextWindow: once a fixed window's turn is nearer than a round trip, the
// calls sent from now on spend the next window (read's land), and what is
// left is its count, less the calls on their way to it.
func (k *reading) nextWindow(rate float64) float64 {
	if k.next >= 0 {
		k.left = k.next
		rate = max(rate, (k.next-k.margin)/(k.window+k.land).Seconds())
	}
	return rate
}

// windowLetsThrough: a fixed window lets its count through in each
// window, no more. A pace above it only sends the window's calls early,
// and over a round trip they arrive at the turn as one burst, some in the
// window before.
func (k *reading) windowLetsThrough(rate float64) float64 {
	if k.windowed {
		rate = min(rate, float64(k.limit)/k.window.Seconds())
	}
	return rate
}

// noRoom: a count with no room for its margin. A server bucket that holds
// about one call reads empty after every call it accepts, so its zeros are
// its size, not a scarcity, and what it was measured to give back is only
// what the scope asked of it. Read as scarcity, each answer took the pace
// a little lower, and a server of 100 a second with a burst of one was
// paced at 2 a second. Such a count sets no pace (reading.roomless): the
// limit does, at a burst the count's room holds, and a refusal cuts it as
// a bare 429 does (the root's learn step).
func (k *reading) noRoom(sc Scope, rate float64) float64 {
	if k.roomless {
		return sc.Unreported
	}
	return rate
}

// noneLeft reports whether a count of none left pauses the scope, and for
// how long: until the reset, and the scope probes at its own pace after
// it; the count sets no pace of its own.
//
// Not a count that was seen not to refill at its reset (gradual), or to
// give back as it goes: paused to the reset, a sliding window of a minute
// found the new window as empty and paused again, and half the limit went
// unspent. It paces by what comes back instead. A count gives back as it
// goes when it gave back a quarter of the blind pace or more over the
// latest seconds, without a refill: a fixed window gives nothing back
// before it refills. Paused to its reset, a bucket of 50 at 10 a second,
// spent at twice that until none was left, sat out the five seconds its
// reset said it takes to be full, every half minute. Not once the server
// refused a call meanwhile: what came back before is no licence to send
// into refusals, and a server that turned to refusing every call with
// none left was sent twenty more.
func (k *reading) noneLeft(sc Scope) (time.Duration, bool) {
	givesBack := k.unrefilled && k.refusedNone && k.local && !k.fleet && k.back >= sc.Blind/4
	if k.r != 0 || k.gradual || givesBack {
		return 0, false
	}
	pause := PauseForNoneLeft(k.reset, sc.MaxWait)
	if sc.CostlyRefusals || slackIsSmall(k.reset, max(k.window, k.longest)) {
		// A reset in whole seconds may already be here, and the scope
		// does not stop for it (PauseForNoneLeft) — unless a refusal
		// has cost a pause of more than a second (httprate answers
		// each with Retry-After: the window, a minute), or the slack
		// is a small share of the window, so that waiting it out
		// costs little beside what a refusal may cost. Then it is
		// waited out to its slack. Sent into it, the first call at a
		// turn of a window of a minute was refused, and the next
		// minute went unspent. The window is no shorter than the
		// longest reset a count has stated: a scope told 1,000 a
		// second against a fixed minute took its window for a second
		// until two turns taught it the minute, and its restart from
		// each pause before then went into the last second before the
		// turn (18 refused at the second minute's).
		pause = min(max(pause, k.reset+WholeSecondSlack(k.reset)), sc.MaxWait)
	}
	return pause, pause > 0
}

// why says which reading of the count sets the pace, when it is more than
// what is left spread to the reset; "" otherwise (Verdict.Why).
func (k *reading) why() string {
	switch {
	case k.roomless:
		return "a count with no room for its margin: the limit paces, at the burst the count holds"
	case k.next >= 0:
		return "a fixed window's turn is nearer than a round trip: the next window's count, less the calls on their way to it"
	case k.turns:
		return "a fixed window, spent to its next turn"
	case k.full && k.first:
		return "a count that holds full while the scope spends: below the server's rate"
	}
	return ""
}
