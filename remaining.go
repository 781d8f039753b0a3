package pacer

import (
	"math"
	"time"

	"github.com/pacer-go/pacer/internal/pace"
)

// toldHeadroom is the share of a limit pacer aims at while the provider
// reports live remaining counts. The configured headroom is for flying
// blind; with the provider saying what is left, the remaining count is the
// guard, and the margin it keeps (remainingMargin) is the headroom.
const toldHeadroom = 0.98

// remainingMargin is the share of a limit that remaining-driven pacing
// leaves unspent, at least a quarter of a call: what an unpaced neighbour
// on the same key finds when it calls, and slack for the rounding of the
// count. Not a whole call: on a small limit that is a large share (one of
// GitHub's 9 code searches a minute is 11 %), and a window that starts at
// the first call after the last one ended loses the gap besides. One call
// in a hundred: a count that says what is left after the call it answers
// already keeps that call's own unit, so with two in a hundred the scope
// settled at 97 % of a sliding window, below the toldHeadroom it aims at.
const remainingMargin = 0.01

// toldPace is what a provider's live remaining count allows: the scope may
// send its remaining calls before the reset, spread over the time to it,
// plus what the provider adds back meanwhile. Immutable; each report
// stores a new one.
type toldPace struct {
	rate  float64 // units a second
	until int64   // UnixNano when the report stops applying
	// edge says the report is about the limit the scope paces by, so that
	// it may aim at toldHeadroom of it. It is not when the scope's
	// configured limit is below the published one: a limit set low on
	// purpose keeps its headroom.
	edge bool
	// room is, for a count with no room for its margin (roomless), the
	// most calls it has shown it holds at once; else 0. A burst beyond it
	// is refused whatever the pace: a server bucket of one refuses the
	// second of two calls sent together.
	room float64
	// roomless says the count has no room for its margin, and set no pace
	// (reportRemaining): a cut applies, as to a scope without counts.
	roomless bool
}

// remainingReports is what a scope remembers of the provider's last
// remaining count, to measure how fast the provider gives quota back.
// Under the bucket's mu.
type remainingReports struct {
	at          int64   // UnixNano of the report the next measure of supply starts from
	remaining   float64 // the count it gave
	spent       int64   // the scope's spent units when the call it answered was admitted
	refusedAt   int64   // refused then
	refused     int64   // units of the scope's calls refused with a remaining count, ever
	last        int64   // UnixNano of the last report
	supply      float64 // units a second the provider adds back, less what others take
	interval    float64 // seconds between reports, averaged
	first       int64   // UnixNano of the first report
	latest      int64   // the spent units of the latest report taken
	fleet       bool    // spent units are the fleet's (store.Decision.Taken), not the scope's own
	known       bool    // supply has a first measurement
	peak        float64 // the largest count seen, for a limit that is not published
	rtt         pace.RoundTrips
	refusals    [32]refusedCall // the latest refusals, by mark (sinceMarkLocked)
	nrefusals   int
	refusedLast int64 // UnixNano of the latest refusal, counted or not (noteRefused)

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
	// What the scope had spent by each of the latest reports, oldest
	// first from sends[nsends%len]: the calls sent since a moment, to
	// the resolution of the answers (spentBy).
	sends  [64]spentSample
	nsends int

	// The window the provider does not state, from successive resets.
	lastReset int64         // UnixNano of the latest reset seen
	candidate time.Duration // the shortest gap between resets seen so far
	window    time.Duration // a window learned; 0 until one is
}

// basePace returns the scope's pace before any cut: the configured or
// published limit at the Transport's headroom, or — while the provider
// reports live remaining counts — at toldHeadroom, and no faster than
// the remaining count allows.
func (s *bucket) basePace(now time.Time) (rate, burst float64) {
	cfg := s.scope.configured.Load()
	rate, burst = cfg.rate, cfg.burst
	raw, edgeBurst := cfg.raw, cfg.edgeBurst
	if p := s.learned.Load(); p != nil {
		rate, burst, raw, edgeBurst = p.rate, p.burst, p.raw, p.edgeBurst
	}
	if tp := s.told.Load(); tp != nil && rate > 0 {
		if now.UnixNano() < tp.until {
			if p := s.learned.Load(); p != nil && s.countsOutrank(p, cfg) {
				// A published figure below the configured limit is a
				// reading of the headers; live counts are what the server
				// does. While they come, they pace the scope up to the
				// configured limit: a token bucket that publishes its
				// capacity (11) with the seconds until it is full (1)
				// reads as 11 a second while it accepts 100. A
				// provisional limit is only a stand-in for the published
				// one (a preset's placeholder may be no limit at all).
				rate, burst, raw, edgeBurst = cfg.rate, cfg.burst, cfg.raw, cfg.edgeBurst
			}
			if tp.edge && edgeBurst > 0 && raw*toldHeadroom > rate {
				// In any window, the burst and what refills add up to
				// the limit, as Limit's doc says of the blind headroom.
				rate, burst = raw*toldHeadroom, edgeBurst
			}
			if tp.room > 0 {
				burst = min(burst, tp.room)
			}
			// A call that waits at the reported pace wakes by the time the
			// report runs out, to pace itself anew: nothing else wakes it
			// when no call is in flight.
			rate = min(rate, max(tp.rate, burst*1e9/float64(tp.until-now.UnixNano())))
		} else {
			s.told.CompareAndSwap(tp, nil)
		}
	}
	return rate, burst
}

// countsOutrank reports whether live remaining counts pace the scope above
// p, a published limit below cfg, the configured one (basePace): not for
// a provisional scope, whose published limit replaces its stand-in.
func (s *bucket) countsOutrank(p *learnedLimit, cfg *configuredLimit) bool {
	return cfg.rate > p.rate && !s.scope.Provisional
}

// steadyPace is pace's common case, small enough to be inlined where every
// call asks: nothing told, nothing cut, nothing published, so the
// configured pace. ok is false otherwise; ask pace.
func (s *bucket) steadyPace() (rate, burst float64, ok bool) {
	if s.told.Load() != nil || s.recov.Load() != nil || s.learned.Load() != nil {
		return 0, 0, false
	}
	rate, burst = s.scope.configuredPace()
	return rate, burst, true
}

// unreportedPace is the rate basePace gives the scope without a report of
// what remains: the configured limit's, or the published one's where that
// is lower and the counts do not outrank it.
func (s *bucket) unreportedPace() float64 {
	cfg := s.scope.configured.Load()
	if p := s.learned.Load(); p != nil && !(cfg.rate > 0 && s.countsOutrank(p, cfg)) {
		return p.rate
	}
	return cfg.rate
}

// blindRate is the scope's rate from its configured or published limit
// alone: the pace it returns to once a report of what remains has run out.
func (s *bucket) blindRate() float64 {
	if p := s.learned.Load(); p != nil {
		return p.rate
	}
	rate, _ := s.scope.configuredPace()
	return rate
}

// pace returns the bucket's current pace: basePace, times the share
// a cut left (recovery.go) unless a live remaining count sets it. The common case — nothing learned, nothing
// cut — reads two pointers and no clock.
func (s *bucket) pace() (rate, burst float64) {
	if s.told.Load() == nil && s.recov.Load() == nil {
		rate, burst = s.scope.configuredPace()
		if p := s.learned.Load(); p != nil {
			rate, burst = p.rate, p.burst
		}
		return rate, burst
	}
	now := s.scope.clock.Now()
	rate, burst = s.basePace(now)
	if r := s.recov.Load(); r != nil {
		f := s.factorOf(r, now.UnixNano())
		if tp := s.told.Load(); tp == nil || now.UnixNano() >= tp.until || tp.roomless {
			// A live remaining count paces by what it says; a cut is
			// for the pace without one.
			rate *= f
		}
	}
	return rate, burst
}

// A remainingReport is one answer's remaining count, as the scope reads it.
type remainingReport struct {
	remaining int64         // the units the provider says are left
	reset     time.Duration // until the count is full again, or its window ends
	limit     int64         // the published limit; -1 if none
	// mark is the scope's spent units when the call it answers was
	// admitted, this call's included: the calls admitted since were not
	// all counted yet. In a shared store that says what the fleet took
	// (fleet), it is the fleet's total then (store.Decision.Taken).
	mark    int64
	refused int64 // the answered call's cost if the provider refused it, which it did not spend; else 0
	// sent is when the answered call was admitted (UnixNano): the count
	// was made a little after, on the way (reportRemaining).
	sent  int64
	local bool // the scope's bucket is this process's alone
	fleet bool // mark is the fleet's total
}

// reportRemaining takes a provider's report that remaining units are left
// until reset, and sets the pace that spends them: what is left after the
// calls admitted since, spread over the time to the reset (a whole-second
// reset may be up to a second late), plus what the provider has been
// adding back net of what others take — measured from successive reports,
// so that on a key shared with clients pacer does not control it spends
// only what is left.
//
// In a shared store whose takes say what the whole fleet took (fleet),
// what the fleet spent between two reports is known, as one process knows
// its own, and the fleet measures what the provider gives back net of what
// real neighbours take, as a local scope does. Without it the other
// processes' calls would count as a neighbour's, so only the spread
// applies, never at the edge.
//
// It returns what is left now by the report's reading (leftNow), the new
// pace, and whether remaining-driven pacing has just begun.
func (s *bucket) reportRemaining(now time.Time, rep remainingReport, maxWait time.Duration) (left, paced float64, began bool) {
	remaining, reset, limit, spentAt, refused, local, fleet := rep.remaining, rep.reset, rep.limit, rep.mark, rep.refused, rep.local, rep.fleet
	if reset < 0 || remaining < 0 {
		return 0, 0, false
	}
	s.mu.Lock()
	o := &s.reports
	r := float64(remaining)
	o.peak = max(o.peak, r)
	if fleet != o.fleet || fleet && float64(o.latest-spentAt) > 2*max(o.peak, float64(limit), 1) {
		// The marks changed their unit (the fleet's total from the
		// scope's own spent, as when a store stops counting), or the
		// store forgot the bucket, full, and started its total again:
		// measure afresh from this report. A step back of a few calls is
		// only the order in which calls were admitted and answered.
		o.fleet, o.at, o.latest = fleet, 0, 0
	}
	// A fleet that knows what it spent measures what comes back as one
	// process does.
	local = local || fleet
	// A refusal counts even in an answer overtaken by a later one: the
	// baseline took every call admitted before it as counted.
	o.refused += refused
	if rep.sent <= 0 || rep.sent > now.UnixNano() {
		rep.sent = now.UnixNano() // unknown: counted as it arrived
	}
	o.rtt.Observe(now.UnixNano() - rep.sent)
	// When the server counted: the call's admission plus half the
	// shortest round trip seen, never later than now. Measured so, what
	// comes back does not depend on how late a busy host reads the
	// answer, nor on the jitter of the way back.
	seen := min(now.UnixNano(), rep.sent+o.rtt.Floor/2)
	if spentAt < o.latest {
		left := r - float64(s.sinceMarkLocked(spentAt, fleet)) + s.flownBack(now, rep.sent)
		s.mu.Unlock()
		return left, 0, false // an answer overtaken by a later one: old news
	}
	o.latest = spentAt
	if o.last != 0 {
		if dt := float64(seen-o.last) / 1e9; dt > 0 {
			o.interval += (dt - o.interval) / 8
		}
	}
	o.last = max(o.last, seen)
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
		jump := max(3, 0.2*math.Max(float64(limit), o.peak)) + dt*max(s.blindRate(), s.scope.configured.Load().rate)
		switch {
		case gain > jump:
			move = true
			if o.refillAt != 0 {
				g := time.Duration(now.UnixNano() - o.refillAt)
				if d := g - o.refillGap; d < g/10 && -d < g/10 || o.refillEvery == 0 {
					o.refillEvery = g
				}
				o.refillGap = g
			}
			o.refillAt = now.UnixNano()
			o.refillSpent, o.refillMark = spentAt-o.refillMark, spentAt
		case dt >= supplySpan.Seconds():
			// Averaged over several reports, at least supplyTime: one
			// report's count is rounded to a whole call, and calls are
			// answered in another order than they were admitted in.
			w := min(1, dt/max(supplyTime.Seconds(), 8*o.interval))
			if !o.known {
				w = 1
			}
			o.supply += w * (gain/dt - o.supply)
			o.known = true
			move = true
		}
	}
	if move {
		o.at, o.remaining, o.spent, o.refusedAt = seen, r, spentAt, o.refused
	}
	if o.first == 0 {
		o.first = now.UnixNano()
	}
	// Until trustAfter, the measure of what the provider gives back is too
	// young to go by. Never below nothing: a neighbour's share is already
	// out of what remains, and a negative measure is as likely the noise
	// of calls answered out of order, which would stall the scope.
	supply, first := 0.0, !o.known || now.UnixNano()-o.first < int64(trustAfter)
	refill := pace.NextRefill(now, o.refillAt, o.refillEvery)
	turns := refill > 0 && s.refillsByWindow(o.refillEvery)
	if local && o.known {
		supply = max(0, o.supply)
		if turns && o.supply < -neighbourNoise*s.blindRate() {
			// A fixed window gives nothing back before it refills: a count
			// that falls faster than the scope spends is another client's,
			// who goes on spending until the refill. Left out, the scope
			// spent the window's count by seven tenths of it, and the
			// neighbour found it empty.
			supply = max(o.supply, -s.blindRate())
		}
	}
	// Nobody else is seen spending on the key: over the span measured, the
	// count fell no faster than the scope spent, within the noise of calls
	// counted out of order (neighbourNoise).
	alone := local && o.known && o.supply > -neighbourNoise*s.blindRate()
	left = r - float64(s.sinceMarkLocked(spentAt, fleet)) + s.flownBack(now, rep.sent)
	// A fixed window counts each call when it arrives, and refills at
	// regular intervals (NextRefill), its window's length: a call sent
	// later than a round trip's floor before the refill the answers see
	// arrives after it, so this window's count is spent by then. Only
	// while nobody else is seen spending on the key (alone).
	floor := time.Duration(o.rtt.Floor)
	windowed := alone && turns && limit > 0 && o.refillEvery > floor
	margin := 1.0
	if limit > 0 {
		margin = max(0.25, remainingMargin*float64(limit))
	}
	// A count read over a jittery route is as uncertain as what comes
	// back in the jitter of half a trip: on a 200–400 ms round trip at
	// 100 a second, five calls. Kept as margin, it is what the count's
	// age may hide; without it one call in seventy was refused.
	margin = max(margin, supply*(o.rtt.Spread/1e9)/2)
	peak := o.peak
	// full: the count, net of the calls in flight, is at its peak, and
	// nothing was refused of late (after a refusal, a full count is the
	// refill the scope found the edge of, not room).
	full := local && o.known && peak >= 2 && left >= peak-1 && now.UnixNano()-o.refusedLast > int64(trustAfter)
	// A fixed window counts a call when it arrives: one sent later than a
	// round trip's floor before the turn the answers see arrives after it
	// (the turn is seen at least half a floor late, and a call arrives at
	// least half a floor after it is sent), and spends the next window.
	// Once the turn is nearer than the floor (land ≤ 0), every call sent
	// from now on does, and so do those sent since land ago: what this window has left is no longer the
	// scope's to spend, and the next window's is its limit less those.
	// Read against this window's count, the calls in flight emptied the
	// bucket at every window's end and the next began a round trip late.
	var land time.Duration
	next := -1.0
	if windowed {
		land = refill - floor
		o.sends[o.nsends%len(o.sends)] = spentSample{now.UnixNano(), s.sinceMark(0, fleet)}
		o.nsends++
		if land <= 0 {
			if by, ok := o.spentBy(now.Add(land)); ok {
				next = float64(limit) - float64(s.sinceMark(by, fleet))
			}
		}
	}
	s.mu.Unlock()
	// A count with no room for its margin: a server bucket that holds
	// about one call reads empty after every call it accepts, so its
	// zeros are its size, not a scarcity, and what it was measured to
	// give back is only what the scope asked of it. Read as scarcity,
	// each answer took the pace a little lower, and a server of 100 a
	// second with a burst of one was paced at 2 a second. Such a count
	// sets no pace: the limit does, at a burst the count's room holds,
	// and a refusal cuts it as a bare 429 does (learnFrom).
	// The room is what the count has shown after a call it accepted, or
	// what a published limit says it holds.
	room := max(peak, float64(limit)-1)
	roomless := s.scope.countsRequests && room <= margin+1
	// Spread over the reset as stated: a whole-second reset may be up to a
	// second later, but spending what is left a little early is safe (the
	// clamp keeps the bucket within it), and spreading it over the longer
	// time would leave a one-second window half used. Once what comes
	// back is measured, a reset a second or two away is as likely a
	// sliding window's, which gives back what was spent a window ago, as a
	// fixed one's: close the gap to the margin within half a second, and
	// let the clamp and the margin guard.
	horizon := reset
	if reset == 0 {
		// Within the second, for a reset in whole seconds (httprate's
		// near the end of its window); a reset that is exactly now says
		// only that what remains is about to grow. Spending what is left
		// early is safe, as above.
		horizon = catchUpTime
	}
	if horizon <= 2*time.Second && (!first || full) {
		// A count that stays at its peak while the scope spends, before
		// what comes back is measured too, is a bucket refilling faster
		// than the scope spends: its reset is when it is full again, not
		// a window's end (a window's count falls as it is spent).
		horizon = min(horizon, catchUpTime)
	}
	if refill > 0 && pace.WholeSecondSlack(reset) > 0 {
		// A fixed window seen to refill every so often: its reset is when
		// it refills next, which the whole-second reset cannot say within
		// a second. Spread over the whole second instead, the pace follows
		// what is left down and leaves a fifth of each window unspent.
		// The refill is seen by the first answer after it, so the estimate
		// errs late, and spending early is safe (above).
		horizon = min(horizon, max(refill, pace.RefillFloor))
		if windowed {
			// A call sent later than a round trip's floor before the
			// refill the answers see arrives after it (land, above).
			horizon = min(horizon, max(land, pace.RefillFloor))
		}
	}
	rate := supply + (left-margin)/horizon.Seconds()
	if left < margin {
		// Below the margin, slow down within a fraction of a second, not
		// by the reset: on a sliding window the next call may be refused.
		// But not below half the blind pace: the calls are what bring the
		// news that the margin is back, and none left at all pauses the
		// scope (pauseForNoneLeft) anyway.
		rate = max(supply+(left-margin)/min(horizon, deficitTime).Seconds(), s.blindRate()/2)
	}
	// How long what is left must last at the blind pace for the report to
	// leave that pace alone: until the reset — or, while what the
	// provider gives back is unmeasured, until the soonest a whole-second
	// reset may be, if the blind pace is within the published limit and
	// nobody else is seen spending on the key. A reset stated as a second
	// away may be a moment away, and what is left spread over the whole
	// second slowed the pace at each report by what had been spent since:
	// the first two seconds of a sliding window lost a fifth of their calls.
	// A scope in a shared store whose takes do not say what the fleet took
	// (store.Decision.Taken) never measures what comes back (the fleet's
	// other processes spend as a neighbour would), and spreading held a
	// fleet at half the limit for good: it keeps its blind pace the same
	// way, the shared bucket clamped to what remains. Its first window can
	// leave an unpaced neighbour short, which nothing tells apart from the
	// fleet until the window turns. One whose takes say it measures as a
	// local scope does (local is set above).
	lasts := max(reset, horizon)
	if first && (alone || !local) && s.blindWithin(limit) {
		lasts = max(0, reset-pace.WholeSecondSlack(reset))
	}
	if blind := s.blindRate(); left >= margin && left-margin >= (blind-supply)*lasts.Seconds() {
		// What is left lasts until the reset at the blind pace: the
		// report may raise the pace toward the edge, not lower it below
		// the blind one.
		rate = max(rate, blind)
	}
	if turns {
		// A fixed window seen to refill every so often is full again at
		// its next refill, whatever this count said of the one ending: a
		// call is due by then. At the crawl a count near the end of a
		// window set, the calls waiting slept on past the refill with
		// nothing in flight to bring its news, the new window unspent.
		// One call, not the blind pace: the refill is a guess, and the
		// calls sent before it were refused.
		rate = max(rate, pace.OneCallBy(refill))
	}
	if next >= 0 {
		// The calls sent from now on spend the next window (land, above).
		left = next
		rate = max(rate, (next-margin)/o.refillEvery.Seconds())
	}
	if roomless {
		rate = s.unreportedPace()
	}
	// However little is left, the scope sends again within the maximum
	// wait, and a corrected report can teach it back.
	rate = max(rate, s.floorRate(maxWait))
	if remaining == 0 && pace.PauseForNoneLeft(reset, maxWait) > 0 {
		// The scope pauses until the reset and probes at its own pace
		// after it: the report sets no pace of its own.
		s.told.Store(nil)
		return left, 0, false
	}
	// A report holds until its reset, at the latest.
	hold := min(reset+pace.WholeSecondSlack(reset), maxWait)
	edge := true
	if cfg := s.scope.configured.Load(); cfg.rate > 0 && s.learned.Load() == nil && limit > int64(cfg.limit.Count) {
		edge = false
	}
	// Not at the edge before what the provider gives back is measured:
	// a sliding window that has been idle lets a whole window through,
	// and the next one starts full.
	edge = edge && !first
	tp := &toldPace{rate: rate, until: now.Add(hold).UnixNano(), edge: edge, roomless: roomless}
	if roomless {
		tp.room = room + 1 // what the count showed, and the call it answered
	}
	old := s.told.Swap(tp)
	if old != nil && rate > old.rate {
		// The head of the queue sleeps on the wait the old pace gave it.
		s.paceRose()
	}
	if roomless && (old == nil || !old.roomless) {
		// The calls admitted before the room was known went out at a
		// burst the server cannot hold: their refusals say nothing of
		// its rate, and must not cut it (the first second of a bucket of
		// one, at the default burst of 10, drew nine).
		s.mu.Lock()
		s.cutAt = max(s.cutAt, s.admitted.Load())
		s.mu.Unlock()
	}
	return left, rate, old == nil || old.until <= now.UnixNano()
}

// refillsByWindow reports whether refills every every are the scope's
// window turning: every is the window learned from its resets, else the
// configured limit's, within a tenth; and the count has held at least half
// of what the scope spent between the two latest refills (a fixed window's
// count is what it lets through in one). A token bucket's count jumps now
// and then as answers overtake each other (every half second, over a
// jittery round trip), which is not a window that ends; one that publishes
// its capacity (11) while it lets 100 a second through holds a tenth of
// what it let through between two such jumps. Under s.mu.
func (s *bucket) refillsByWindow(every time.Duration) bool {
	w := s.reports.window
	if w == 0 {
		w = s.scope.configured.Load().limit.Per
	}
	d := every - w
	return w > 0 && d < w/10 && -d < w/10 && s.reports.peak >= float64(s.reports.refillSpent)/2
}

// sinceMarkLocked is sinceMark less what the provider has refused since
// mark, as far as the answers in hand say: a refused call was never
// counted, and never will be. Taken off again, the calls refused in a
// burst sent together read as spent, and an empty bucket stalled the
// scope for seconds. Under s.mu.
func (s *bucket) sinceMarkLocked(mark int64, fleet bool) int64 {
	n := s.sinceMark(mark, fleet)
	if fleet {
		return n // the fleet's refusals are not all this process's to know
	}
	o := &s.reports
	for _, r := range o.refusals[:min(o.nrefusals, len(o.refusals))] {
		if r.mark > mark {
			n -= r.cost
		}
	}
	return max(0, n)
}

// noteRefused remembers that the provider refused, at now, a call of cost
// admitted at mark (sinceMarkLocked).
func (s *bucket) noteRefused(now time.Time, mark, cost int64) {
	s.mu.Lock()
	o := &s.reports
	o.refusals[o.nrefusals%len(o.refusals)] = refusedCall{mark, cost}
	o.nrefusals++
	o.refusedLast = now.UnixNano()
	s.mu.Unlock()
}

// A refusedCall is a refused call's mark and cost (noteRefused).
type refusedCall struct{ mark, cost int64 }

// A spentSample is what the scope had spent (sinceMark(0)) at a report.
type spentSample struct{ at, spent int64 }

// spentBy returns what the scope had spent by t, as the latest report at
// or before it saw; ok is false when no report that old is kept. Under
// s.mu.
func (o *remainingReports) spentBy(t time.Time) (spent int64, ok bool) {
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
// bucket refills. The calls sent since the counted one (sinceMark) arrive
// over that span too, so the two are read over the same time: the
// count's age on the way back, and a new call's on the way there, about
// one round trip. Over a round trip of 300 ms at 100 a second, 30 calls
// are in flight, and a window that gives back what it was given keeps
// what remains where it is: taking off the calls in flight alone read
// that as scarcity, and paced a sliding window at 0.73. Under s.mu.
func (s *bucket) flownBack(now time.Time, sent int64) float64 {
	o := &s.reports
	if !o.known || o.supply <= 0 || sent <= 0 || sent > now.UnixNano() {
		return 0
	}
	return o.supply * float64(now.UnixNano()-sent) / 1e9
}

// sinceMark is what was spent since mark, a call's spent units at its
// admission: the scope's own, or, when fleet is set, what the whole fleet
// took from the shared bucket as the latest take said, which may be a few
// calls behind a call answered out of order: never below nothing.
func (s *bucket) sinceMark(mark int64, fleet bool) int64 {
	if fleet {
		return max(0, s.taken.Load()-mark)
	}
	return s.spent.Load() - mark
}

// blindWithin reports whether the scope's blind pace is within limit, the
// count the provider publishes (-1 if none): the pace is the published
// limit's, or a configured limit that counts no more per window. A
// configured limit counts in its own window, which the provider's count
// does not state; a count that matches is taken as the same limit.
func (s *bucket) blindWithin(limit int64) bool {
	if s.learned.Load() != nil {
		return true
	}
	cfg := s.scope.configured.Load()
	return cfg.rate > 0 && limit >= int64(cfg.limit.Count)
}

// floorRate is the pace of one call every every (for a scope counted in
// another unit, a full bucket). Every the maximum wait, it is the least
// pace a report or a cut leaves a scope, so that no response stops a scope
// for longer.
func (s *bucket) floorRate(every time.Duration) float64 {
	units := 1.0
	if !s.scope.countsRequests {
		_, units = s.basePace(s.scope.clock.Now())
	}
	return units / every.Seconds()
}

// edgeBurst is the burst a scope counted in requests keeps while it aims at
// toldHeadroom of a limit of count per window: (1 − toldHeadroom) × count,
// at least one, and no more than burst. A scope counted in another unit
// keeps its burst, which must hold its largest request, and its headroom:
// 0.
func edgeBurst(countsRequests bool, count, burst float64) float64 {
	if !countsRequests || count <= 0 {
		return 0
	}
	return min(burst, max(1, math.Floor((1-toldHeadroom)*count+1e-9)))
}

// trustAfter is how long a scope measures what the provider adds back
// before that measure may slow it below its blind pace: at least one
// window of a sliding-window counter, which adds nothing back in its first.
const trustAfter = 1500 * time.Millisecond

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

// supplySpan is the shortest time over which a scope measures what the
// provider adds back. Calls in flight together are counted by the provider
// in another order than they were admitted in, and answered microseconds
// apart: a count that moves by a call or two between two such answers is
// that order, not thousands of calls a second given back. Over a tenth of
// a second, sixteen callers' disorder is a few calls.
const supplySpan = 100 * time.Millisecond

// learnWindow learns the window of a limit published without one, from
// successive resets: the reset moves on by one window each time one ends.
// The shortest gap seen twice is taken, and replaced by a shorter one seen
// twice later (a gap may span windows in which no answer gave a reset). resetAt is the reset on the server's clock. It
// returns the window, once learned.
func (s *bucket) learnWindow(resetAt time.Time, whole bool) time.Duration {
	at := resetAt.UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	o := &s.reports
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
	// A shorter gap seen twice replaces a window learned from longer ones
	// (windows in which no answer gave a reset).
	switch {
	case gap == o.candidate:
		o.window = gap
	case o.candidate == 0 || gap < o.candidate:
		o.candidate = gap
	}
	return o.window
}

// windowHint takes a provider's Retry-After as the window of a limit
// published without one, until successive resets teach the real one: a
// server that publishes a count but not its window and asks to come back
// after a while most often means the window.
func (s *bucket) windowHint(wait time.Duration) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reports.window == 0 && s.reports.candidate == 0 && wait >= time.Second && wait <= time.Hour {
		s.reports.candidate = wait
	}
	if s.reports.window > 0 {
		return s.reports.window
	}
	return s.reports.candidate
}

// why says what sets the scope's pace now, for Stats.
func (s *bucket) why(now time.Time) string {
	if r := s.recov.Load(); r != nil && now.UnixNano() < r.Full {
		if rate, _ := s.scope.configuredPace(); rate == 0 && s.scope.Concurrency > 0 {
			return "a refusal lowered the cap on calls in flight; it climbs back by time"
		}
		return "recovering from a refusal"
	}
	if tp := s.told.Load(); tp != nil && now.UnixNano() < tp.until {
		return "what the provider reports remains"
	}
	if s.learned.Load() != nil {
		return "the provider's published limit"
	}
	if rate, _ := s.scope.configuredPace(); rate > 0 {
		return "the configured limit"
	}
	return ""
}
