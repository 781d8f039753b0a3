package pace

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Unix(1764547200, 0)

func at(d time.Duration) int64 { return t0.Add(d).UnixNano() }

// The curve starts at F0, is back at Wmax after k seconds and flat there,
// and reaches 1 at Full; Reaches is Factor's inverse.
func TestCurve(t *testing.T) {
	c := NewCurve(t0, 0.5, 0.45, 40*time.Second, true)
	// k = ∛((wmax − f0)·over³) = ∛0.05 · 40 s ≈ 14.74 s; full = k + ∛0.5 · 40 s ≈ 46.49 s.
	k := math.Cbrt(0.05) * 40
	full := k + math.Cbrt(0.5)*40
	for _, tt := range []struct {
		after time.Duration
		want  float64
	}{
		{0, 0.45},
		{time.Duration(k * 1e9), 0.5},
		{time.Duration(full*1e9) - time.Millisecond, 1 - 1e-4},
		{time.Duration(full * 1e9), 1},
		{time.Hour, 1},
		{-time.Second, 0.45}, // before the cut: its floor
	} {
		if got := c.Factor(at(tt.after)); math.Abs(got-tt.want) > 2e-4 {
			t.Errorf("Factor %v after the cut = %.5f, want %.5f", tt.after, got, tt.want)
		}
	}
	if got := time.Duration(c.Full - c.At); math.Abs(got.Seconds()-full) > 1e-6 {
		t.Errorf("Full %v after the cut, want %.3fs", got, full)
	}
	for _, x := range []float64{0.46, 0.5, 0.7, 0.99} {
		when := c.Reaches(x)
		if got := c.Factor(when); math.Abs(got-x) > 1e-6 {
			t.Errorf("Factor(Reaches(%v)) = %v", x, got)
		}
	}
	if c.Reaches(0.1) != c.At || c.Reaches(1) != c.Full {
		t.Errorf("Reaches below the floor or at 1: %d, %d; want the cut's time and Full", c.Reaches(0.1), c.Reaches(1))
	}
}

// A record reads back as the same curve; anything else, or a climb longer
// than allowed, is refused.
func TestRecord(t *testing.T) {
	c := NewCurve(t0.Add(123456789), 0.5123456789, 0.48671, 120*time.Second, true)
	overruled := NewCurve(t0.Add(123456789), 0.5123456789, 0.48671, 120*time.Second, false)
	overruled.Overruled = true // the fleet climbs below its counts too
	for _, c := range []*Curve{c, overruled} {
		back, ok := ParseRecord(c.Record(), 20*time.Minute)
		if !ok || *back != *c {
			t.Fatalf("ParseRecord(%q) = %+v, %v; want %+v", c.Record(), back, ok, c)
		}
	}
	for _, bad := range []string{
		"", "cut1", "cut2 1 0.5 0.4 1 0", "cut1 0 0.5 0.4 1 0", "cut1 1 0.5 0.6 1 0", "cut1 1 1.5 0.4 1 0",
		"cut1 1 0.5 0.0001 1 0", "cut1 1 0.5 0.4 0 0", "cut1 1 0.5 0.4 1 4", "cut1 1 0.5 0.4 1 12", "cut1 1 x 0.4 1 0",
		c.Record() + " 1",
	} {
		if _, ok := ParseRecord(bad, 20*time.Minute); ok {
			t.Errorf("ParseRecord(%q) accepted", bad)
		}
	}
	long := NewCurve(t0, 0.5, 0.4, time.Hour, false)
	if _, ok := ParseRecord(long.Record(), 20*time.Minute); ok {
		t.Errorf("a record climbing over an hour accepted under a bound of 20 minutes")
	}
}

// The floor drops at once to a shorter round trip, follows a longer one by
// 1/64 of the difference, and the spread averages what exceeds it.
func TestRoundTrips(t *testing.T) {
	var r RoundTrips
	r.Observe(0) // unknown: ignored
	if r.Floor != 0 {
		t.Fatalf("a zero round trip set the floor to %d", r.Floor)
	}
	r.Observe(int64(300 * time.Millisecond))
	r.Observe(int64(200 * time.Millisecond))
	if r.Floor != int64(200*time.Millisecond) {
		t.Fatalf("floor %v after 300 ms and 200 ms, want 200 ms", time.Duration(r.Floor))
	}
	r.Observe(int64(264 * time.Millisecond))
	if r.Floor != int64(201*time.Millisecond) {
		t.Errorf("floor %v after a longer trip, want 201 ms (1/64 of the 64 ms above)", time.Duration(r.Floor))
	}
	if r.Spread <= 0 {
		t.Errorf("spread %v after trips above the floor, want some", r.Spread)
	}
}

// The spread of the first round trips is their mean excess over the
// floor, not an average that starts from nothing: eight answers of a
// 200–400 ms route say a hundred milliseconds, not twelve.
func TestTheFirstRoundTripsSpread(t *testing.T) {
	var r RoundTrips
	for _, ms := range []int64{200, 400, 300, 250, 350, 200, 400, 300} {
		r.Observe(ms * int64(time.Millisecond))
	}
	if got := time.Duration(r.Spread); got < 80*time.Millisecond || got > 110*time.Millisecond {
		t.Errorf("spread %v after eight round trips of 200–400 ms, want about 100 ms", got)
	}
	r.Observe(0) // unknown: no round trip at all
	if got := time.Duration(r.Spread); got < 80*time.Millisecond {
		t.Errorf("spread %v after an unknown round trip, want it unchanged", got)
	}
}

func TestNextRefill(t *testing.T) {
	every := time.Second
	for _, tt := range []struct {
		since time.Duration
		want  time.Duration
	}{
		{0, time.Second},
		{300 * time.Millisecond, 700 * time.Millisecond},
		{time.Second, RefillFloor},                        // due, not yet seen
		{time.Second + 249*time.Millisecond, RefillFloor}, // within a quarter of a window
		{time.Second + 250*time.Millisecond, 0},           // none seen lately
		{-time.Millisecond, 0},                            // a refill after now: not regular
	} {
		now := t0.Add(tt.since)
		if got := NextRefill(now, t0.UnixNano(), every); got != tt.want {
			t.Errorf("NextRefill %v after a refill = %v, want %v", tt.since, got, tt.want)
		}
	}
	if got := NextRefill(t0, 0, every); got != 0 {
		t.Errorf("no refill seen: %v, want 0", got)
	}
	if got := NextRefill(t0, t0.UnixNano(), 0); got != 0 {
		t.Errorf("no gap learned: %v, want 0", got)
	}
}

func TestResets(t *testing.T) {
	for _, tt := range []struct {
		reset, slack, pause time.Duration
	}{
		{time.Second, time.Second, 0},                   // may already be here
		{2 * time.Second, time.Second, 2 * time.Second}, // plausibly ahead
		{300 * time.Millisecond, 0, 300 * time.Millisecond},
		{0, time.Second, 0},
		{time.Hour, time.Second, 10 * time.Minute}, // the maximum wait
	} {
		if got := WholeSecondSlack(tt.reset); got != tt.slack {
			t.Errorf("WholeSecondSlack(%v) = %v, want %v", tt.reset, got, tt.slack)
		}
		if got := PauseForNoneLeft(tt.reset, 10*time.Minute); got != tt.pause {
			t.Errorf("PauseForNoneLeft(%v) = %v, want %v", tt.reset, got, tt.pause)
		}
	}
	for _, tt := range []struct{ window, want time.Duration }{
		{time.Second, time.Minute},
		{time.Hour, 10 * time.Minute},
		{5 * time.Minute, 5 * time.Minute},
	} {
		if got := BelieveFor(tt.window, 10*time.Minute); got != tt.want {
			t.Errorf("BelieveFor(%v) = %v, want %v", tt.window, got, tt.want)
		}
	}
}

// A refusal takes the cap to what was held, by half at most, and only
// down.
func TestSlotsCut(t *testing.T) {
	for _, tt := range []struct {
		held, n int
		cur     float64
		slots   int
		ok      bool
	}{
		{4, 8, 1, 4, true},        // a server of 4 behind a cap of 8
		{7, 8, 1, 7, true},        // the first of a burst's refusals
		{6, 8, 4.0 / 8, 4, false}, // sent before the cut: old news
		{3, 8, 4.0 / 8, 3, true},  // a neighbour holds one
		{0, 10, 1, 5, true},       // refused alone: halved, not cut to one
		{0, 10, 0.5, 2, true},     // and again
		{0, 1, 1, 1, false},       // one slot stays one
		{-1, 8, 1, 8, false},      // no slot taken
		{4, 0, 1, 0, false},       // no cap
	} {
		f, ok := SlotsCut(tt.held, tt.n, tt.cur)
		if ok != tt.ok || tt.n > 0 && Slots(tt.n, f) != tt.slots {
			t.Errorf("SlotsCut(%d held of %d at %.3f) = %.4f (%d slots), %v; want %d slots, %v", tt.held, tt.n, tt.cur, f, Slots(max(tt.n, 1), f), ok, tt.slots, tt.ok)
		}
	}
}
