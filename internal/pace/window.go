package pace

import "time"

// RefillFloor is the shortest time a scope spreads what is left over when
// a fixed window's refill is near: the rest is spent at once, within the
// clamp of the bucket to the count.
const RefillFloor = 20 * time.Millisecond

// NextRefill is how long after now a fixed window that refilled at
// refillAt (UnixNano), and does every every, refills next; 0 when no
// regular refill has been seen lately. A refill that is due but not yet
// seen is taken as imminent (RefillFloor) for a quarter of a window: the
// gap measured may be a little short, and a next one predicted a whole
// window away would stall the scope until its answers brought the news.
func NextRefill(now time.Time, refillAt int64, every time.Duration) time.Duration {
	since := time.Duration(now.UnixNano() - refillAt)
	switch {
	case every <= 0 || refillAt == 0 || since < 0 || since >= every+every/4:
		return 0
	case since >= every:
		return RefillFloor
	}
	return every - since
}

// OneCallBy is the pace that makes one call due by the refill of a fixed
// window, refill from now (at least RefillFloor): what the count at the end
// of the window before says does not hold past it.
func OneCallBy(refill time.Duration) float64 {
	return 1 / max(refill, RefillFloor).Seconds()
}

// WholeSecondSlack is how late a reset given in whole seconds may be: a
// reset written as Unix seconds, or measured against a Date header, is
// truncated to the second. A reset with a fraction of a second has none.
func WholeSecondSlack(reset time.Duration) time.Duration {
	if reset%time.Second == 0 {
		return time.Second
	}
	return 0
}

// PauseForNoneLeft is how long a success that took the last unit pauses
// the scope: until the reset, at most maxWait — unless the reset is within
// a whole-second reset's slack, and so may already be here. Then the scope
// does not stop: it spends at the pace what the provider adds back allows,
// and the next answer says more.
func PauseForNoneLeft(reset, maxWait time.Duration) time.Duration {
	if reset <= WholeSecondSlack(reset) {
		return 0
	}
	return min(reset, maxWait)
}

// slackShare is the largest share of its window that waiting out a
// whole-second reset's slack may cost a scope with none left: a second of a
// window of twenty seconds or longer. A server may answer a call sent into
// none left with a pause of its window (httprate's Retry-After is its
// window; GitHub asks a client to wait until its reset), so a refusal at a
// minute's turn can cost the whole next minute, and the wait at most a
// second of it. For a window of a second or ten, the wait would cost a
// large share of every window, and the refusal one call or a brief pause.
const slackShare = 0.05

// slackIsSmall reports whether waiting out the slack of a whole-second
// reset costs at most slackShare of a window of window
// (reading.noneLeft): a reset with a fraction of a second has no slack to
// wait out.
func slackIsSmall(reset, window time.Duration) bool {
	slack := WholeSecondSlack(reset)
	return slack > 0 && float64(slack) <= slackShare*float64(window)
}

// atLongTurn reports whether a whole-second reset of reset, in a window of
// window whose slack is small (slackIsSmall), may already be here: it is
// no further away than its slack. Whether the turn brings anything back
// is then unknown — a fixed window refills, a sliding one gives back as
// slowly as before — and a refusal may cost the next window.
func atLongTurn(reset, window time.Duration) bool {
	return slackIsSmall(reset, window) && reset <= WholeSecondSlack(reset)
}

// BelieveFor is how long a published limit holds without being published
// again: its window, at least a minute, and at most maxWait. A limit from
// one answer — a year's window, say — cannot hold a scope below its
// configured pace for longer than the maximum wait, and a server that
// stops publishing its limit is paced as configured again, until it
// publishes one.
func BelieveFor(window, maxWait time.Duration) time.Duration {
	return min(max(window, time.Minute), maxWait)
}
