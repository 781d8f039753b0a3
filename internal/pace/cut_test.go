package pace

import (
	"math"
	"testing"
	"time"
)

var cutStart = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// cutAt is cutStart plus s seconds.
func cutAt(s float64) time.Time { return cutStart.Add(time.Duration(s * float64(time.Second))) }

// accept records, from second from to second to, calls the provider
// accepted at rate a second, with the scope pacing at pace, as the owner
// does: a point every AcceptanceStep calls. It returns the accepted count
// at to.
func accept(c *Cuts, ok int64, from, to, rate, pace float64) int64 {
	every := AcceptanceStep / rate
	n := ok
	for t := from + every; t <= to+1e-9; t += every {
		n += AcceptanceStep
		c.Accepted(cutAt(t).UnixNano(), n, n, pace)
	}
	return ok + int64(math.Round(rate*(to-from)))
}

// A refusal cuts the pace to what the server accepted over the last
// measuring window, less a headroom, and prices the climb back by what the
// refusal cost. Where it is the window's only refusal, the server accepted
// every call before it, a burst above its rate among them: the measure is
// the scope's pace, and the headroom the wider one.
func TestARefusalCutsToWhatTheServerAccepted(t *testing.T) {
	for _, tt := range []struct {
		name       string
		base       float64 // the scope's full pace, a second
		accepted   float64 // a second, over the two seconds before the refusal; 0: no history
		refused    int64   // refusals back within the window before this one
		retryAfter time.Duration
		wantWmax   float64
		wantF0     float64
		measured   bool
		pauses     bool
		over       time.Duration
	}{
		{"a bare 429, measured", 100, 50, 3, 0, 0.5, 0.5 * CapacityHeadroom, true, false, CheapRecovery},
		{"a bare 429, the window's only refusal", 100, 50, 0, 0, 0.5, 0.5 * CostlyHeadroom, true, false, CheapRecovery},
		{"a brief Retry-After, measured: only the call waits", 100, 50, 3, time.Second, 0.5, 0.5 * CostlyHeadroom, true, false, CheapRecovery},
		{"a long Retry-After stops the scope", 100, 50, 3, 5 * time.Second, 0.5, 0.5 * CostlyHeadroom, true, true, CostlyRecovery},
		{"no history: halve", 100, 0, 0, 0, 1, ShortHistoryCut, false, false, CheapRecovery},
		{"no history and a Retry-After: halve, pause", 100, 0, 0, time.Second, 1, ShortHistoryCut, false, true, CostlyRecovery},
		// A second's pause of a scope that sends a call a second costs
		// about that call: it pauses, and climbs back as after a bare 429.
		{"no history and a Retry-After at a call a second: halve, pause, a bare 429's climb", 1, 0, 0, time.Second, 1, ShortHistoryCut, false, true, CheapRecovery},
		{"the same at two calls a second: the pause's climb", 2, 0, 0, time.Second, 1, ShortHistoryCut, false, true, CostlyRecovery},
		{"more accepted than the pace: no rise", 100, 150, 3, 0, 1, CapacityHeadroom, true, false, CheapRecovery},
		// Thirty-two points of eight calls are half a second at 500 a
		// second, less than half the measuring window: the points keep
		// their span in time, and the cut is measured.
		{"paced at 900, 500 accepted, a brief Retry-After", 900, 500, 0, time.Second, 0.5 / 0.9, 0.5 / 0.9 * CostlyHeadroom, true, false, CheapRecovery},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c Cuts
			var ok int64
			if tt.accepted > 0 {
				ok = accept(&c, 0, 0, 2, tt.accepted, tt.base)
			}
			c.refused += tt.refused // refused since the points were taken
			admitted := max(ok, 200)
			v := c.Refused(cutAt(2), Refusal{AdmittedAt: admitted, Admitted: admitted, Accepted: ok, RetryAfter: tt.retryAfter,
				Base: tt.base, Burst: 10, WaitFloor: 1.0 / 60, ProbeFloor: 1})
			if v.Curve == nil {
				t.Fatal("no cut")
			}
			r := v.Curve
			if math.Abs(r.Wmax-tt.wantWmax) > 0.01 || math.Abs(r.F0-tt.wantF0) > 0.01 || r.Measured != tt.measured ||
				v.Pauses != tt.pauses || r.Over != tt.over {
				t.Errorf("cut to wmax %.3f f0 %.3f measured %v pauses %v over %v; want %.3f %.3f %v %v %v",
					r.Wmax, r.F0, r.Measured, v.Pauses, r.Over, tt.wantWmax, tt.wantF0, tt.measured, tt.pauses, tt.over)
			}
			if r.At != cutAt(2).UnixNano() {
				t.Errorf("the cut is dated %v, want the refusal's time", time.Unix(0, r.At).UTC())
			}
		})
	}
}

// A halving for want of history flattens its climb at what the calls
// answered after it measure: of sixteen or more, the share the server
// accepted, times the pace it halved. The climb keeps its start and floor.
// Not on fewer, not twice, not after a mark that made the calls old news
// for another cause, and not on a climb a pause priced (CostlyRecovery).
func TestTheCallsAnsweredAfterAHalvingMeasureIt(t *testing.T) {
	for _, tt := range []struct {
		name              string
		retryAfter        time.Duration
		accepted, refused int  // answered after the halving, the refusals last
		marked            bool // a mark (Cuts.Mark) before the answers
		wmax              float64
	}{
		{"a quarter refused", 0, 12, 4, false, 0.75},
		{"more refused than half: no lower than the halving", 0, 4, 12, false, ShortHistoryCut},
		{"fewer than sixteen answered", 0, 8, 4, false, 1},
		{"after a mark", 0, 12, 4, true, 1},
		{"a climb a pause priced", time.Second, 12, 4, false, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c Cuts
			first := c.Refused(cutAt(1), Refusal{AdmittedAt: 90, Admitted: 100, RetryAfter: tt.retryAfter, Base: 90, Burst: 10})
			if first.Curve == nil || first.Curve.Measured || first.Curve.Wmax != 1 || first.Curve.F0 != ShortHistoryCut {
				t.Fatalf("the first refusal cut to %+v, want a halving for want of history", first.Curve)
			}
			if tt.marked {
				c.Mark(105)
			}
			ok := int64(tt.accepted)
			climb := first.Curve
			measured := 0
			for i := range tt.refused {
				v := c.Refused(cutAt(1.1+0.01*float64(i)), Refusal{AdmittedAt: 91 + int64(i), Admitted: 110, Accepted: ok,
					RetryAfter: tt.retryAfter, Base: 90, Burst: 10, Curve: climb})
				if v.Curve != nil {
					measured++
					climb = v.Curve
				}
			}
			if measured > 1 {
				t.Fatalf("the climb was measured %d times, want once at most", measured)
			}
			if math.Abs(climb.Wmax-tt.wmax) > 1e-9 {
				t.Errorf("the climb flattens at %.4f, want %.4f", climb.Wmax, tt.wmax)
			}
			if measured == 1 && (climb.At != first.Curve.At || climb.F0 != first.Curve.F0 || climb.Over != first.Curve.Over || !climb.Measured) {
				t.Errorf("measured to %+v, want the halving's start, floor and length, marked measured", climb)
			}
		})
	}
}

// A brief Retry-After on a call sent before a cut that had too little
// history to measure (the first refusal, which paused the scope) pauses
// only its call; a long one pauses the scope.
func TestOldNewsAfterAnUnmeasuredCut(t *testing.T) {
	var c Cuts
	ok := accept(&c, 0, 0, 0.2, 50, 100) // a fifth of a second: too little to measure on
	first := c.Refused(cutAt(0.2), Refusal{AdmittedAt: 20, Admitted: 30, Accepted: ok, RetryAfter: time.Second, Base: 100, Burst: 10})
	if first.Curve == nil || first.Curve.Measured || !first.Pauses {
		t.Fatalf("the first refusal: %+v, want an unmeasured cut that pauses", first)
	}
	for _, tt := range []struct {
		retryAfter time.Duration
		pauses     bool
	}{{time.Second, false}, {5 * time.Second, true}} {
		c := c
		v := c.Refused(cutAt(0.4), Refusal{AdmittedAt: 25, Admitted: 40, Accepted: ok, RetryAfter: tt.retryAfter, Base: 100, Burst: 10, Curve: first.Curve})
		if v.Curve != nil || v.Pauses != tt.pauses {
			t.Errorf("Retry-After %v on a call sent before the cut: cut %v, pauses %v; want no cut, pauses %v", tt.retryAfter, v.Curve != nil, v.Pauses, tt.pauses)
		}
	}
	// One sent after it, within its window: nothing measured the pace it
	// was sent at, and the scope pauses.
	v := c.Refused(cutAt(0.4), Refusal{AdmittedAt: 35, Admitted: 40, Accepted: ok, RetryAfter: time.Second, Base: 100, Burst: 10, Curve: first.Curve})
	if v.Curve != nil || !v.Pauses {
		t.Errorf("a brief Retry-After on a call sent after an unmeasured cut: cut %v, pauses %v; want no cut, a pause", v.Curve != nil, v.Pauses)
	}
}

// The refusals of the calls a cut answers, and those within its measuring
// window, cut once: the pace they saw is the one the cut answered. Whether
// they pause follows the cut in use: a brief Retry-After on a measured cut
// pauses only its call, whenever the call was sent.
func TestOldNewsCutsOnce(t *testing.T) {
	var c Cuts
	ok := accept(&c, 0, 0, 2, 50, 100)
	first := c.Refused(cutAt(2), Refusal{AdmittedAt: 200, Admitted: 210, Accepted: ok, Base: 100, Burst: 10})
	if first.Curve == nil {
		t.Fatal("the first refusal did not cut")
	}
	for _, tt := range []struct {
		name       string
		at         float64
		admittedAt int64
		retryAfter time.Duration
		cuts       bool
		pauses     bool
	}{
		{"sent before the cut", 2.1, 205, 0, false, false},
		{"sent before the cut, brief Retry-After on a measured cut", 2.1, 205, time.Second, false, false},
		{"sent before the cut, long Retry-After", 2.1, 205, 5 * time.Second, false, true},
		{"the last call sent before the cut, brief Retry-After", 2.1, 210, time.Second, false, false},
		{"sent after, within the window: the measure was high, or the server's bucket not drained", 2.5, 215, 0, false, false},
		{"sent after, within the window, brief Retry-After on a measured cut", 2.5, 215, time.Second, false, false},
		{"sent after, within the window, long Retry-After", 2.5, 215, 5 * time.Second, false, true},
		{"sent after, past the window", 3.5, 260, 0, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := c // each case from the state after the first cut
			v := c.Refused(cutAt(tt.at), Refusal{AdmittedAt: tt.admittedAt, Admitted: 300, Accepted: ok, RetryAfter: tt.retryAfter,
				Base: 100, Burst: 10, Curve: first.Curve})
			if (v.Curve != nil) != tt.cuts || v.Pauses != tt.pauses {
				t.Errorf("cut %v pauses %v, want %v %v", v.Curve != nil, v.Pauses, tt.cuts, tt.pauses)
			}
		})
	}
}

// Cut after cut in an outage (nothing accepted), the pace keeps a floor:
// one call within the maximum wait, and about one every ProbeEvery where
// that is a small part of the pace.
func TestACutKeepsItsProbes(t *testing.T) {
	for _, tt := range []struct {
		name                  string
		base, burst           float64
		waitFloor, probeFloor float64
		want                  float64
	}{
		{"a call a second, a hundredth of the pace", 100, 10, 1.0 / 60, 1, 0.01},
		{"a call a second would be a fifth: ProbeShare", 5, 1, 1.0 / 60, 1, ProbeShare},
		{"a maximum wait of 10 s on a pace of one a second", 1, 1, 0.1, 1, 0.1},
		{"no burst: only the least factor", 100, 0, 1.0 / 60, 1, MinFactor},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c Cuts
			c.Accepted(cutAt(-30).UnixNano(), 0, 0, tt.base) // history, of nothing accepted
			// The scope sent at its pace into the outage since: not silence.
			sent := int64(32 * tt.base)
			v := c.Refused(cutAt(2), Refusal{AdmittedAt: 1, Admitted: sent, Base: tt.base, Burst: tt.burst,
				WaitFloor: tt.waitFloor, ProbeFloor: tt.probeFloor})
			if v.Curve == nil || math.Abs(v.Curve.F0-tt.want) > 1e-9 || !v.Curve.Measured {
				t.Fatalf("cut to %+v, want a measured floor of %v", v.Curve, tt.want)
			}
		})
	}
}

// The scope sent nothing while it paused itself: a measure leaves the pause
// out of its span, and one left with less than half a window of sending
// measures nothing.
func TestACutLeavesOutThePause(t *testing.T) {
	for _, tt := range []struct {
		pause    float64 // seconds, from 3 s
		measured bool
	}{
		{0.4, true},  // 0.72 s of sending in a measure of 1.12 s
		{0.7, false}, // 0.42 s: less than half the window of 1 s
	} {
		var c Cuts
		ok := accept(&c, 0, 0, 3, 50, 100) // 50 a second from 0 s to 3 s
		// Paused: nothing sent, nothing accepted; then 50 a second again.
		ok = accept(&c, ok, 3+tt.pause, 4, 50, 100)
		r := Refusal{AdmittedAt: 1, Admitted: 1, Accepted: ok, Base: 100, Burst: 10,
			PausedFrom: cutAt(3).UnixNano(), PausedTo: cutAt(3 + tt.pause).UnixNano()}
		v := c.Refused(cutAt(4), r)
		switch {
		case v.Curve == nil || v.Curve.Measured != tt.measured:
			t.Errorf("a pause of %v s: cut to %+v, want measured %v", tt.pause, v.Curve, tt.measured)
		case tt.measured && math.Abs(v.Curve.Wmax-0.5) > 0.05:
			t.Errorf("a pause of %v s: measured %.3f of the pace, want 0.5 (the pause left out)", tt.pause, v.Curve.Wmax)
		}
	}
}

// A measure of what the server accepted leaves out the scope's own pause:
// what part of a span before now the latest pause took.
func TestPausedWithin(t *testing.T) {
	now := cutAt(10)
	at := func(s float64) int64 { return now.Add(time.Duration(s * float64(time.Second))).UnixNano() }
	for _, tt := range []struct {
		from, to float64 // the pause, in seconds from now
		span     time.Duration
		want     time.Duration
	}{
		{-3, -2, 2 * time.Second, 0},                         // over before the span
		{-1.5, -0.5, 2 * time.Second, time.Second},           // within it
		{-3, -1, 2 * time.Second, time.Second},               // began before it
		{-0.5, 0.5, 2 * time.Second, 500 * time.Millisecond}, // still on: counted to now
	} {
		if got := pausedWithin(at(tt.from), at(tt.to), now, tt.span); got != tt.want {
			t.Errorf("a pause from %vs to %vs, over the last %v: %v, want %v", tt.from, tt.to, tt.span, got, tt.want)
		}
	}
	if got := pausedWithin(0, 0, now, 2*time.Second); got != 0 {
		t.Errorf("no pause: %v", got)
	}
}

// A shared scope measures the server's capacity at the pace its calls were
// sent at, not at the pace now: a cut since (its own, or one read from the
// store) must not be taken again on top of the share it measured. Half of
// its calls over the last two seconds, sent at 50 a second, were refused:
// 25 a second, though the scope paces at 25 since.
func TestASharedCutMeasuresAtThePaceTheCallsWereSentAt(t *testing.T) {
	var c Cuts
	// A point every 8 accepted calls, 8 refused between each: 16
	// answered calls each 320 ms at 50 a second.
	for i := range 8 {
		c.refused += 8
		c.Accepted(cutAt(float64(i)*0.32).UnixNano(), int64(8*(i+1)), int64(8*(i+1)), 50)
	}
	now := cutAt(8 * 0.32)
	got, _, ok := c.sharedCapacity(now, time.Second, 64)
	if !ok || math.Abs(got-25) > 2 {
		t.Errorf("measured %.1f a second (%v), want about 25", got, ok)
	}
	// The last window held one refusal and nothing else: too few to
	// measure on, so the measure reaches further back.
	c.refused++
	got, _, ok = c.sharedCapacity(now.Add(2*time.Second), time.Second, 64)
	if !ok || got < 20 {
		t.Errorf("one refusal alone in the window measured %.1f a second (%v), want the share from the calls before it", got, ok)
	}
	// Through Refused: the shared measure, not the 20 a second this
	// process saw accepted of the fleet's calls.
	v := c.Refused(now.Add(2*time.Second), Refusal{AdmittedAt: 100, Admitted: 100, Accepted: 64, Shared: true, Base: 50, Burst: 5})
	if v.Curve == nil || !v.Curve.Measured || v.Curve.Wmax < 0.4 {
		t.Errorf("a shared refusal cut to %+v, want about half of 50 a second", v.Curve)
	}
}

// A cut adopted from the fleet is this scope's climb unless one taken here
// since is as deep or deeper; it is taken as made now when stamped ahead,
// and never below this scope's own floor. It makes the calls sent before
// it old news, without a quiet window.
func TestAdoptingAFleetsCut(t *testing.T) {
	now := cutAt(10)
	var c Cuts
	r, ok := c.Adopt(now, NewCurve(now.AddDate(1, 0, 0), 0.5, 0.25, CheapRecovery, true), nil, 40, 100, 10, 1.0/60)
	if !ok || r.At != now.UnixNano() || r.F0 != 0.25 {
		t.Fatalf("a cut stamped a year ahead adopted as %+v (%v), want it made now", r, ok)
	}
	if v := c.Refused(now.Add(100*time.Millisecond), Refusal{AdmittedAt: 40, Admitted: 41, Base: 100, Burst: 10, Curve: r}); v.Curve != nil {
		t.Error("a refusal of a call sent before the adopted cut cut again")
	}
	if v := c.Refused(now.Add(100*time.Millisecond), Refusal{AdmittedAt: 41, Admitted: 41, Base: 100, Burst: 10, Curve: r}); v.Curve == nil {
		t.Error("a refusal of a call sent at the adopted pace did not cut: the other instance's measure was high")
	}
	if r, ok := c.Adopt(now, NewCurve(now, 0.001, 0.001, CheapRecovery, true), nil, 41, 100, 10, 10); !ok || r.F0 != 0.1 {
		t.Errorf("a cut below this scope's floor adopted as %+v (%v), want F0 0.1", r, ok)
	}
	// A cut made by a refusal no count explained overrules this scope's
	// counts too, however it is adopted.
	overruled := NewCurve(now.AddDate(1, 0, 0), 0.001, 0.001, CheapRecovery, true)
	overruled.Overruled = true
	if r, ok := c.Adopt(now, overruled, nil, 41, 100, 10, 10); !ok || !r.Overruled {
		t.Errorf("an overruling cut adopted as %+v (%v), want it overruling", r, ok)
	}
	deep := NewCurve(now.Add(-2*time.Second), 0.3, 0.25, CheapRecovery, false)
	for _, tt := range []struct {
		name string
		r    *Curve
		want bool
	}{
		{"older and shallower", NewCurve(now.Add(-3*time.Second), 0.9, 0.85, CheapRecovery, false), false},
		{"older and deeper", NewCurve(now.Add(-3*time.Second), 0.2, 0.15, CheapRecovery, false), true},
		{"newer and shallower", NewCurve(now.Add(-time.Second), 0.9, 0.85, CheapRecovery, false), true},
		{"over", NewCurve(now.Add(-time.Hour), 0.3, 0.25, CheapRecovery, false), false},
	} {
		if _, ok := c.Adopt(now, tt.r, deep, 41, 100, 10, 1.0/60); ok != tt.want {
			t.Errorf("%s: adopted %v, want %v", tt.name, ok, tt.want)
		}
	}
}

// A concurrency cap's refusal cuts the cap to what was held, and makes the
// calls admitted so far old news to a rate cut.
func TestASlotsRefusalMarks(t *testing.T) {
	var c Cuts
	r := c.SlotsRefused(cutAt(0), 4, 10, nil, 50)
	if r == nil || Slots(10, r.Factor(cutAt(0).UnixNano())) != 5 {
		t.Fatalf("a refusal with 4 in flight of a cap of 10 cut to %+v, want 5 slots (no deeper than half)", r)
	}
	if again := c.SlotsRefused(cutAt(0.1), 6, 10, r, 51); again != nil {
		t.Errorf("a refusal with 6 in flight under a cap of 5 cut again: %+v", again)
	}
	if v := c.Refused(cutAt(0.2), Refusal{AdmittedAt: 50, Admitted: 52, Base: 100, Burst: 10, Curve: r}); v.Curve != nil {
		t.Error("a refusal of a call admitted before the slots cut cut the rate")
	}
}

// A scope that sent nothing for longer than a window says nothing of the
// server then: a refusal soon after it starts again is measured on what
// was accepted since, or, with too little of that, halves. Spanning the
// silence, a minute's rest read the calls accepted since as the server's
// rate over the whole minute.
func TestACutLeavesOutTheSilence(t *testing.T) {
	for _, tt := range []struct {
		name     string
		resumed  float64 // seconds of sending after the silence before the refusal
		measured bool
		wmax     float64
	}{
		{"at once: too little history, halved", 0.1, false, 1},
		{"after a second and a half: what was accepted since", 1.5, true, 0.5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c Cuts
			ok := accept(&c, 0, 0, 3, 50, 100) // 50 a second from 0 s to 3 s
			// Silent from 3 s to 63 s: nothing admitted, nothing accepted.
			ok = accept(&c, ok, 63, 63+tt.resumed, 50, 100)
			v := c.Refused(cutAt(63+tt.resumed), Refusal{AdmittedAt: ok, Admitted: ok + 2, Accepted: ok, Base: 100, Burst: 10})
			switch {
			case v.Curve == nil || v.Curve.Measured != tt.measured:
				t.Fatalf("cut to %+v, want measured %v", v.Curve, tt.measured)
			case math.Abs(v.Curve.Wmax-tt.wmax) > 0.05:
				t.Errorf("measured %.3f of the pace, want %.1f: the silence left out", v.Curve.Wmax, tt.wmax)
			}
		})
	}
}

// A cut at the full pace on the window's only refusal read the scope's own
// pace as the capacity, and kept a tenth below it. The calls in flight at
// the cut check it: of sixteen answered or more, a share refused above
// that tenth says the server accepts well below the pace, and the cut
// halves it, once; a share within the tenth is a bucket the scope
// overshot by a little, and the cut stands. Not a cut made while the pace
// climbs back, near the level the cut before measured.
func TestTheCallsInFlightCheckACutOnTheWindowsOnlyRefusal(t *testing.T) {
	for _, tt := range []struct {
		name              string
		climbing          bool
		accepted, refused int // the answers after the cut, the refusals last
		halves            bool
	}{
		{"a third refused", false, 12, 6, true},
		{"one in sixteen refused: a little over", false, 15, 1, false},
		{"fewer than sixteen answered", false, 8, 4, false},
		{"while climbing back", true, 12, 6, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var c Cuts
			ok := accept(&c, 0, 0, 2, 90, 90)
			var climb *Curve
			if tt.climbing {
				climb = NewCurve(cutAt(-10), 0.9, 0.5, CheapRecovery, true)
			}
			first := c.Refused(cutAt(2), Refusal{AdmittedAt: 180, Admitted: 200, Accepted: ok, Base: 90, Burst: 10, Curve: climb})
			if first.Curve == nil || (!tt.climbing && math.Abs(first.Curve.F0-CostlyHeadroom) > 0.01) {
				t.Fatalf("the first refusal cut to %+v, want the pace less CostlyHeadroom", first.Curve)
			}
			ok += int64(tt.accepted) // answered since, accepted
			var halved *Curve
			for i := range tt.refused {
				v := c.Refused(cutAt(2.1+0.01*float64(i)), Refusal{AdmittedAt: 185 + int64(i), Admitted: 210, Accepted: ok,
					Base: 90, Burst: 10, Curve: first.Curve})
				if v.Curve != nil {
					if halved != nil {
						t.Fatalf("refusal %d cut again after the halving", i+1)
					}
					halved = v.Curve
				}
			}
			if (halved != nil) != tt.halves {
				t.Fatalf("halved %v, want %v", halved != nil, tt.halves)
			}
			if halved != nil && (math.Abs(halved.F0-ShortHistoryCut*first.Curve.Wmax) > 1e-9 || halved.Over != first.Curve.Over) {
				t.Errorf("halved to %+v, want half the pace the first cut read, climbing back over %v", halved, first.Curve.Over)
			}
			// Halved at the fourth refusal: of the sixteen answered since
			// the cut (twelve accepted, the first refusal and three more),
			// the server accepted three in four, which the climb back
			// flattens at, measured.
			if want := 0.75 * first.Curve.Wmax; halved != nil && (math.Abs(halved.Wmax-want) > 1e-9 || !halved.Measured) {
				t.Errorf("the climb back flattens at %.4f (measured %v), want %.4f: the share of the calls in flight the server accepted, measured",
					halved.Wmax, halved.Measured, want)
			}
		})
	}
}
