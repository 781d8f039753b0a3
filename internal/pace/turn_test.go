package pace

import (
	"cmp"
	"math"
	"testing"
	"time"
)

// minuteWindow is a server of limit calls a minute (or a window, if set),
// in windows that turn on each minute from t0, with httprate's headers:
// what remains after the call and the whole seconds until the window's
// end. A sliding window counts the window before at the share of it still
// inside the last minute; a fixed one forgets it at the turn.
type minuteWindow struct {
	limit   int64
	sliding bool
	window  time.Duration // 0: a minute
	prev    int64         // calls counted in the window before the current one
	curr    int64
	start   time.Time // of the current window
}

// call counts a call arriving at now, if the window has room, and returns
// the count its answer carries and whether it was refused.
func (w *minuteWindow) call(now time.Time) (c Count, refused bool) {
	window := cmp.Or(w.window, time.Minute)
	for !now.Before(w.start.Add(window)) {
		w.prev, w.curr = w.curr, 0
		w.start = w.start.Add(window)
	}
	elapsed := now.Sub(w.start)
	used := w.curr
	if w.sliding {
		used += int64(math.Floor(float64(w.prev) * (1 - elapsed.Seconds()/window.Seconds())))
	}
	refused = used >= w.limit
	if !refused {
		w.curr++
		used++
	}
	reset := (window - elapsed).Truncate(time.Second)
	return Count{Remaining: max(0, w.limit-used), Reset: reset, Limit: w.limit}, refused
}

// spendOver sends a call every step from t0 to d, answered 5 ms later, and
// feeds the Record each answer, refusals as the root notes them. It returns
// the verdicts from after from.
func spendOver(o *Record, w *minuteWindow, sc Scope, step, d, from time.Duration) []Verdict {
	w.start = t0
	var after []Verdict
	var spent int64
	for at := time.Duration(0); at < d; at += step {
		sent := t0.Add(at)
		now := sent.Add(5 * time.Millisecond)
		spent++
		c, refused := w.call(sent)
		c.Mark, c.Sent, c.Local = spent, sent.UnixNano(), true
		if refused {
			c.Refused = 1
			o.Refused(now, spent, 1, 0)
		}
		sc.Spent = spent
		v := o.Count(now, c, sc)
		if at >= from {
			after = append(after, v)
		}
	}
	return after
}

// A pause for none left relies on the count refilling at its reset. A
// sliding window of a minute does not: at its turn it gives back only
// what was spent a minute before, as the minute goes on. Told twice its
// limit, the scope spends the first window, finds none left, and — paused
// to each reset — found the next window as empty and paused again, half
// the limit unspent. Once a turn shows no refill, none left paces by what
// comes back; a fixed window, which refilled at its turn, still pauses.
func TestNoneLeftPausesOnlyForACountThatRefillsAtItsReset(t *testing.T) {
	// 600 a minute, told 1,200: the scope sends at 20 a second.
	sc := Scope{Blind: 19.6, Configured: 20, Unreported: 20, Floor: 1.0 / 30,
		Per: time.Minute, BlindWithin: false, CountsRequests: true, MaxWait: 2 * time.Minute}
	step := 50 * time.Millisecond
	t.Run("sliding", func(t *testing.T) {
		o := &Record{}
		after := spendOver(o, &minuteWindow{limit: 600, sliding: true}, sc, step, 150*time.Second, 61*time.Second)
		var paced int
		for _, v := range after {
			if v.None {
				t.Fatalf("after the turn showed no refill, a count paused the scope: %+v", v)
			}
			if v.Paced {
				paced++
			}
		}
		if paced == 0 {
			t.Fatal("no count after the turn set a pace")
		}
		if !o.gradual {
			t.Error("the turn without a refill was not seen")
		}
	})
	t.Run("fixed", func(t *testing.T) {
		o := &Record{}
		after := spendOver(o, &minuteWindow{limit: 600}, sc, step, 150*time.Second, 61*time.Second)
		var none int
		for _, v := range after {
			if v.None {
				none++
			}
		}
		if none == 0 {
			t.Error("a fixed window, spent after its turn refilled it, never paused the scope for none left")
		}
		if o.gradual {
			t.Error("a fixed window that refilled at its turn was read as giving back as it goes")
		}
	})
}

// Below the margin, a count slows the scope to no less than what comes
// back while nothing was refused of late (half its blind pace at most):
// the calls bring the news that the margin is back. After a refusal, the
// server has shown that pace is too much, and the count paces alone.
func TestARefusalLiftsTheDeficitsFloor(t *testing.T) {
	// A bucket that gives back 20 a second, spent at that pace from
	// empty: each answer's count says nothing is left.
	run := func(refuse bool) Verdict {
		o := &Record{}
		var v Verdict
		for i := range 100 {
			now := t0.Add(time.Duration(i) * 50 * time.Millisecond)
			spent := int64(i + 1)
			c := Count{Remaining: 0, Reset: time.Second, Limit: 50, Mark: spent, Sent: now.Add(-5 * time.Millisecond).UnixNano(), Local: true}
			if refuse && i == 99 {
				o.Refused(now, spent, 1, 0)
				c.Refused = 1
			}
			v = o.Count(now, c, scope100(spent))
		}
		return v
	}
	// Half the blind pace, 50 a second, would spend the bucket's 20 and
	// then as much again in refusals.
	if v := run(false); !v.Paced || v.Rate < 19.5 || v.Rate > 20.5 {
		t.Errorf("with nothing refused: %+v, want what comes back, 20 a second", v)
	}
	if v := run(true); !v.Paced || v.Rate >= 19 {
		t.Errorf("after a refusal: %+v, want the count's own pace, below what comes back", v)
	}
}

// A correction reaches the server a round trip after the count that asked
// for it: over a route of a second, a count off its margin closes the gap
// over a round trip, not within a quarter of a second, which swung the
// pace between a crawl and the blind pace.
func TestACountIsCorrectedOverARoundTrip(t *testing.T) {
	// A sliding window spent a little past its limit over a route of a
	// second: its count holds at nothing, what it gives back measured at
	// about the pace, and the hundred calls sent over the last round trip
	// are in flight at each answer — less what came back meanwhile.
	run := func(inFlight int64, trip time.Duration) (Verdict, float64, float64) {
		o := &Record{}
		var v Verdict
		var now time.Time
		for i := range 300 {
			now = t0.Add(time.Duration(i) * 10 * time.Millisecond)
			spent := int64(i + 1)
			c := Count{Remaining: 0, Reset: time.Second, Limit: 100, Mark: max(1, spent-inFlight), Sent: now.Add(-trip).UnixNano(), Local: true}
			if i%10 == 0 {
				o.Refused(now, c.Mark, 1, 0) // refused of late: no floor at half the blind pace
				c.Refused = 1
			}
			v = o.Count(now, c, scope100(spent))
		}
		supply, _ := o.Supply()
		margin := 1.0
		if o.gradual {
			margin += o.widening(now)
		}
		return v, supply, margin
	}
	for _, tt := range []struct {
		name     string
		inFlight int64
	}{
		{"short of the margin", 100},
		{"beyond the margin", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v, supply, margin := run(tt.inFlight, time.Second)
			if !v.Paced {
				t.Fatalf("verdict %+v, want a pace", v)
			}
			// The margin is a call (1 % of 100) — and, once the count
			// is seen to give back as it goes, a call for each refusal
			// since the first seconds, given back over time
			// (Record.widening); the gap closes over the round trip of
			// a second, no faster.
			want := supply + (v.Left-margin)/1
			if math.Abs(v.Rate-want) > 0.5 {
				t.Errorf("pace %.2f, want %.2f: what comes back (%.2f) and the gap to the margin (%.2f left) over the round trip", v.Rate, want, supply, v.Left)
			}
		})
	}
}

// Before any turn is seen, a count that falls faster than the scope spends
// is another client's, which goes on spending until the reset: what is
// left must last it too. A window of 600 a minute, a neighbour at 4 a
// second, the scope paced by its verdicts: spread over the reset without
// the neighbour's take, what was left ran out seconds before the turn,
// and the neighbour was refused one call in twenty.
func TestANeighbourIsLeftItsShareOfTheFirstWindow(t *testing.T) {
	for _, sliding := range []bool{false, true} {
		w := &minuteWindow{limit: 600, sliding: sliding, start: t0}
		sc := Scope{Blind: 9.8, Configured: 10, Unreported: 10, Floor: 1.0 / 30,
			Per: time.Minute, BlindWithin: true, CountsRequests: true, MaxWait: 2 * time.Minute}
		o := &Record{}
		rate, tokens := sc.Blind, 1.0
		var spent int64
		var neighbourCalls, neighbourRefused int
		step := 10 * time.Millisecond
		for at := time.Duration(0); at < 59*time.Second; at += step {
			now := t0.Add(at)
			if at%(250*time.Millisecond) == 0 { // the neighbour, 4 a second
				neighbourCalls++
				if _, refused := w.call(now); refused {
					neighbourRefused++
				}
			}
			tokens = min(tokens+rate*step.Seconds(), 1)
			if tokens < 1 {
				continue
			}
			tokens--
			spent++
			c, refused := w.call(now)
			c.Mark, c.Sent, c.Local = spent, now.UnixNano(), true
			if refused {
				c.Refused = 1
				o.Refused(now.Add(time.Millisecond), spent, 1, 0)
			}
			sc.Spent = spent
			if v := o.Count(now.Add(time.Millisecond), c, sc); v.Paced {
				rate = v.Rate
			}
		}
		if neighbourRefused > 0 {
			t.Errorf("sliding %v: the neighbour was refused %d of %d calls in the first window", sliding, neighbourRefused, neighbourCalls)
		}
		if supply, _ := o.Supply(); spent < 300 {
			t.Errorf("sliding %v: the scope spent %d of the window's 600 beside a neighbour taking 240 (supply %.2f)", sliding, spent, supply)
		}
	}
}

// Where a refusal has cost a pause of more than a second, none left until a
// reset in whole seconds is waited out to its slack. Without that
// evidence, a count of none whose whole-second reset may already be here
// does not stop the scope; nor, either way, does one that gives back as it
// goes (paused a second at each count of none over a route of a second, a
// window of a minute went from 0.89 to 0.80 of its quota).
func TestNoneLeftAfterACostlyRefusal(t *testing.T) {
	sc := scope100(1)
	c := Count{Remaining: 0, Reset: 0, Limit: 100, Mark: 1, Sent: t0.Add(-5 * time.Millisecond).UnixNano(), Local: true}
	if v := (&Record{}).Count(t0, c, sc); v.None {
		t.Errorf("none left, the reset due within the second, no costly refusal: %+v, want no pause", v)
	}
	sc.CostlyRefusals = true
	if v := (&Record{}).Count(t0, c, sc); !v.None || v.Pause != time.Second {
		t.Errorf("none left, the reset due within the second, after a costly refusal: %+v, want a pause of the second's slack", v)
	}
	c.Reset = 10 * time.Second
	if v := (&Record{}).Count(t0, c, sc); !v.None || v.Pause != 11*time.Second {
		t.Errorf("none left until a reset 10 s away, after a costly refusal: %+v, want a pause to the reset and its slack", v)
	}
	if v := (&Record{gradual: true}).Count(t0, c, sc); v.None {
		t.Errorf("none left in a count that gives back as it goes, after a costly refusal: %+v, want no pause: what comes back paces it", v)
	}
}

// None left until a whole-second reset of a window of a minute is waited
// out to the reset's slack before any refusal: the wait costs at most a
// second of the minute, a refusal at the turn may cost the next minute
// (httprate's first turn, told twice its limit: 0.507 of two minutes, now
// 0.999). Not for windows of a second or ten, where the wait would cost a
// large share of every window; not for a count that gives back as it goes.
func TestNoneLeftAtAMinutesTurn(t *testing.T) {
	c := Count{Remaining: 0, Reset: time.Second, Limit: 600, Mark: 1, Sent: t0.Add(-5 * time.Millisecond).UnixNano(), Local: true}
	for _, tt := range []struct {
		name    string
		per     time.Duration // the configured limit's window
		learned time.Duration // a window learned from the resets; 0 if none
		longest time.Duration // the longest reset a count has stated before
		gradual bool
		reset   time.Duration
		pause   time.Duration // 0: no pause
	}{
		{"a minute's window", time.Minute, 0, 0, false, time.Second, 2 * time.Second},
		{"a minute's window, the reset within the second", time.Minute, 0, 0, false, 0, time.Second},
		{"a window of twenty seconds", 20 * time.Second, 0, 0, false, time.Second, 2 * time.Second},
		{"a window of ten seconds", 10 * time.Second, 0, 0, false, time.Second, 0},
		{"a window of a second", time.Second, 0, 0, false, time.Second, 0},
		{"a minute learned from the resets, a second configured", time.Second, time.Minute, 0, false, time.Second, 2 * time.Second},
		{"a minute's window that gives back as it goes", time.Minute, 0, 0, true, time.Second, 0},
		{"a reset with a fraction of a second has no slack", time.Minute, 0, 0, false, 500 * time.Millisecond, 500 * time.Millisecond},
		// A window is no shorter than the time to its end: a scope told a
		// second, before two turns teach it the minute, from a count that
		// once stated a reset 59 s away.
		{"a second configured, a count once stated a reset a minute away", time.Second, 0, 59 * time.Second, false, time.Second, 2 * time.Second},
		// Two turns a second apart outrank one reset a server misstated.
		{"the same, a second learned from the resets since", time.Second, time.Second, time.Hour, false, time.Second, 0},
	} {
		sc := scope100(1)
		sc.Per = tt.per
		c.Reset = tt.reset
		v := (&Record{window: tt.learned, longestReset: tt.longest, gradual: tt.gradual}).Count(t0, c, sc)
		if v.None != (tt.pause > 0) || v.Pause != tt.pause {
			t.Errorf("%s: none %v, pause %v; want a pause of %v", tt.name, v.None, v.Pause, tt.pause)
		}
	}
}

// Below the margin at a long window's turn (a whole-second reset no
// further than its slack, in a window where the slack is small), a count
// wakes one call at a time and keeps no floor of half the blind pace: the
// turn may be here, and what it brought is unknown. Elsewhere the floor
// holds while nothing was refused of late.
func TestBelowTheMarginAtALongTurn(t *testing.T) {
	for _, tt := range []struct {
		name      string
		per       time.Duration
		remaining int64
		reset     time.Duration
		wakeOne   bool
	}{
		{"a minute's window, the reset a second away", time.Minute, 2, time.Second, true},
		{"a minute's window, the reset within the second", time.Minute, 2, 0, true},
		{"a minute's window, the reset two seconds away", time.Minute, 2, 2 * time.Second, false},
		{"a minute's window, above the margin", time.Minute, 20, time.Second, false},
		{"a reset with a fraction of a second", time.Minute, 2, 500 * time.Millisecond, false},
		{"a window of ten seconds", 10 * time.Second, 0, time.Second, false},
	} {
		sc := scope100(1)
		sc.Per = tt.per
		c := Count{Remaining: tt.remaining, Reset: tt.reset, Limit: 600, Mark: 1, Sent: t0.Add(-5 * time.Millisecond).UnixNano(), Local: true}
		// A window that gives back as it goes: none left sets a pace, not
		// a pause.
		v := (&Record{gradual: true}).Count(t0, c, sc)
		if v.WakeOne != tt.wakeOne {
			t.Errorf("%s: wake one %v, want %v", tt.name, v.WakeOne, tt.wakeOne)
		}
		if floored := v.Rate >= sc.Blind/2; tt.remaining < 6 && floored == tt.wakeOne {
			t.Errorf("%s: pace %v a second with half the blind pace %v; want the floor %v", tt.name, v.Rate, sc.Blind/2, !tt.wakeOne)
		}
	}
}

// Below the margin beside others seen spending on the key, a long
// window's count paces alone: what the others take goes on until the
// reset, and half the blind pace would take it from them. In a window of
// a second the floor of half the blind pace holds.
func TestBelowTheMarginBesideOthersInALongWindow(t *testing.T) {
	for _, tt := range []struct {
		name    string
		per     time.Duration
		others  bool
		floored bool
	}{
		{"a minute's window beside others", time.Minute, true, false},
		{"a minute's window alone", time.Minute, false, true},
		{"a second's window beside others", time.Second, true, true},
	} {
		sc := scope100(1)
		sc.Per = tt.per
		o := &Record{known: true, gradual: true, first: t0.Add(-10 * time.Second).UnixNano()}
		if tt.others {
			o.supply, o.drift = -40, -40 // the count falls 40 a second faster than the scope spends
		}
		c := Count{Remaining: 2, Reset: 30 * time.Second, Limit: 600, Mark: 1, Sent: t0.Add(-5 * time.Millisecond).UnixNano(), Local: true}
		if tt.per == time.Second {
			c.Limit, c.Reset, c.Remaining = 10, time.Second, 0
		}
		v := o.Count(t0, c, sc)
		// The floor is half the blind pace, as far as what is left and
		// the 600 given back at most by the reset last until it
		// (reading.lastsToReset).
		floor := min(sc.Blind/2, float64(c.Remaining+c.Limit)/(c.Reset-WholeSecondSlack(c.Reset)).Seconds())
		if floored := v.Rate >= floor; floored != tt.floored {
			t.Errorf("%s: pace %v a second, the floor %v; want the floor %v", tt.name, v.Rate, floor, tt.floored)
		}
	}
}

// tokenBucket is a GCRA-like server of rate a second holding up to
// capacity, with throttled's headers: what remains after the call, the
// capacity as the limit, and the whole seconds until it is full again.
type tokenBucket struct {
	capacity, rate, level float64
	at                    time.Time
	// round says the reset is rounded to the nearest second, not up: a
	// bucket a call short of full says it is full now (0).
	round bool
}

func (b *tokenBucket) call(now time.Time) (c Count, refused bool) {
	if !b.at.IsZero() {
		b.level = min(b.capacity, b.level+b.rate*now.Sub(b.at).Seconds())
	}
	b.at = now
	refused = b.level < 1
	if !refused {
		b.level--
	}
	toFull := (b.capacity - b.level) / b.rate
	if b.round {
		toFull = math.Round(toFull)
	}
	full := time.Duration(math.Ceil(toFull)) * time.Second
	return Count{Remaining: int64(b.level), Reset: full, Limit: int64(b.capacity)}, refused
}

// A bucket's reset is when it is full again, and it moves later as the
// bucket is spent; a window's end stays put. A first burst that empties a
// bucket of 51 at 10 a second shows its reset moving from one second to
// six: none left then paces by what comes back, not by a pause of five
// seconds to a full bucket. A fixed window emptied by the same burst
// still pauses to its reset.
func TestNoneLeftInABucketWhoseResetMovesDoesNotPause(t *testing.T) {
	sc := Scope{Blind: 9, Configured: 10, Unreported: 10, Floor: 1.0 / 120,
		Per: time.Minute, CountsRequests: true, MaxWait: 2 * time.Minute}
	burst := func(o *Record, call func(time.Time) (Count, bool)) (none int) {
		for i := range 60 {
			sent := t0.Add(time.Duration(i) * time.Millisecond)
			now := sent.Add(5 * time.Millisecond)
			c, refused := call(sent)
			c.Mark, c.Sent, c.Local = int64(i+1), sent.UnixNano(), true
			if refused {
				c.Refused = 1
				o.Refused(now, c.Mark, 1, 0)
			}
			sc.Spent = c.Mark
			if v := o.Count(now, c, sc); v.None {
				none++
			}
		}
		return none
	}
	bucket := &Record{}
	if none := burst(bucket, (&tokenBucket{capacity: 51, rate: 10, level: 51}).call); none > 0 || !bucket.gradual {
		t.Errorf("a bucket emptied by a burst: %d counts paused the scope, gradual %v; want none, and the moving reset seen", none, bucket.gradual)
	}
	// A first count a call short of full, its reset rounded to the nearest
	// second, names none (0): the next, naming a second, turned at it.
	rounded := &Record{}
	if none := burst(rounded, (&tokenBucket{capacity: 51, rate: 10, level: 51, round: true}).call); none > 0 || !rounded.gradual {
		t.Errorf("a bucket emptied by a burst, its reset rounded: %d counts paused the scope, gradual %v; want none, and the moving reset seen", none, rounded.gradual)
	}
	window := &Record{}
	if none := burst(window, (&minuteWindow{limit: 51, start: t0}).call); none == 0 || window.gradual {
		t.Errorf("a fixed window emptied by a burst: %d counts paused the scope, gradual %v; want a pause to its reset", none, window.gradual)
	}
}

// A hostile server's count that says none left until a reset "1 s" away
// at every answer, while it accepts every call: none left in a minute's
// window pauses the scope to the reset's slack, but a reset that passes
// without a refill and is named again later says the count gives back as
// it goes (Record's gradual), and such a count is never paused again. The
// lie costs the first pause or two, not a pause at every answer.
func TestAResetThatNeverComesStopsPausing(t *testing.T) {
	o := &Record{}
	sc := scope100(0)
	sc.Per = time.Minute
	now, spent, pauses := t0, int64(0), 0
	for range 200 {
		spent++
		sc.Spent = spent
		c := Count{Remaining: 0, Reset: time.Second, Limit: 600, Mark: spent, Sent: now.Add(-time.Millisecond).UnixNano(), Local: true}
		v := o.Count(now, c, sc)
		if v.None {
			pauses++
			now = now.Add(v.Pause)
			continue
		}
		now = now.Add(100 * time.Millisecond)
	}
	if pauses > 2 {
		t.Errorf("%d pauses for a reset that never comes (%v of virtual time for 200 calls); want at most 2", pauses, now.Sub(t0))
	}
}

// Which counts turned, from explicit times: a sliding minute whose resets
// are whole seconds rounded up turns before its last count's "1 s" is up,
// and the first count after names the next minute with little left; after
// a refusal the same reads as a server that turned to refusing, no turn;
// a count that names "1 s" at every answer names none.
func TestWhichCountsTurned(t *testing.T) {
	type answer struct {
		seen    time.Duration // from t0
		reset   time.Duration
		refused bool // something was refused of late
	}
	for _, tt := range []struct {
		name    string
		answers []answer
		turned  bool // at the last answer
		gradual bool
		left    float64
		limit   int64 // the published limit
	}{
		{"a sliding minute's turn before its rounded-up second",
			[]answer{{59 * time.Second, time.Second, false}, {59600 * time.Millisecond, time.Second, false}, {60050 * time.Millisecond, time.Minute, false}},
			true, true, 5, 600},
		{"the same after a refusal",
			[]answer{{59 * time.Second, time.Second, false}, {59600 * time.Millisecond, time.Second, false}, {60050 * time.Millisecond, time.Minute, true}},
			false, false, 5, 600},
		{"a fixed minute's turn: a refill, not a sliding window",
			[]answer{{59 * time.Second, time.Second, false}, {59600 * time.Millisecond, time.Second, false}, {60050 * time.Millisecond, time.Minute, false}},
			true, false, 590, 600},
		{"a count that names 1 s at every answer",
			[]answer{{0, time.Second, false}, {400 * time.Millisecond, time.Second, false}, {800 * time.Millisecond, time.Second, false}, {1200 * time.Millisecond, time.Second, false}, {1600 * time.Millisecond, time.Second, false}},
			false, false, 5, 600},
	} {
		var o Record
		var turned bool
		for _, a := range tt.answers {
			turned = o.noteReset(t0.Add(a.seen).UnixNano(), a.reset, tt.left, tt.limit, true, !a.refused)
		}
		if turned != tt.turned || o.gradual != tt.gradual {
			t.Errorf("%s: turned %v, gradual %v; want %v, %v", tt.name, turned, o.gradual, tt.turned, tt.gradual)
		}
	}
}
