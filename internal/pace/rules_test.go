package pace

import (
	"testing"
	"time"
)

// The rules of rules.go, each alone on a reading with explicit figures: a
// scope whose blind pace is 90 a second, configured at 100 (Unreported 90),
// a call every 30 s at least (Floor), and a maximum wait of 30 s.
var ruleScope = Scope{Blind: 90, Configured: 100, Unreported: 90, Floor: 1.0 / 30, Per: time.Second, MaxWait: 30 * time.Second, CountsRequests: true}

func TestRuleBelowMargin(t *testing.T) {
	// 50 a second given back, 2 left against a margin of 5, spread over
	// a second: below the margin, the gap closes within the deficit time
	// (a quarter of a second), 50 + (2-5)/0.25 = 38, floored at half the
	// blind pace while nothing was refused of late — but not above what
	// the provider gives back, once that is measured.
	base := reading{supply: 50, left: 2, margin: 5, horizon: time.Second, deficit: 250 * time.Millisecond, quiet: true,
		reset: time.Second, window: time.Second, local: true, known: true}
	for _, tc := range []struct {
		name string
		edit func(*reading)
		rate float64
		want float64
	}{
		{"at the margin: the spread stands", func(k *reading) { k.left = 5 }, 42, 42},
		{"below it, quiet: half the blind pace at least", nil, 42, 45},
		{"below it after a refusal: the count paces alone", func(k *reading) { k.quiet = false }, 42, 38},
		{"below it, the gap over the horizon when that is sooner", func(k *reading) { k.horizon = 100 * time.Millisecond; k.quiet = false }, 42, 50 - 3/0.1},
		{"at a long window's turn: one call at a time, no floor", func(k *reading) { k.wakeOne = true }, 42, 38},
		{"beside others in a long window: no floor", func(k *reading) { k.alone = false; k.window = time.Minute }, 42, 38},
		{"beside others in a window of a second: the floor holds", func(k *reading) { k.alone = false }, 42, 45},
		{"less given back than half the blind pace: the floor is what comes back", func(k *reading) { k.supply = 10 }, 42, 10},
		{"less given back, beside others: the same", func(k *reading) { k.supply = 10; k.alone = false }, 42, 10},
		{"less given back, measured too briefly to go by: half the blind pace", func(k *reading) { k.supply = 10; k.first = true }, 42, 45},
		{"less given back, by a count whose spending the record does not all know: half the blind pace", func(k *reading) { k.supply = 10; k.local = false }, 42, 45},
		{"nothing given back: half the blind pace, for the news", func(k *reading) { k.supply = 0 }, 42, 45},
		{"less given back by a fixed window seen to turn: half the blind pace, into the turn", func(k *reading) { k.supply = 10; k.turns = true }, 42, 45},
		{"a minute to the reset of a count that holds 40: no faster than what is left and those 40 last to it", func(k *reading) { k.supply, k.reset, k.room = 0, time.Minute, 39 }, 42, (2 + 40) / 59.0},
		{"a minute to the reset of a count that holds 6,000: half the blind pace", func(k *reading) { k.supply, k.reset, k.room = 0, time.Minute, 5999 }, 42, 45},
	} {
		k := base
		if tc.edit != nil {
			tc.edit(&k)
		}
		if got := k.belowMargin(ruleScope, tc.rate); !near(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRuleLastsAtBlind(t *testing.T) {
	// 100 left against a margin of 1, reset in 1 s: 99 last a second at
	// the blind pace (90), so the count may not slow the scope below it.
	base := reading{left: 100, margin: 1, reset: time.Second, horizon: time.Second, local: true}
	for _, tc := range []struct {
		name string
		edit func(*reading)
		sc   func(*Scope)
		want float64
	}{
		{"what is left lasts at the blind pace", nil, nil, 90},
		{"it does not", func(k *reading) { k.left = 50 }, nil, 20},
		{"what comes back makes it last", func(k *reading) { k.left = 50; k.supply = 41 }, nil, 90},
		{"below the margin", func(k *reading) { k.left = 0.5 }, nil, 20},
		// A whole-second reset may be a moment away: while what comes back
		// is young and nobody else is seen, what is left need last only to
		// the soonest the reset may be — here, now.
		{"young, alone, the limit published: to the soonest reset", func(k *reading) { k.left = 5; k.first, k.alone = true, true }, func(sc *Scope) { sc.BlindWithin = true }, 90},
		{"young beside others: to the reset", func(k *reading) { k.left = 5; k.first = true }, func(sc *Scope) { sc.BlindWithin = true }, 20},
		{"young, the blind pace above the published limit", func(k *reading) { k.left = 5; k.first, k.alone = true, true }, nil, 20},
	} {
		k, sc := base, ruleScope
		if tc.edit != nil {
			tc.edit(&k)
		}
		if tc.sc != nil {
			tc.sc(&sc)
		}
		if got := k.lastsAtBlind(sc, 20); !near(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRuleGoesOnGivingBack(t *testing.T) {
	// 95 a second given back over the latest seconds with no refusal, 3
	// left against a margin of 5: the scope keeps 95, less the gap spread
	// over those seconds (heldSpan, 2 s): 94.
	base := reading{back: 95, left: 3, margin: 5, refusedNone: true, reset: time.Second, local: true, r: 3}
	for _, tc := range []struct {
		name string
		edit func(*reading)
		want float64
	}{
		{"held", nil, 94},
		{"above the margin: what came back, no more", func(k *reading) { k.left = 30 }, 95},
		{"a refusal meanwhile", func(k *reading) { k.refusedNone = false }, 20},
		{"a reset beyond those seconds", func(k *reading) { k.reset = time.Minute }, 20},
		{"young", func(k *reading) { k.first = true }, 20},
		{"a fixed window seen to turn", func(k *reading) { k.turns = true }, 20},
		{"a fleet", func(k *reading) { k.fleet = true }, 20},
		{"not this process's bucket", func(k *reading) { k.local = false }, 20},
		{"none left", func(k *reading) { k.r = 0 }, 20},
	} {
		k := base
		if tc.edit != nil {
			tc.edit(&k)
		}
		if got := k.goesOnGivingBack(20); !near(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	k := base
	if got := k.goesOnGivingBack(120); got != 120 {
		t.Errorf("a faster pace stands: %v, want 120", got)
	}
}

func TestRuleFullRefillAndWindows(t *testing.T) {
	sc := ruleScope
	for _, tc := range []struct {
		name string
		rule func(*reading, float64) float64
		k    reading
		rate float64
		want float64
	}{
		// A count full while the scope spends is a bucket refilling at
		// least as fast: young, it sets no pace below the one without a
		// count; measured, the measure paces.
		{"full and young", func(k *reading, r float64) float64 { return k.fullWhileSpending(sc, r) }, reading{full: true, first: true}, 20, 90},
		{"full, measured", func(k *reading, r float64) float64 { return k.fullWhileSpending(sc, r) }, reading{full: true}, 20, 20},
		// A fixed window is full again at its refill: a call is due by then.
		{"a turn 200 ms away", func(k *reading, r float64) float64 { return k.refillDue(r) }, reading{turns: true, refill: 200 * time.Millisecond}, 1, 5},
		{"a turn already due", func(k *reading, r float64) float64 { return k.refillDue(r) }, reading{turns: true}, 1, 50},
		{"no turns seen", func(k *reading, r float64) float64 { return k.refillDue(r) }, reading{refill: 200 * time.Millisecond}, 1, 1},
		// The next window's 60 less a margin of 1, over its second and the
		// 180 ms of it the calls in flight land in.
		{"the next window's count", func(k *reading, r float64) float64 { return k.nextWindow(r) }, reading{next: 60, margin: 1, window: time.Second, land: 180 * time.Millisecond}, 10, 59 / 1.18},
		{"no next window", func(k *reading, r float64) float64 { return k.nextWindow(r) }, reading{next: -1}, 10, 10},
		// A fixed window lets its count through in each window, no more.
		{"a window of 100 a second, alone", func(k *reading, r float64) float64 { return k.windowLetsThrough(r) }, reading{windowed: true, limit: 100, window: time.Second}, 250, 100},
		{"beside others", func(k *reading, r float64) float64 { return k.windowLetsThrough(r) }, reading{limit: 100, window: time.Second}, 250, 250},
		// A count with no room for its margin sets no pace: the limit does.
		{"no room", func(k *reading, r float64) float64 { return k.noRoom(sc, r) }, reading{roomless: true}, 2, 90},
		{"room", func(k *reading, r float64) float64 { return k.noRoom(sc, r) }, reading{}, 2, 2},
	} {
		k := tc.k
		if got := tc.rule(&k, tc.rate); !near(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	k := reading{next: 60, margin: 1, window: time.Second, left: 3}
	k.nextWindow(0)
	if k.left != 60 {
		t.Errorf("the next window's count is what is left: %v, want 60", k.left)
	}
}

func TestRuleNoneLeft(t *testing.T) {
	base := reading{reset: 5 * time.Second, window: time.Second}
	for _, tc := range []struct {
		name  string
		edit  func(*reading)
		sc    func(*Scope)
		want  time.Duration
		pause bool
	}{
		{"none left until a reset 5 s away", nil, nil, 5 * time.Second, true},
		{"some left", func(k *reading) { k.r = 1 }, nil, 0, false},
		{"a reset within a whole second's slack may be here", func(k *reading) { k.reset = time.Second }, nil, 0, false},
		{"the same once a refusal cost a pause: waited out", func(k *reading) { k.reset = time.Second }, func(sc *Scope) { sc.CostlyRefusals = true }, 2 * time.Second, true},
		{"the same in a minute's window", func(k *reading) { k.reset = time.Second; k.window = time.Minute }, nil, 2 * time.Second, true},
		{"a window told as a second, where a count stated a reset a minute away", func(k *reading) { k.reset = 17 * time.Second; k.longest = time.Minute }, nil, 18 * time.Second, true},
		{"the same, never stated more than ten seconds", func(k *reading) { k.reset = 7 * time.Second; k.longest = 10 * time.Second }, nil, 7 * time.Second, true},
		{"no longer than the maximum wait", func(k *reading) { k.reset = time.Hour }, nil, 30 * time.Second, true},
		// A count that gives back as it goes paces by what comes back.
		{"seen not to refill at its reset", func(k *reading) { k.gradual = true }, nil, 0, false},
		{"gave back a quarter of the blind pace without a refill", func(k *reading) {
			k.back, k.unrefilled, k.refusedNone, k.local = 30, true, true, true
		}, nil, 0, false},
		{"the same with a refusal meanwhile", func(k *reading) { k.back, k.unrefilled, k.local = 30, true, true }, nil, 5 * time.Second, true},
		{"the same in a fleet", func(k *reading) {
			k.back, k.unrefilled, k.refusedNone, k.local, k.fleet = 30, true, true, true, true
		}, nil, 5 * time.Second, true},
	} {
		k, sc := base, ruleScope
		if tc.edit != nil {
			tc.edit(&k)
		}
		if tc.sc != nil {
			tc.sc(&sc)
		}
		got, pause := k.noneLeft(sc)
		if got != tc.want || pause != tc.pause {
			t.Errorf("%s: %v, %v; want %v, %v", tc.name, got, pause, tc.want, tc.pause)
		}
	}
}

// TestRulesInOrder checks the order pace applies the rules in: a count
// with no room sets no pace whatever the others say, and the floor comes
// last.
func TestRulesInOrder(t *testing.T) {
	k := reading{supply: 50, left: 40, margin: 1, horizon: 500 * time.Millisecond, deficit: 250 * time.Millisecond, reset: time.Second,
		window: time.Second, turns: true, refill: 100 * time.Millisecond, roomless: true, next: -1}
	if got := k.pace(ruleScope); got != ruleScope.Unreported {
		t.Errorf("no room: %v, want the pace without a count, %v", got, ruleScope.Unreported)
	}
	k = reading{left: -1000, margin: 1, horizon: time.Second, deficit: 250 * time.Millisecond, reset: time.Second, window: time.Second, next: -1}
	if got := k.pace(ruleScope); got != ruleScope.Floor {
		t.Errorf("far below the margin after a refusal: %v, want the floor %v", got, ruleScope.Floor)
	}
	// Spread: 40 left less a margin of 1 over a horizon of half a second,
	// plus 50 given back; more than what lasts at the blind pace asks.
	k = reading{supply: 50, left: 40, margin: 1, horizon: 500 * time.Millisecond, reset: time.Second, window: time.Second, next: -1}
	if got, want := k.pace(ruleScope), 50+39/0.5; !near(got, want) {
		t.Errorf("spread: %v, want %v", got, want)
	}
}

// TestMarginWholeCallBelowQuota: below the configured quota a published
// limit is a level in whole calls (a bucket's capacity, or a limit the
// server keeps lower), and the margin is a whole call; at the quota it
// stays the share a small window can spare.
func TestMarginWholeCallBelowQuota(t *testing.T) {
	var o Record
	for _, tc := range []struct {
		name         string
		limit, quota int64
		want         float64
	}{
		{"throttled's burst of 5 and one, at 10 a second", 6, 10, 1},
		{"a window of 9 a minute, as configured", 9, 9, 0.25},
		{"a bucket of 11 at 100 a second", 11, 100, 1},
		{"a window of 200, configured at 100", 200, 100, 2},
		{"none configured", 6, 0, 0.25},
		{"none published", -1, 10, 1},
	} {
		if got := o.margin(t0, tc.limit, tc.quota, 0, time.Second); got != tc.want {
			t.Errorf("%s: margin %v, want %v", tc.name, got, tc.want)
		}
	}
	o.rtt.Spread = 200e6 // a 200–400 ms route
	if got := o.margin(t0, 6, 10, 100, time.Second); got != 10 {
		t.Errorf("over a jittery route the jitter's calls: margin %v, want 10", got)
	}
}

// TestTheMarginCoversEveryClientsDisorder: over a jittery route the margin
// is what arrives at the count in half the jitter — for a count that gives
// back as it goes, the limit's rate, everyone's calls, where the scope's
// supply is its share beside a neighbour. Not a fixed window's, spent near
// empty only at its turn; nor without a configured window to read the
// limit's rate in.
func TestTheMarginCoversEveryClientsDisorder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		gradual bool
		per     time.Duration
		supply  float64
		want    float64
	}{
		{"a sliding window of 100 a second, 60 of it the scope's", true, time.Second, 60, 5},
		{"the same, alone at the limit", true, time.Second, 100, 5},
		{"a fixed window", false, time.Second, 60, 3},
		{"no configured window", true, 0, 60, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Record{gradual: tc.gradual}
			o.rtt.Spread = 100e6 // a 200–400 ms route
			if got := o.margin(t0, 100, 100, tc.supply, tc.per); !near(got, tc.want) {
				t.Errorf("margin %v, want %v", got, tc.want)
			}
		})
	}
}

// TestABucketRefusedAtItsLevelKeepsHalfOfIt: a count that is a bucket's
// level (a published limit below the configured quota, and more given back
// in a window than twice that limit) keeps half the bucket as its margin
// once the scope has been refused after its first seconds: at a thin
// margin, the arrivals' disorder — the scope's own over a route, an
// unpaced neighbour's — empties it between counts, and half of it is as
// far from empty as from full. Not for the blind start's refusals, nor a
// window kept below what the scope was told.
func TestABucketRefusedAtItsLevelKeepsHalfOfIt(t *testing.T) {
	start := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name         string
		refusedAfter time.Duration // from the first count; 0: never refused
		limit, quota int64
		supply       float64
		want         float64
	}{
		{"a bucket of 11 at 100 a second, refused after its first seconds", 2 * time.Second, 11, 100, 100, 5},
		{"the same, refused only at the blind start", time.Second, 11, 100, 100, 1},
		{"the same, never refused", 0, 11, 100, 100, 1},
		{"a window of 100 told 200, refused", 2 * time.Second, 100, 200, 100, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o Record
			sc := Scope{Blind: 90, Configured: float64(tc.quota), Per: time.Second, Quota: tc.quota}
			o.Count(start, Count{Remaining: tc.limit - 1, Reset: time.Second, Limit: tc.limit, Mark: 1, Sent: start.UnixNano(), Local: true}, sc)
			if tc.refusedAfter > 0 {
				o.Refused(start.Add(tc.refusedAfter), 2, 1, 0)
			}
			if got := o.margin(t0, tc.limit, tc.quota, tc.supply, time.Second); got != tc.want {
				t.Errorf("margin %v, want %v", got, tc.want)
			}
		})
	}
}

// TestARefusalOfAPacedCallWidensTheMargin: a refusal of a call the counts
// paced, once the first seconds are over, says the margin did not hold the
// disorder on the key; the margin of a count that gives back as it goes
// grows by a call for each, and gives a call back every marginGiveBack
// without another. Not for the blind start's refusals, nor before the
// first seconds are over, nor on a fixed window (near empty only at its
// turn), nor on a bucket's level below the quota, whose margin is half the
// bucket then. Nor for a call held on its way, far beyond the route's
// jitter (RoundTrips.held): the calls a stalled route let go together were
// refused for arriving at once, not for any disorder the margin is for.
func TestARefusalOfAPacedCallWidensTheMargin(t *testing.T) {
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	type refusal struct {
		at   float64       // seconds after the first count
		mark int64         // the refused call's; the blind start spent 10
		trip time.Duration // the refused call's round trip; 0 if unknown
	}
	const ms = time.Millisecond
	stall := []refusal{{2, 20, 3000 * ms}, {2, 21, 3010 * ms}, {2, 22, 2990 * ms}}
	for _, tc := range []struct {
		name         string
		limit, quota int64
		refusals     []refusal
		when         float64
		want         float64 // calls beyond the margin's reckoning at when
	}{
		// The first refusal's call, a second older, is a tenth given back.
		{"two refusals, read at the second", 100, 100, []refusal{{2, 20, 300 * ms}, {3, 120, 300 * ms}}, 3, 1.9},
		{"two refusals, a call given back", 100, 100, []refusal{{2, 20, 300 * ms}, {3, 120, 300 * ms}}, 3 + marginGiveBack.Seconds(), 0.9},
		{"given back in full", 100, 100, []refusal{{2, 20, 300 * ms}, {3, 120, 300 * ms}}, 30, 0},
		{"the round trip unknown", 100, 100, []refusal{{2, 20, 0}}, 2, 1},
		{"a slow call, within the route's jitter", 100, 100, []refusal{{2, 20, 450 * ms}}, 2, 1},
		{"the calls a stall held", 100, 100, stall, 2, 0},
		{"the calls a stall held, and one after", 100, 100, append(stall[:3:3], refusal{2.5, 80, 250 * ms}), 2.5, 1},
		{"in the first seconds", 100, 100, []refusal{{0.5, 20, 300 * ms}, {1, 60, 300 * ms}}, 1, 0},
		{"of the blind start", 100, 100, []refusal{{2, 5, 300 * ms}, {3, 6, 300 * ms}}, 3, 0},
		{"none published", -1, 100, []refusal{{2, 20, 300 * ms}}, 2, 1},
		{"a bucket's level below the quota", 11, 100, []refusal{{2, 20, 300 * ms}}, 2, 0},
		{"a fixed window", 100, 100, []refusal{{2, 20, 300 * ms}}, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A route of 200–400 ms, its spread settled.
			o := &Record{first: t0.UnixNano(), blindSpent: 10, gradual: tc.name != "a fixed window",
				rtt: RoundTrips{Floor: int64(200 * ms), Spread: float64(100 * ms), seen: spreadTrips}}
			base := o.margin(at(tc.when), tc.limit, tc.quota, 0, time.Second)
			for _, r := range tc.refusals {
				var sent int64
				if r.trip > 0 {
					sent = at(r.at).Add(-r.trip).UnixNano()
				}
				o.Refused(at(r.at), r.mark, 1, sent)
			}
			if got := o.margin(at(tc.when), tc.limit, tc.quota, 0, time.Second) - base; !near(got, tc.want) {
				t.Errorf("the margin widened by %v calls, want %v", got, tc.want)
			}
		})
	}
}
