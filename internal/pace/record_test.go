package pace

import (
	"math"
	"testing"
	"time"
)

// scope100 is a scope of 100 requests a second, configured and blind.
func scope100(spent int64) Scope {
	return Scope{Spent: spent, Blind: 100, Configured: 100, Unreported: 100, Floor: 1.0 / 30,
		Per: time.Second, BlindWithin: true, CountsRequests: true, MaxWait: 30 * time.Second}
}

// feed gives o a count every step from start for n steps, each answering a
// call of the scope's that spent one unit, sent half a step before the
// answer; count says the remaining count the server gave the i-th. It
// returns the last verdict and the scope's spent units.
func feed(o *Record, start time.Time, step time.Duration, n int, spent int64, count func(i int, at time.Time) Count) (Verdict, int64) {
	return feedAs(o, scope100(0), start, step, n, spent, count)
}

// feedSame is feed of one count, the same at every step, for a scope of
// sc's paces; it returns the last verdict.
func feedSame(o *Record, sc Scope, step time.Duration, n int, c Count) Verdict {
	v, _ := feedAs(o, sc, t0, step, n, 0, func(int, time.Time) Count { return c })
	return v
}

// feedAs is feed for a scope of sc's paces.
func feedAs(o *Record, sc Scope, start time.Time, step time.Duration, n int, spent int64, count func(i int, at time.Time) Count) (Verdict, int64) {
	var v Verdict
	for i := range n {
		now := start.Add(time.Duration(i) * step)
		spent++
		c := count(i, now)
		c.Mark, c.Sent, c.Local = spent, now.Add(-step/2).UnixNano(), true
		sc.Spent = spent
		v = o.Count(now, c, sc)
	}
	return v, spent
}

// What a count decides, from explicit times: no count, old news, none
// left, a server bucket with no room, a token bucket that publishes its
// capacity, a sliding window spent alone.
func TestCount(t *testing.T) {
	sec := time.Second
	for _, tt := range []struct {
		name  string
		run   func(o *Record) Verdict
		check func(t *testing.T, v Verdict)
	}{
		{"a negative count is none", func(o *Record) Verdict {
			return o.Count(t0, Count{Remaining: -1, Reset: sec, Limit: 100}, scope100(1))
		}, func(t *testing.T, v Verdict) {
			if v != (Verdict{}) {
				t.Errorf("verdict %+v, want none", v)
			}
		}},
		{"an answer overtaken by a later one is old news", func(o *Record) Verdict {
			o.Count(t0, Count{Remaining: 50, Reset: sec, Limit: 100, Mark: 10, Local: true}, scope100(12))
			return o.Count(t0.Add(time.Millisecond), Count{Remaining: 52, Reset: sec, Limit: 100, Mark: 8, Local: true}, scope100(12))
		}, func(t *testing.T, v Verdict) {
			// 52 when the 8th was admitted, of which the 4 since are spent.
			if v.Paced || v.Left != 48 {
				t.Errorf("verdict %+v, want no pace, 48 left", v)
			}
		}},
		{"none left until a far reset pauses", func(o *Record) Verdict {
			return o.Count(t0, Count{Remaining: 0, Reset: 10 * sec, Limit: 100, Mark: 1, Local: true}, scope100(1))
		}, func(t *testing.T, v Verdict) {
			if !v.None || v.Paced {
				t.Errorf("verdict %+v, want none left, no pace", v)
			}
		}},
		{"a bucket of one has no room to pace by", func(o *Record) Verdict {
			return feedSame(o, scope100(0), 10*time.Millisecond, 50, Count{Remaining: 0, Reset: sec, Limit: 1})
		}, func(t *testing.T, v Verdict) {
			if !v.Roomless || v.Holds != 1 || v.Rate != 100 {
				t.Errorf("verdict %+v, want roomless, holding 1, the unreported pace 100", v)
			}
		}},
		{"a token bucket that publishes its capacity is paced by what it accepts", func(o *Record) Verdict {
			// Capacity 11, 100 a second: spent at 100 a second, its count
			// stays at 10.
			return feedSame(o, scope100(0), 10*time.Millisecond, 300, Count{Remaining: 10, Reset: sec, Limit: 11})
		}, func(t *testing.T, v Verdict) {
			if supply, ok := o0.Supply(); !ok || math.Abs(supply-100) > 5 {
				t.Errorf("supply %.1f (measured %v), want about 100", supply, ok)
			}
			if !v.Paced || v.Rate < 100 || v.Young {
				t.Errorf("verdict %+v, want a pace of at least the blind 100, past the young measure", v)
			}
		}},
		{"a full count, young, sets no pace of its own", func(o *Record) Verdict {
			// The first 0.3 s of a token bucket that publishes its
			// capacity: its count holds at 10 while the scope spends 20 a
			// second, all the pace it had so far allowed. The
			// blind pace is the published 11's, 10 a second; the
			// configured limit, which the counts outrank it up to, 90.
			sc := scope100(0)
			sc.Blind, sc.Configured, sc.Unreported = 10, 90, 90
			return feedSame(o, sc, 50*time.Millisecond, 7, Count{Remaining: 10, Reset: sec, Limit: 11})
		}, func(t *testing.T, v Verdict) {
			if !v.Paced || v.Rate < 90 || v.Young {
				t.Errorf("verdict %+v, want the unreported pace 90 at the edge: a full count says the scope is below the server's rate", v)
			}
		}},
		{"a full count over a round trip is full, whatever is in flight", func(o *Record) Verdict {
			// The same bucket over a round trip of 300 ms, just as the
			// pace rose: fifteen of the scope's calls are in flight at
			// each answer, more than what it was measured to take back
			// over the round trip (6).
			sc := scope100(0)
			sc.Blind, sc.Configured, sc.Unreported = 10, 90, 90
			var v Verdict
			for i := range 7 {
				now := t0.Add(time.Duration(i) * 50 * time.Millisecond)
				spent := int64(i + 16)
				sc.Spent = spent
				v = o.Count(now, Count{Remaining: 10, Reset: sec, Limit: 11, Mark: spent - 15, Sent: now.Add(-300 * time.Millisecond).UnixNano(), Local: true}, sc)
			}
			return v
		}, func(t *testing.T, v Verdict) {
			if !v.Paced || v.Rate < 90 {
				t.Errorf("verdict %+v, want the unreported pace 90: the server's count held full while the calls in flight arrived", v)
			}
		}},
		{"a sliding window spent alone at its limit keeps the pace", func(o *Record) Verdict {
			// 100 in any second: spent at 100 a second, what it gives back
			// is what was spent a second ago, and its count holds at 1.
			v, _ := feed(o, t0, 10*time.Millisecond, 300, 0, func(i int, _ time.Time) Count {
				return Count{Remaining: int64(max(1, 99-i)), Reset: sec, Limit: 100}
			})
			return v
		}, func(t *testing.T, v Verdict) {
			if !v.Paced || v.Rate < 90 {
				t.Errorf("verdict %+v, want a pace near the limit", v)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o0 = &Record{}
			tt.check(t, tt.run(o0))
		})
	}
}

// o0 is the Record a TestCount case runs on, for its check.
var o0 *Record

// A fixed window's refills are seen as jumps of its count, and predicted:
// counts of 100 a second that refill on each second, spent a call every
// 10 ms, refill next on the next second.
func TestRefill(t *testing.T) {
	o := &Record{}
	feed(o, t0, 10*time.Millisecond, 350, 0, func(i int, _ time.Time) Count {
		return Count{Remaining: int64(99 - i%100), Reset: time.Second, Limit: 100}
	})
	now := t0.Add(3490 * time.Millisecond)
	if got := o.Refill(now, time.Second); got < 490*time.Millisecond || got > 530*time.Millisecond {
		t.Errorf("Refill at 3.49 s = %v, want about 0.51 s (the next second)", got)
	}
	if !o.refillsByWindow(o.refillEvery, time.Second) {
		t.Errorf("refills every %v of a count that holds its window's 100 are not read as the window turning", o.refillEvery)
	}
}

// Refills are a window's turning only at the window's period, and only
// for a count that holds at least half of what the scope spent between
// two of them: a token bucket that publishes its capacity (11) while it
// lets 100 a second through jumps now and then as answers overtake each
// other, and never holds that.
func TestRefillsByWindow(t *testing.T) {
	for _, tt := range []struct {
		name               string
		peak               float64
		spent              int64
		window, per, every time.Duration
		want               bool
	}{
		{"a fixed window of 100 a second", 100, 90, 0, time.Second, time.Second, true},
		{"a token bucket of 11 that lets 90 through between jumps", 11, 90, 0, time.Second, time.Second, false},
		{"refills at a tenth past the period", 100, 90, 0, time.Second, 1100 * time.Millisecond, false},
		{"refills within a tenth of it", 100, 90, 0, time.Second, 1050 * time.Millisecond, true},
		{"the learned window outranks the configured one", 100, 90, time.Minute, time.Second, time.Second, false},
		{"no window known", 100, 90, 0, 0, time.Second, false},
		{"one refill, after counts over most of a window", 100, 90, 0, time.Second, 0, true},
		{"one refill of a count of 11 that let 90 through", 11, 90, 0, time.Second, 0, false},
	} {
		o := &Record{peak: tt.peak, refillSpent: tt.spent, window: tt.window, first: at(0), refillAt: at(900 * time.Millisecond)}
		if got := o.refillsByWindow(tt.every, tt.per); got != tt.want {
			t.Errorf("%s: refillsByWindow = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A refused call was never counted: what was spent since a mark leaves it
// out, but only for this process's own (a fleet's refusals are not all
// its to know).
func TestRefusedCallsAreNotSpent(t *testing.T) {
	o := &Record{}
	o.Refused(t0, 12, 1, 0)
	o.Refused(t0, 5, 1, 0) // before the mark: already out of the count
	if got := o.spentSince(10, 20, false); got != 9 {
		t.Errorf("spent since 10 of 20, one refused after it = %d, want 9", got)
	}
	if got := o.spentSince(10, 20, true); got != 10 {
		t.Errorf("the fleet's spent since 10 of 20 = %d, want 10", got)
	}
	if got := o.spentSince(25, 20, true); got != 0 {
		t.Errorf("the fleet's spent since a mark past its latest take = %d, want 0", got)
	}
}

// A window is learned from two equal gaps between resets; a shorter gap
// seen twice replaces it, and a Retry-After hints at it until then.
func TestLearnWindow(t *testing.T) {
	o := &Record{}
	if got := o.WindowHint(time.Minute); got != time.Minute {
		t.Fatalf("WindowHint(1m) with nothing learned = %v, want 1m", got)
	}
	o = &Record{}
	var got time.Duration
	for i := range 3 {
		got = o.LearnWindow(t0.Add(time.Duration(i)*10*time.Second), true)
	}
	if got != 10*time.Second {
		t.Fatalf("resets 10 s apart, three times: window %v, want 10s", got)
	}
	if got := o.LearnWindow(t0.Add(25*time.Second), true); got != 10*time.Second {
		t.Errorf("a longer gap changed the window to %v", got)
	}
	for i := range 2 {
		got = o.LearnWindow(t0.Add(30*time.Second+time.Duration(i+1)*5*time.Second), true)
	}
	if got != 5*time.Second {
		t.Errorf("a shorter gap seen twice: window %v, want 5s", got)
	}
}

// One refill seen after counts over less than half a window says nothing
// of a window yet: a token bucket's count jumps as answers overtake each
// other in its first moments too.
func TestOneEarlyRefillIsNoWindow(t *testing.T) {
	o := &Record{peak: 100, refillSpent: 20, first: at(0), refillAt: at(300 * time.Millisecond)}
	if o.refillsByWindow(0, time.Second) {
		t.Error("one refill 0.3 s after the first count is read as a window of a second turning")
	}
}

// The turns are dated by the earlier of the latest two refills, carried on
// the window's period: a refill seen early by a fluke is forgotten two
// windows on (a window that starts at the first call after the last one
// ended turns a little later each time, and carried on the period an old
// refill dates the turns early).
func TestTheTurnsAreDatedByTheLatestRefills(t *testing.T) {
	o := &Record{peak: 100, refillSpent: 90, refillEvery: time.Second, first: at(0)}
	for _, seen := range []time.Duration{1100, 2020, 3150, 4140, 5130} {
		o.refillAt = at(seen * time.Millisecond)
		o.phase(time.Second)
	}
	if got := time.Duration(o.turnAt - at(0)); got != 5130*time.Millisecond {
		t.Errorf("after refills seen late by 100, 20, 150, 140 and 130 ms, the turns are dated %v, want 5.13s (the fluke at 2.02 s forgotten)", got)
	}
	o.refillAt = at(6160 * time.Millisecond)
	o.phase(time.Second)
	if got := time.Duration(o.turnAt - at(0)); got != 6130*time.Millisecond {
		t.Errorf("after refills seen at 5.13 and 6.16 s, the turns are dated %v, want 6.13s (the earlier, a window on)", got)
	}
}

// Whether refills are a window's turning depends on what the scope spent
// in the window the refill ends: the refill that shows it is judged with
// its own window's spent, not the one before. After a gap that was no
// window (300 spent between two refills of a count of 100), a refill that
// ends a window of 90 dates the turns by the earlier of the two.
func TestARefillIsJudgedByItsOwnWindow(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	o := &Record{known: true, at: at(ms(5000)), remaining: 5, spent: 1000, latest: 1000, peak: 100, first: at(0),
		refillEvery: time.Second, refillAt: at(ms(4110)), refillMark: 910, refillSpent: 300, turnAt: at(ms(4110))}
	o.sightings[0], o.nsightings = at(ms(4110)), 1
	now := t0.Add(ms(5160))
	o.Count(now, Count{Remaining: 95, Reset: time.Second, Limit: 100, Mark: 1000, Local: true}, scope100(1000))
	if o.refillAt != now.UnixNano() || o.refillSpent != 90 {
		t.Fatalf("the count at 5.16 s was not taken for a refill ending a window of 90 (refill at %v, spent %d)", time.Duration(o.refillAt-at(0)), o.refillSpent)
	}
	if got := time.Duration(o.turnAt - at(0)); got != ms(5110) {
		t.Errorf("the turns are dated %v, want 5.11s: the refill at 4.11 s carried a window on", got)
	}
}

// The blind start's refusals — a burst sent at once, before any count came
// back, into a bucket too small for it — found the bucket's size, not the
// scope's edge: a count that then holds full while the scope spends is a
// bucket refilling faster, and sets no pace below the one without a count
// (reading.fullWhileSpending). A refusal of a call the counts paced is the
// edge found: the full count is the refill, and the count paces.
func TestTheBlindStartsRefusalsAreNoEdge(t *testing.T) {
	// Told 200 a second, behind a bucket of 11 at 100 that publishes its
	// capacity: the scope's first 20 calls go at once.
	sc := Scope{Blind: 9.9, Configured: 180, Unreported: 180, Floor: 1.0 / 30, Per: time.Second, Quota: 200, Burst: 20,
		CountsRequests: true, MaxWait: 30 * time.Second}
	for _, tc := range []struct {
		name      string
		refused   int64 // the mark of the refused call after the first count
		wantAbove bool  // the full count sets no pace below Unreported
	}{
		{"a call of the first burst", 17, true},
		{"a call the counts paced", 21, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o Record
			o.Refused(t0, 5, 1, 0) // answered before the first count
			first := Count{Remaining: 0, Reset: time.Second, Limit: 11, Mark: 11, Sent: t0.UnixNano(), Local: true, Refused: 1}
			sc.Spent = 16
			o.Count(t0.Add(3*time.Millisecond), first, sc)
			o.Refused(t0.Add(20*time.Millisecond), tc.refused, 1, 0)
			var v Verdict
			spent := int64(21)
			for i := 1; i <= 8; i++ {
				now := t0.Add(time.Duration(i) * 100 * time.Millisecond)
				spent++
				sc.Spent = spent
				v = o.Count(now, Count{Remaining: 10, Reset: time.Second, Limit: 11, Mark: spent, Sent: now.Add(-10 * time.Millisecond).UnixNano(), Local: true}, sc)
			}
			if got := v.Rate >= sc.Unreported; got != tc.wantAbove {
				t.Errorf("after a refusal of %s, full counts paced the scope at %.1f a second (no pace below %.0f: %v, want %v)",
					tc.name, v.Rate, sc.Unreported, got, tc.wantAbove)
			}
		})
	}
}
