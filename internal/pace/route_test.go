package pace

import (
	"sort"
	"strings"
	"testing"
	"time"
)

// A route is a fixed window of 100 a second, turning on each second from
// t0, reached over a network: each call of the scope's is sent at a steady
// pace and counted when it arrives (out), and its answer, with the count
// it was given, comes back after another way (back). A neighbour, unpaced,
// spends on the same window at its own pace. The scope sends whatever the
// verdicts say (open loop), so that what a Record reads of the route is
// the route's, not a pace's.
type route struct {
	pace      float64       // the scope's calls a second
	scope     Scope         // the scope's paces; scope100's when zero
	neighbour float64       // the neighbour's calls a second
	way       time.Duration // the shortest way, each way
	jitter    time.Duration // up to so much more, each way
	seconds   int
}

// A routeAnswer is one answer as the scope reads it, with what the route
// knows of it.
type routeAnswer struct {
	at      time.Time // when the scope read it
	sent    time.Time
	arrived time.Time // when the server counted it
	count   Count
	verdict Verdict
	// left is what the window had left for a call sent at the answer's
	// arrival, the scope's calls in flight and the neighbour's meanwhile
	// taken off: what Left should say.
	left float64
	// land is, after the answer, how long until the calls sent arrive
	// after the turn, by the Record's reckoning (Refill less the floor);
	// supply what it measures given back, over driftTime (a neighbour's
	// spending, on a fixed window).
	land   time.Duration
	supply float64
}

// spread returns a deterministic draw in [0, d] for call i and way k.
func spread(i, k int, d time.Duration) time.Duration {
	x := uint64(i)*0x9E3779B97F4A7C15 + uint64(k)*0xBF58476D1CE4E5B9
	x ^= x >> 31
	x *= 0x94D049BB133111EB
	x ^= x >> 29
	return time.Duration(x % uint64(d+1))
}

// run feeds o the route's answers in the order they come back, and returns
// them with their verdicts.
func (r route) run(o *Record) []routeAnswer {
	type call struct {
		sent, arrived, back time.Time
		mark                int64
		neighbour           bool
	}
	var calls []call
	n := int(r.pace * float64(r.seconds))
	for i := range n {
		sent := t0.Add(time.Duration(float64(i) / r.pace * 1e9))
		out := r.way + spread(i, 0, r.jitter)
		back := r.way + spread(i, 1, r.jitter)
		calls = append(calls, call{sent: sent, arrived: sent.Add(out), back: sent.Add(out + back), mark: int64(i + 1)})
	}
	if r.neighbour > 0 {
		for i := range int(r.neighbour * float64(r.seconds)) {
			at := t0.Add(time.Duration((float64(i) + 0.5) / r.neighbour * 1e9))
			calls = append(calls, call{arrived: at, neighbour: true})
		}
	}
	// The server counts in the order of arrival, each window its own.
	sort.Slice(calls, func(a, b int) bool { return calls[a].arrived.Before(calls[b].arrived) })
	counted := map[int64]int64{}
	remaining := make([]int64, len(calls))
	for i, c := range calls {
		w := int64(c.arrived.Sub(t0) / time.Second)
		if counted[w] < 100 {
			counted[w]++
		}
		remaining[i] = 100 - counted[w]
	}
	// leftFor is what the window of at has left for a call arriving then.
	leftFor := func(at time.Time) float64 {
		w := int64(at.Sub(t0) / time.Second)
		n := 0.0
		for _, c := range calls {
			if int64(c.arrived.Sub(t0)/time.Second) == w && c.arrived.Before(at) {
				n++
			}
		}
		return 100 - n
	}
	var answers []routeAnswer
	for i, c := range calls {
		if !c.neighbour {
			reset := t0.Add((c.arrived.Sub(t0)/time.Second + 1) * time.Second).Sub(c.arrived).Truncate(time.Second)
			answers = append(answers, routeAnswer{at: c.back, sent: c.sent, arrived: c.arrived,
				count: Count{Remaining: remaining[i], Reset: reset, Limit: 100, Mark: c.mark, Sent: c.sent.UnixNano(), Local: true}})
		}
	}
	sort.Slice(answers, func(a, b int) bool { return answers[a].at.Before(answers[b].at) })
	for i := range answers {
		a := &answers[i]
		spent := int64(float64(a.at.Sub(t0))/1e9*r.pace) + 1
		sc := r.scope
		if sc.Blind == 0 {
			sc = scope100(0)
		}
		sc.Spent = spent
		a.verdict = o.Count(a.at, a.count, sc)
		a.land = o.Refill(a.at, time.Second) - time.Duration(o.rtt.Floor)
		a.supply = o.drift
		// A call sent now arrives a way and half the jitter later.
		a.left = leftFor(a.at.Add(r.way + r.jitter/2))
	}
	return answers
}

// Over a jittery route the count is a dozen calls ahead or behind what the
// order of sending says, and the measure of what comes back moves by a
// fifth of the pace over supplyTime: a scope alone is still seen alone,
// and spends the next window near a turn. On loopback the same fall is a
// neighbour's. While the measure is young, the first burst's disorder
// moves it by dozens of calls a second, and only the drift, which starts
// from none, says whether others spend: a neighbour from the start still
// shows within a few tenths of a second.
func TestAScopeAloneOverAJitteryRouteIsSeenAlone(t *testing.T) {
	for _, tt := range []struct {
		name          string
		young         bool
		spread        float64 // ns
		supply, drift float64
		want          bool
	}{
		{"loopback, a count falling by 20 a second more than spent", false, 0, -20, -20, false},
		{"a 200–400 ms route, the same of late, less over a second", false, 100e6, -20, -3, true},
		{"a 200–400 ms route, a neighbour at 40 a second", false, 100e6, -40, -40, false},
		{"loopback, alone", false, 0, 1, 0.5, true},
		{"young, a 200–400 ms route: the first burst's disorder", true, 100e6, -47, -5, true},
		{"young, a 200–400 ms route: a neighbour at 40 a second for 0.3 s", true, 100e6, -40, -12, false},
		{"young, loopback: a neighbour at 40 a second for 0.15 s", true, 0, -40, -6, false},
		{"the same, no longer young", false, 100e6, -47, -5, false},
	} {
		o := &Record{known: true, supply: tt.supply, drift: tt.drift, first: t0.UnixNano()}
		o.rtt.Spread = tt.spread
		now := t0.Add(time.Minute)
		if tt.young {
			now = t0.Add(TrustAfter / 2)
		}
		if got := o.alone(now, true, 90); got != tt.want {
			t.Errorf("%s: alone = %v, want %v (noise %.1f of late, %.1f over a second)", tt.name, got, tt.want,
				o.neighbourNoise(90, supplyTime), o.neighbourNoise(90, driftTime))
		}
	}
}

// A fixed window's turn is seen by the first answer counted after it, a
// way back and a jitter late: the turns are dated by the earlier of the
// latest refills seen, on the window's period, not by the latest alone
// (which wanders by the jitter, and the gap between two by twice it).
func TestAFixedWindowsTurnsAreDatedByTheEarliestSeenLately(t *testing.T) {
	o := &Record{}
	r := route{pace: 95, way: 100 * time.Millisecond, jitter: 100 * time.Millisecond, seconds: 8}
	answers := r.run(o)
	last := answers[len(answers)-1].at
	refill := o.Refill(last, time.Second)
	turn := t0.Add(last.Sub(t0).Truncate(time.Second) + time.Second)
	// Seen at the earliest a way back after the turn, and the first call
	// counted after it is up to a call's gap late.
	if late := last.Add(refill).Sub(turn); late < r.way || late > r.way+30*time.Millisecond {
		t.Errorf("the next turn at %v is expected to be seen %v after it, want a way back (%v) and at most 30 ms more",
			turn.Sub(t0), late, r.way)
	}
}

// Near a fixed window's turn, over a round trip, the answers in hand are
// of the window that is ending, and the calls sent from now on spend the
// next: a count overtaken by a later one says the next window's count,
// less the calls on their way to it, is left — not this one's, less the
// calls in flight, which emptied the bucket at every turn. And a count
// made before the latest turn bounds nothing.
func TestOldCountsAtAFixedWindowsTurn(t *testing.T) {
	o := &Record{}
	r := route{pace: 95, way: 100 * time.Millisecond, jitter: 100 * time.Millisecond, seconds: 8}
	var before, nextMode, lowNext int
	for _, a := range r.run(o) {
		if a.at.Before(t0.Add(3 * time.Second)) {
			continue
		}
		v := a.verdict
		turnSeen := a.at.Sub(t0).Truncate(time.Second) // the latest turn
		if v.Before {
			before++
			if !a.arrived.Before(t0.Add(turnSeen)) {
				t.Errorf("a count made at %v, after the turn at %v, was taken for one from before it", a.arrived.Sub(t0), turnSeen)
			}
		}
		// From a round trip's floor before the turn is seen (a way back
		// after it), calls sent spend the next window.
		if p := a.at.Sub(t0) % time.Second; !v.Paced && !v.Before && (p > 920*time.Millisecond || p < 80*time.Millisecond) {
			nextMode++
			if v.Left < 60 {
				lowNext++
			}
		}
	}
	if before == 0 {
		t.Error("no count overtaken at a turn was taken for one from before it")
	}
	if nextMode == 0 {
		t.Error("no count overtaken near a turn")
	}
	if lowNext > nextMode/10 {
		t.Errorf("%d of %d counts overtaken near a turn read less than 60 left, want the next window's count less the calls on their way", lowNext, nextMode)
	}
}

// Beside a neighbour on a fixed window, what is left for a call sent now
// is the count less the scope's calls in flight and less what the
// neighbour took since the count was made; and a call sent later than a
// round trip's floor before the turn spends the next window, neighbour or
// not.
func TestAFixedWindowsCountBesideANeighbour(t *testing.T) {
	o := &Record{}
	r := route{pace: 55, neighbour: 40, way: 100 * time.Millisecond, jitter: 100 * time.Millisecond, seconds: 8}
	var n int
	var sum float64
	for _, a := range r.run(o) {
		// Mid-window, from the fourth second.
		if a.at.Before(t0.Add(3*time.Second)) || !a.verdict.Paced {
			continue
		}
		if p := a.arrived.Sub(t0) % time.Second; p < 300*time.Millisecond || p > 700*time.Millisecond {
			continue
		}
		n++
		sum += a.verdict.Left - a.left
	}
	if n == 0 {
		t.Fatal("no count mid-window")
	}
	if bias := sum / float64(n); bias > 3 || bias < -6 {
		t.Errorf("mid-window beside a neighbour at 40 a second, Left is %.1f calls off what the window has left for a call sent then, on average; want within a few, and not above", bias)
	}
}

// A fixed window lets its count through in each window, no more: a scope
// alone on it paces at most at its count a window, however high its
// configured limit (here 200, the provider's 100); and once the calls it
// sends spend the next window, it spreads the next window's count over
// what is left of the next window's sending, not over a whole window.
func TestAFixedWindowsCountPacesAScopeAlone(t *testing.T) {
	o := &Record{}
	sc := scope100(0)
	sc.Configured, sc.Unreported = 180, 180
	r := route{pace: 95, scope: sc, way: 100 * time.Millisecond, jitter: 100 * time.Millisecond, seconds: 8}
	var next, over int
	var ratio float64
	for _, a := range r.run(o) {
		v := a.verdict
		if a.at.Before(t0.Add(3*time.Second)) || !v.Paced {
			continue
		}
		if v.Rate > 100 {
			t.Errorf("at %v a scope alone on a fixed window of 100 a second is paced at %.0f", a.at.Sub(t0), v.Rate)
		}
		if a.land < 0 && a.land > -150*time.Millisecond && v.Left > 50 {
			if !strings.Contains(v.Why, "next window") {
				t.Errorf("at %v the next window's count paces the scope, and Why says %q", a.at.Sub(t0), v.Why)
			}
			next++
			ratio += v.Rate / (v.Left - 1)
			if v.Rate < 90 {
				over++
			}
		}
	}
	if next == 0 {
		t.Fatal("no count once the calls sent spend the next window")
	}
	if over > next/10 {
		t.Errorf("%d of %d counts once the calls sent spend the next window paced it below 90 a second: the next window's count spread over a whole window", over, next)
	}
	if m := ratio / float64(next); m <= 1.01 {
		t.Errorf("the next window's count, once the calls sent spend it, is spread at %.3f of itself a second, want more than once a second", m)
	}
}

// Beside a neighbour too, a call sent later than a round trip's floor
// before a fixed window's turn spends the next window: what this one has
// left is spread until then, not until the turn is seen.
func TestAFixedWindowsTurnLandsBesideANeighbour(t *testing.T) {
	o := &Record{}
	r := route{pace: 55, neighbour: 40, way: 100 * time.Millisecond, jitter: 100 * time.Millisecond, seconds: 8}
	var n, short int
	for _, a := range r.run(o) {
		v := a.verdict
		if a.at.Before(t0.Add(3*time.Second)) || !v.Paced || a.land < 100*time.Millisecond || a.land > 300*time.Millisecond || v.Left < 5 {
			continue
		}
		n++
		if want := a.supply + (v.Left-1)/a.land.Seconds(); v.Rate < want-2 {
			short++
		}
	}
	if n == 0 {
		t.Fatal("no count in the last 300 ms before the calls sent land after the turn")
	}
	if short > n/10 {
		t.Errorf("%d of %d counts beside a neighbour spread what was left past the last call to land before the turn", short, n)
	}
}
