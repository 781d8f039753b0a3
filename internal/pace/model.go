package pace

import "math"

// While the provider reports live remaining counts, a scope whose counts
// are about the limit it paces by aims at the limit itself (LivePace.Edge,
// Base). The configured headroom is for flying blind; with the provider
// saying what is left, the remaining count is the guard, and the margin it
// keeps (Margin, widened by the route's jitter) is the headroom. A second
// headroom under the limit only held the scope below where the count would
// have let it settle: a token bucket whose count of eleven any pace above
// its refill spends was paced at 98 a second of its 100 (0.969 of the
// quota on a busy host; 0.988 at the limit, eight draws of the virtual
// matrix).

// edgeBurstShare is the share of its count a scope at the edge may send at
// once (EdgeBurst).
const edgeBurstShare = 0.02

// Capacity is a limit as a scope paces by it: Rate (units a second) and
// Burst at the Transport's headroom; Raw, the limit in units a second
// before any headroom (0 without a rate); and EdgeBurst, the burst kept
// while live counts let the scope aim at Raw (0: none).
type Capacity struct{ Rate, Burst, Raw, EdgeBurst float64 }

// EdgeBurst is the burst a scope counted in requests keeps while it aims at
// a limit of count per window: a fiftieth of count, at least one, and no
// more than burst. A window may see the limit and this burst; the count
// paces the scope down before what it says is left runs out, so the burst
// is spent only out of what the count shows. A burst of one did worse
// beside an unpaced neighbour on a busy host: the neighbour of a token
// bucket was refused 1.7 % of its calls, not 0.9 % (eight draws of the
// virtual matrix). A scope counted in another unit keeps its burst, which
// must hold its largest request, and its headroom: 0.
func EdgeBurst(countsRequests bool, count, burst float64) float64 {
	if !countsRequests || count <= 0 {
		return 0
	}
	return min(burst, max(1, math.Floor(edgeBurstShare*count+1e-9)))
}

// Configured is what a scope's configuration says of its pace: the
// configured limit's Capacity, and whether the limit is Provisional, a
// stand-in for the one the provider publishes.
type Configured struct {
	Capacity
	Provisional bool
}

// LivePace is the pace a live remaining count allows (Record.Count's
// Verdict), until Until (UnixNano) when the report stops applying; the
// zero LivePace is none.
type LivePace struct {
	Rate  float64 // units a second
	Until int64
	// Edge says the report is about the limit the scope paces by, so that
	// it may aim at the limit itself. It is not when the configured limit is
	// below the published one: a limit set low on purpose keeps its
	// headroom.
	Edge bool
	// WakeAtMost is the fastest what wakes a waiting call may spend, one
	// call by Until at least (Base); 0 for no bound. For a count seen to
	// give back as it goes, behind a configured pace more than the server
	// holds in its window: what the count gives back, and what is left
	// spread over the hold. Each count arms the wake anew to its own
	// reset, and a reset counting down to a window's end raised it to the
	// burst a second at the window's last second, into a sliding window
	// that gives back no faster at its end than before.
	WakeAtMost float64
	// Holds is the most calls the count has shown the server holds at
	// once: what wakes a waiting call refills no more (Base). A scope told
	// 1,000 a second against a fixed minute of 40 whose first window ended
	// within a second and a half of its start refilled its configured
	// burst of 100 into that window's none left each second: 49–95 calls
	// refused there, 18–40 refilling the 40 the count had shown.
	Holds float64
	// Roomless says the count has no room for its margin and sets no pace:
	// a cut applies, as to a scope without counts.
	Roomless bool
	// Why is the reading of the count that set Rate (Verdict.Why).
	Why string
	// WakeOne says a refusal has cost the scope more than the call
	// (Scope.CostlyRefusals) and it counts requests: what wakes a waiting
	// call as the report runs out lets one call through, not a burst
	// (Base). At httprate's turn of a minute the count had said none
	// left, the burst went out into it, and its refusal asked for the next
	// minute.
	WakeOne bool
	// Then is, for a report that wakes one call (WakeOne), when the scope
	// stops sending one call at a time after Until if no count has come
	// since (UnixNano; 0 for none). A report that runs out with no news
	// says nothing new: at the blind pace the bucket refilled to its
	// burst, and every waiting call went out at once into the turn it was
	// waiting on.
	Then int64
}

// A Model is a scope's one model of the provider's admission capacity:
// each figure it paces by, with the evidence it came from. The configured
// limit is the prior; a limit the provider published replaces it
// (Published); live remaining counts pace the scope within it while they
// come (Live); a refusal that taught nothing else scales it down for a
// while (Climb). A Record and a Cuts are the evidence behind Live and
// Climb: what the counts showed, and what the server accepted and refused.
//
// A Model is immutable: its owner replaces it whole, so that a reader
// without a lock sees one consistent model. The nil *Model is the
// configured limit alone; every method takes it.
type Model struct {
	// Published is a limit the provider published; nil if none.
	Published *Capacity
	// Live is the pace the latest live count allows; zero if none.
	Live LivePace
	// Climb is the climb back after a cut; nil at the full pace.
	Climb *Curve
}

// overruled reports whether a refusal no count explained made the climb
// at now (Curve.Overruled).
func (m *Model) overruled(now int64) bool {
	return m != nil && m.Climb != nil && m.Climb.Overruled && now < m.Climb.Full
}

// Empty reports whether m says nothing beyond the configured limit.
func (m *Model) Empty() bool {
	return m == nil || m.Published == nil && m.Live.Until == 0 && m.Live.Then == 0 && m.Climb == nil
}

// limit is the limit the scope paces by without a live count: the
// published one, else the configured one.
func (m *Model) limit(cfg Configured) Capacity {
	if m != nil && m.Published != nil {
		return *m.Published
	}
	return cfg.Capacity
}

// live reports whether a live count paces the scope at now.
func (m *Model) live(now int64) bool {
	return m != nil && now < m.Live.Until
}

// oneAtATime reports whether a report that woke one call has run out at
// now with no count since, and the scope still sends one call at a time
// (LivePace.Then).
func (m *Model) oneAtATime(now int64) bool {
	return m != nil && m.Live.WakeOne && now < m.Live.Then
}

// Outranked reports whether live counts pace the scope above its published
// limit at now, up to cfg's: the published figure is below the configured
// one, and not a provisional stand-in's replacement. A published figure is
// a reading of the headers; live counts are what the server does. A token
// bucket that publishes its capacity (11) with the seconds until it is
// full (1) reads as 11 a second while it accepts 100.
func (m *Model) Outranked(now int64, cfg Configured) bool {
	return m.live(now) && m.outranked(cfg)
}

// outranked is Outranked, whether or not a live count paces the scope.
func (m *Model) outranked(cfg Configured) bool {
	return m != nil && m.Published != nil && cfg.Rate > m.Published.Rate && !cfg.Provisional
}

// Base returns the scope's pace at now before any cut: its limit's at the
// Transport's headroom, or — while a live count paces it — at the limit
// itself, and no faster than the count allows.
func (m *Model) Base(now int64, cfg Configured) (rate, burst float64) {
	c := m.limit(cfg)
	if c.Rate <= 0 {
		return c.Rate, c.Burst
	}
	if !m.live(now) {
		if m.oneAtATime(now) {
			return c.Rate, min(c.Burst, 1)
		}
		return c.Rate, c.Burst
	}
	if m.outranked(cfg) {
		c = cfg.Capacity
	}
	rate, burst = c.Rate, c.Burst
	l := &m.Live
	// A count a refusal overruled is not the whole truth, and its margin
	// no headroom: the scope keeps the blind one until the climb ends.
	// Aimed at the limit, the cut's share of a pace that rose by the
	// headroom's tenth went above what the server had accepted at once.
	if l.Edge && !m.overruled(now) && c.EdgeBurst > 0 && c.Raw > rate {
		rate, burst = c.Raw, c.EdgeBurst
	}
	if l.Roomless {
		// A count with no room for its margin: a burst beyond what it has
		// shown it holds is refused whatever the pace, as a server bucket
		// of one refuses the second of two calls sent together.
		burst = min(burst, l.Holds)
	}
	// A call that waits at the reported pace wakes by the time the report
	// runs out, to pace itself anew: nothing else wakes it when no call is
	// in flight. The bucket refills to its burst by then, which sends
	// beyond what the count allows — a probe that costs one refused call
	// where the count was right — but no more than the count has shown the
	// server holds at once (Holds): a configured burst beyond that is
	// refused at a count's end whatever the server counts by. Server
	// property: a limiter lets through at once no more than its count
	// has shown, less what it counted meanwhile. Where a refusal costs
	// more (WakeOne), it refills to one call, and holds no more while
	// that floor paces the scope: a bucket refills at the pace it is asked
	// at, over all the time since it was last taken from, and the floor
	// rises as the report runs out, so a call that had slept a second
	// woke to the whole burst — sixteen calls at once into a minute's
	// window at none left.
	wake := burst
	if l.Holds > 0 {
		wake = min(wake, l.Holds)
	}
	if l.WakeOne {
		wake = min(burst, 1)
	}
	floor := wake * 1e9 / float64(l.Until-now)
	if l.WakeAtMost > 0 {
		floor = max(min(floor, l.WakeAtMost), min(wake, 1)*1e9/float64(l.Until-now))
	}
	if l.WakeOne && floor > l.Rate {
		burst = wake
	}
	return min(rate, max(l.Rate, floor)), burst
}

// Pace returns the scope's pace at now: Base, times the share a cut left
// (Climb) unless a live count sets it — a count paces by what it says; a
// cut is for the pace without one — or has no room to pace by, or was
// overruled by a refusal it did not explain (Curve.Overruled).
func (m *Model) Pace(now int64, cfg Configured) (rate, burst float64) {
	rate, burst = m.Base(now, cfg)
	if m != nil && m.Climb != nil && (!m.live(now) || m.Live.Roomless || m.overruled(now)) {
		rate *= m.Climb.Factor(now)
	}
	return rate, burst
}

// Factor returns the share of the scope's pace a cut leaves at now: below
// 1 while it climbs back.
func (m *Model) Factor(now int64) float64 {
	if m == nil || m.Climb == nil {
		return 1
	}
	return m.Climb.Factor(now)
}

// Blind returns the scope's rate from its limit alone, the published or
// configured one: the pace it returns to once live counts stop.
func (m *Model) Blind(cfg Configured) float64 {
	return m.limit(cfg).Rate
}

// Unreported returns the rate Base gives the scope without a live count's
// report: the configured limit's, or the published one's where that is
// lower and counts do not outrank it.
func (m *Model) Unreported(cfg Configured) float64 {
	if m.outranked(cfg) {
		return cfg.Rate
	}
	return m.Blind(cfg)
}

// Roomless reports whether the live count at now has no room to pace by.
func (m *Model) Roomless(now int64) bool {
	return m.live(now) && m.Live.Roomless
}

// Tidy returns m without what has run out by now — a live count's pace
// past its Until, a climb at its end — or m itself if nothing has; nil
// if nothing is left. climbed says a climb ended. The methods read a part
// that ran out as gone already; Tidy is for the owner, to keep a model
// that says nothing from being read at all, and to say a climb is over.
func (m *Model) Tidy(now int64) (t *Model, climbed bool) {
	if m == nil {
		return nil, false
	}
	liveOut := m.Live.Until != 0 && now >= m.Live.Until
	quiet := m.Live.Then != 0 && now >= m.Live.Then
	climbed = m.Climb != nil && now >= m.Climb.Full
	if !liveOut && !quiet && !climbed {
		return m, false
	}
	n := *m
	switch {
	case quiet:
		n.Live = LivePace{}
	case liveOut && m.Live.WakeOne && m.Live.Then != 0:
		// Until Then, one call at a time (oneAtATime).
		n.Live = LivePace{WakeOne: true, Then: m.Live.Then}
	case liveOut:
		n.Live = LivePace{}
	}
	if climbed {
		n.Climb = nil
	}
	if n.Empty() {
		return nil, climbed
	}
	return &n, climbed
}

// Why says what sets the scope's pace at now, for Stats; "" for a scope
// with no pace. slotsOnly says the scope caps only its calls in flight, so
// that a cut lowers that cap.
func (m *Model) Why(now int64, cfg Configured, slotsOnly bool) string {
	switch {
	case m != nil && m.Climb != nil && now < m.Climb.Full:
		if slotsOnly {
			return "a refusal lowered the cap on calls in flight; it climbs back by time"
		}
		if m.Climb.Overruled {
			return "recovering from a refusal the provider's count did not explain: it limits by more than it counts"
		}
		return "recovering from a refusal"
	case m.live(now):
		if m.Live.Why != "" {
			return "what the provider reports remains: " + m.Live.Why
		}
		return "what the provider reports remains"
	case m.oneAtATime(now):
		return "what the provider reported remains ran out with no news since: one call at a time until it reports again"
	case m != nil && m.Published != nil:
		return "the provider's published limit"
	case cfg.Rate > 0:
		return "the configured limit"
	}
	return ""
}
