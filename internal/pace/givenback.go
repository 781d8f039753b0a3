package pace

// What the provider gives back: the supply a count measures between
// reports (a sliding window returns what was spent a window ago, a bucket
// refills), what it gave back over the latest seconds, and what others
// spending on the key take from it.

import "time"

// neighbourNoise is the share of the blind pace by which the remaining
// count may fall faster than the scope spends before another client is
// taken to spend on the key: calls counted in another order than they were
// admitted in move the count by a call or two over the span measured.
const neighbourNoise = 0.05

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
//
// A count of the scope's first burst (burst) shows no refill: the burst
// went out at once and the server counted it in any order, so a count
// above the one before is that order. Read as a fixed window's refill, it
// barred a sliding minute from ever being seen to give back as it goes
// (Record.gradual), and the scope paused to the reset at every none left,
// to find every other turn still full: 83–104 of a window's 153 over four
// minutes, in one run in twenty over a route of up to 400 ms.
//
// Nor does the measure start from one of the burst's counts: the count
// of a call counted late but admitted early, measured against later, read
// the calls the server had counted before it as given back, and the scope
// sent into a fixed minute's none left at fifteen a second. It starts from
// the least of the burst's counts, at the last of its calls: once the
// count the server made last is read, that is what the burst left; before,
// it is more, and what comes back measures less, the safe side.
func (o *Record) measure(now time.Time, seen int64, r float64, spentAt, limit int64, local, burst bool, sc Scope) {
	if burst && local && (o.at == 0 || o.burstStart) {
		// The start from the burst: its least count, its last call.
		if o.at == 0 {
			o.remaining, o.spent = r, spentAt
		}
		o.at, o.remaining, o.spent, o.refusedAt = max(o.at, seen), min(o.remaining, r), max(o.spent, spentAt), o.refused
		o.burstStart = true
		return
	}
	if burst {
		return
	}
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
			// From none, not from the first measure (alone).
			o.drift = ease(o.drift, gain/dt, dt, max(driftTime.Seconds(), 16*o.interval))
			o.known = true
			move = true
		}
	}
	if move {
		o.at, o.remaining, o.spent, o.refusedAt = seen, r, spentAt, o.refused
		o.burstStart = false
	}
}

// givesBackFromTurn takes a turn of the count, now r of limit, that did not
// refill it (Record.gradual): a sliding window, which from its turn gives
// back what the window before counted — limit less r — evenly over the
// next window, per being the configured limit's. Its first window gave
// back nothing (the one before it was empty), so a measure still young
// (TrustAfter) reads nothing and follows the turn a supplyTime late. Read
// against it, a count a round trip old at the first turn of a sliding
// window of 100 a second over a 200–400 ms route said the calls in flight
// had spent eight more than were left, and the scope halved its pace while
// the window gave back 84 a second. The young measure starts from what the
// turn gives back instead, for a scope alone on the key: beside others,
// part of what the window counted is theirs, and they take it again.
func (o *Record) givesBackFromTurn(now time.Time, r float64, limit int64, local bool, sc Scope) {
	young := now.UnixNano()-o.first < int64(TrustAfter)
	if o.gradual && young && limit > 0 && sc.Per > 0 && o.alone(now, local, sc.Blind) {
		o.supply = max(o.supply, (float64(limit)-r)/sc.Per.Seconds())
	}
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

// follow moves a measure from was toward x, seen over dt seconds (ease);
// the first measure is x itself.
func (o *Record) follow(was, x, dt, span float64) float64 {
	if !o.known {
		return x
	}
	return ease(was, x, dt, span)
}

// ease moves a measure from was toward x, seen over dt seconds, so that it
// follows a change within span seconds.
func ease(was, x, dt, span float64) float64 {
	return was + min(1, dt/span)*(x-was)
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

// alone reports whether nobody else is seen spending on the key at now:
// over the spans measured, the count fell no faster than the scope spent,
// within the noise of calls counted out of order (neighbourNoise), both of
// late (supply, which sees a neighbour soon) and over driftTime (drift,
// which a jittery route's disorder moves less).
//
// While the measure is young (TrustAfter), by the drift alone, which
// starts from none (measure). The first measures are of the first burst,
// whose calls the server counts in another order than they were sent in:
// over a tenth of a second they move by dozens of calls a second either
// way. A scope alone on a sliding window over a 200–400 ms route measured
// 47 a second taken by others, and read as a neighbour's spending, the
// first window's count was spread over the whole second (lastsAtBlind):
// 55 a second for a second, where the blind pace was 90. A neighbour
// spending from the start moves the drift past its noise within a few
// tenths of a second all the same.
func (o *Record) alone(now time.Time, local bool, blind float64) bool {
	if !local || !o.known {
		return false
	}
	overASecond := o.drift > -o.neighbourNoise(blind, driftTime)
	if now.UnixNano()-o.first < int64(TrustAfter) {
		return overASecond
	}
	return overASecond && o.supply > -o.neighbourNoise(blind, supplyTime)
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

// Supply is what the provider has been measured to add back, net of what
// others take, in units a second; measured is false until a first measure.
func (o *Record) Supply() (perSecond float64, measured bool) { return o.supply, o.known }

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
//
// A call held on its way far beyond the route's jitter (RoundTrips.held)
// was counted when it got through, which its round trip cannot say: read
// as the longest round trip the route's jitter makes. Read from its
// admission, the answers of 64 calls a stalled route held for three
// seconds and let go together each said that a sliding window of 40 a
// second had given back 120 calls meanwhile, and the scope sent into the
// window they had just filled; behind a fixed window, the turns its counts
// were read against went astray for ten seconds.
func (o *Record) flownBack(now time.Time, sent int64) float64 {
	if !o.known || o.supply <= 0 || sent <= 0 || sent > now.UnixNano() {
		return 0
	}
	age := float64(now.UnixNano() - sent)
	if o.rtt.held(now.UnixNano() - sent) {
		age = float64(o.rtt.Floor) + o.rtt.most()
	}
	return o.supply * age / 1e9
}
