package pace

import (
	"math"
	"testing"
	"time"
)

// drive calls server at most a second — or, if follow, at the pace each
// verdict sets, no faster — for d from t0, each call answered 5 ms after
// it was sent; a count of none waits out its pause. It returns the pauses,
// and the scope's spent and refused calls.
func drive(o *Record, sc Scope, server func(time.Time) (Count, bool), most float64, follow bool, d time.Duration) (pauses int, spent, refused int64) {
	rate := most
	for at := t0; at.Before(t0.Add(d)); {
		c, ref := server(at)
		spent++
		now := at.Add(5 * time.Millisecond)
		c.Mark, c.Sent, c.Local = spent, at.UnixNano(), true
		if ref {
			c.Refused = 1
			refused++
			o.Refused(now, spent, 1, 0)
		}
		sc.Spent = spent
		v := o.Count(now, c, sc)
		switch {
		case v.None:
			pauses++
			at = now.Add(v.Pause)
			continue
		case v.Paced && follow:
			rate = min(most, v.Rate)
		}
		at = at.Add(time.Duration(float64(time.Second) / rate))
	}
	return pauses, spent, refused
}

// A bucket of 50 at 10 a second, told twice that: the scope spends it
// slowly, the reset — the time until it is full — creeping from one second
// to five, and none left comes seconds after the first count named its
// reset, and after a refill (the first pause's). The count gave back ten a
// second all along: none left paces by what comes back, not by a pause to
// a full bucket every half minute. A fixed window spent the same way gives
// nothing back before its turn, and still pauses to it.
func TestNoneLeftInABucketThatGivesBackDoesNotPause(t *testing.T) {
	sc := Scope{Blind: 18, Configured: 20, Unreported: 20, Floor: 1.0 / 120,
		Per: time.Minute, CountsRequests: true, MaxWait: 2 * time.Minute}
	bucket := &tokenBucket{capacity: 51, rate: 10, level: 51}
	pauses, spent, _ := drive(&Record{}, sc, bucket.call, 19.6, true, 2*time.Minute)
	if pauses > 0 || spent < 1230 {
		t.Errorf("a bucket of 10 a second spent at twice that: %d pauses, %d calls in 2 minutes; want none, and ≥ 1,230 (1,250 at most)", pauses, spent)
	}
	window := &minuteWindow{limit: 600, start: t0}
	if pauses, _, refused := drive(&Record{}, sc, window.call, 19.6, false, 2*time.Minute); pauses < 2 || refused > 60 {
		t.Errorf("a fixed window of 600 a minute called at 19.6 a second: %d pauses, %d refused; want a pause to each turn, not calls into the rest of the window", pauses, refused)
	}
}

// A count held steady for seconds while the scope spent, the server
// refusing nothing: a count a few calls below the margin, as the calls
// counted out of order leave one now and then over a jittery route, does
// not slow the scope within a quarter of a second. The gap is closed over
// seconds from the pace the server has been seen to sustain. A refusal
// within those seconds sets that pace aside.
func TestACountHeldSteadyKeepsItsPace(t *testing.T) {
	sc := Scope{Blind: 90, Configured: 100, Unreported: 100, Floor: 1.0 / 30,
		Per: time.Second, BlindWithin: true, CountsRequests: true, MaxWait: 30 * time.Second}
	steady := func(refuseAt int) (*Record, time.Time, int64) {
		o := &Record{}
		var spent int64
		now := t0
		for i := range 300 { // 95 a second for 3.16 s, the count between 4 and 8
			now = t0.Add(time.Duration(i) * time.Second / 95)
			spent++
			sc.Spent = spent
			c := Count{Remaining: int64(4 + i*7%5), Reset: time.Second, Limit: 500, Mark: spent, Sent: now.Add(-time.Millisecond).UnixNano(), Local: true}
			if i == refuseAt {
				o.Refused(now, spent, 1, 0)
				c.Refused = 1
			}
			o.Count(now, c, sc)
		}
		return o, now, spent
	}
	low := func(o *Record, now time.Time, spent int64) Verdict {
		now = now.Add(10 * time.Millisecond)
		sc.Spent = spent + 1
		// One below the margin of five the published 500 keeps.
		return o.Count(now, Count{Remaining: 1, Reset: time.Second, Limit: 500, Mark: spent + 1, Sent: now.Add(-time.Millisecond).UnixNano(), Local: true}, sc)
	}
	if v := low(steady(-1)); !v.Paced || v.Rate < 90 {
		t.Errorf("a count held steady for 3 s at 95 a second, none refused, then one below its margin: %+v, want a pace of 90 or more", v)
	}
	if v := low(steady(250)); !v.Paced || v.Rate >= 90 {
		t.Errorf("the same, one call refused half a second before: %+v, want the pace below 90: the refusal outranks the steady count", v)
	}
}

// A token bucket's count jumps when answers overtake each other: two jumps
// a second apart, then one an eighth of a second later, are not a window
// of a second that let through the dozen spent in that eighth. The spent between
// two refills is a window's only when they are a whole number of windows
// apart; read from the last pair, the bucket of 100 a second publishing
// its capacity of 11 was paced as a fixed window of 11.
func TestJumpsOffTheWindowAreNotAWindow(t *testing.T) {
	sc := scope100(0)
	o := &Record{}
	var spent int64
	jumps := map[int]bool{50: true, 150: true, 250: true, 262: true}
	for i := range 300 { // a call each 10 ms, the bucket at 1 but for the jumps
		now := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		spent++
		sc.Spent = spent
		r := int64(1)
		if jumps[i] {
			r = 10
		}
		o.Count(now, Count{Remaining: r, Reset: time.Second, Limit: 11, Mark: spent, Sent: now.Add(-time.Millisecond).UnixNano(), Local: true}, sc)
	}
	if o.refillEvery != time.Second {
		t.Fatalf("the jumps a second apart set a period of %v, want 1s", o.refillEvery)
	}
	if o.refillsByWindow(o.refillEvery, sc.Per) {
		t.Errorf("jumps at 0.5, 1.5, 2.5 and 2.62 s read as a window's turns (spent between the latest two: %d)", o.refillSpent)
	}
	windows := &Record{}
	spent = 0
	for i := range 300 { // a fixed window of 100 turning each second, spent at its rate
		now := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		spent++
		sc.Spent = spent
		windows.Count(now, Count{Remaining: 99 - int64(i%100), Reset: time.Second - time.Duration(i%100)*10*time.Millisecond, Limit: 100, Mark: spent, Sent: now.Add(-time.Millisecond).UnixNano(), Local: true}, sc)
	}
	if !windows.refillsByWindow(windows.refillEvery, sc.Per) {
		t.Errorf("a fixed window's refills each second are not read as its turns (period %v, spent between the latest two %d)", windows.refillEvery, windows.refillSpent)
	}
}

// A hostile server: its count says none left until a reset ten seconds
// off, or stays at three, whatever is spent, while it refuses every call.
// The refused calls were never counted, so nothing came back: neither the
// give-back floor nor the no-pause reading of none may carry the scope
// past what the server does. It pauses on none, and a count that holds at
// three while every call is refused keeps the scope far below its blind
// pace.
func TestGivenBackIsNotFooledByACountThatLies(t *testing.T) {
	sc := Scope{Blind: 90, Configured: 100, Unreported: 100, Floor: 1.0 / 30,
		Per: time.Second, BlindWithin: true, CountsRequests: true, MaxWait: 30 * time.Second}
	for _, left := range []int64{0, 3} {
		refuse := func(time.Time) (Count, bool) {
			return Count{Remaining: left, Reset: 10 * time.Second, Limit: 100}, true
		}
		pauses, spent, _ := drive(&Record{}, sc, refuse, 90, true, time.Minute)
		if left == 0 && pauses == 0 {
			t.Errorf("a count of none until a reset 10 s off while every call is refused: no pause in a minute (%d calls)", spent)
		}
		if spent > 60*9 {
			t.Errorf("a count stuck at %d while every call is refused: %d calls in a minute, want fewer than a tenth of the blind pace's", left, spent)
		}
	}
}

// A server that gave back all the scope spent for seconds, then turns: it
// refuses every call, its count none until a reset ten seconds off. What
// came back before is no licence to go on: the first refusal outranks it,
// and the scope pauses at the next count of none instead of pacing into
// the refusals by what came back.
func TestARefusalEndsTheGiveBackReading(t *testing.T) {
	sc := Scope{Blind: 90, Configured: 100, Unreported: 100, Floor: 1.0 / 30,
		Per: time.Second, BlindWithin: true, CountsRequests: true, MaxWait: 30 * time.Second}
	turn := t0.Add(5 * time.Second)
	server := func(at time.Time) (Count, bool) {
		if at.Before(turn) {
			return Count{Remaining: 5, Reset: time.Second, Limit: 100}, false
		}
		return Count{Remaining: 0, Reset: 10 * time.Second, Limit: 100}, true
	}
	if _, _, refused := drive(&Record{}, sc, server, 90, true, 10*time.Second); refused > 3 {
		t.Errorf("after the server turned to refusing with none left: %d calls refused, want a pause after the first or two", refused)
	}
}

// When the marks change their unit — the fleet's total from a shared
// store, then the scope's own spent once the store stops counting — the
// counts kept against the old marks are no baseline: read against the
// new, thousands of calls a second came back, or others took them.
func TestNewMarksStartTheBaselinesAfresh(t *testing.T) {
	sc := scope100(0)
	o := &Record{}
	for i := range 300 { // 3 s of a fleet's counts, its total past 50,000
		now := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		sc.Spent = 50_000 + int64(i)
		o.Count(now, Count{Remaining: 50, Reset: time.Second, Limit: 100, Mark: sc.Spent, Sent: now.Add(-time.Millisecond).UnixNano(), Fleet: true}, sc)
	}
	now := t0.Add(3 * time.Second)
	sc.Spent = 1
	o.Count(now, Count{Remaining: 50, Reset: time.Second, Limit: 100, Mark: 1, Sent: now.Add(-time.Millisecond).UnixNano(), Local: true}, sc)
	seen := now.Add(-time.Millisecond).UnixNano()
	if back, _, _ := o.givenBack(seen+int64(heldSpan), 50, 1); back != 0 {
		t.Errorf("given back over the fleet's counts, read against the scope's own marks: %.0f a second, want none measured", back)
	}
	if take, span := o.othersTake(seen+int64(heldSpan), 50, 1); take < -1 || take > 1 {
		t.Errorf("others' take, the count unmoved and nothing spent since the marks changed: %.0f a second over %v, want none", take, span)
	}
}

// The first burst's calls are counted in another order than they were
// sent in: the first measure says others took 27 a second when none did.
// While the measure is young, that is no neighbour (alone); a neighbour
// spending 40 a second from the start is one within a few tenths of a
// second. The server is a window's first second, which gives nothing back.
func TestTheFirstBurstsDisorderIsNoNeighbour(t *testing.T) {
	for _, tt := range []struct {
		name      string
		neighbour float64 // calls a second another client takes from the count
		want      bool
	}{
		{"alone, four calls counted out of order", 0, true},
		{"beside a neighbour at 40 a second", 40, false},
	} {
		var o Record
		sc := scope100(0)
		answer := func(now time.Time, mark int64, early float64) {
			taken := tt.neighbour * now.Sub(t0).Seconds()
			c := Count{Remaining: int64(100 - float64(mark) - taken - early), Reset: time.Second, Limit: 100, Mark: mark,
				Sent: now.Add(-20 * time.Millisecond).UnixNano(), Local: true}
			sc.Spent = mark
			o.Count(now, c, sc)
		}
		answer(t0, 10, 0)
		// 150 ms on, 15 more spent; four of the calls sent after the one
		// the count answers were counted before it.
		now := t0.Add(150 * time.Millisecond)
		answer(now, 25, 4)
		for mark := int64(40); mark <= 85; mark += 15 {
			now = now.Add(100 * time.Millisecond)
			answer(now, mark, 0)
		}
		if got := o.alone(now, true, sc.Blind); got != tt.want {
			t.Errorf("%s: alone = %v at %v, want %v (supply %.1f, drift %.1f a second)", tt.name, got, now.Sub(t0), tt.want, o.supply, o.drift)
		}
	}
}

// TestASlidingWindowGivesBackFromItsFirstTurn: a sliding window's first
// window gives back nothing — the one before it was empty — and from its
// turn it gives back what that window counted, evenly over the next. A
// measure still young has read only the first window's nothing: at the
// turn it starts from what the turn gives back, for a scope alone on the
// key; beside a neighbour, part of what the window counted is the
// neighbour's, who takes it again.
func TestASlidingWindowGivesBackFromItsFirstTurn(t *testing.T) {
	sc := Scope{Blind: 90, Configured: 100, Unreported: 100, Floor: 1, Per: time.Second, Quota: 100,
		BlindWithin: true, CountsRequests: true, MaxWait: time.Minute}
	for _, tc := range []struct {
		name           string
		every          time.Duration // the scope's calls
		neighbour      time.Duration // an unpaced neighbour's; 0 for none
		atLeast, below float64       // the supply measured at the first count after the turn
	}{
		// 80 counted in the first window: 80 a second back.
		{"alone", 12500 * time.Microsecond, 0, 70, math.Inf(1)},
		// What the window counted is the scope's 50 and the
		// neighbour's 40, who takes its 40 again: 10 a second net.
		{"beside a neighbour", 20 * time.Millisecond, 25 * time.Millisecond, math.Inf(-1), 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &Record{}
			w := &minuteWindow{limit: 100, sliding: true, window: time.Second, start: t0}
			var spent int64
			next := t0
			for at := t0; ; at = at.Add(tc.every) {
				for ; tc.neighbour > 0 && !next.After(at); next = next.Add(tc.neighbour) {
					w.call(next)
				}
				c, refused := w.call(at)
				if refused {
					t.Fatalf("refused at %v: the scope and its neighbour send within the limit", at.Sub(t0))
				}
				spent++
				c.Mark, c.Sent, c.Local = spent, at.UnixNano(), true
				sc.Spent = spent
				o.Count(at.Add(5*time.Millisecond), c, sc)
				if at.Sub(t0) >= time.Second {
					break // the first count after the turn
				}
			}
			if !o.gradual {
				t.Fatal("the turn without a refill was not seen")
			}
			if o.supply < tc.atLeast || o.supply >= tc.below {
				t.Errorf("supply at the turn %.1f a second, want at least %v and below %v", o.supply, tc.atLeast, tc.below)
			}
		})
	}
}

// A first burst's counts come back in the order the server counted the
// burst in, not the order it was sent in: the count of the eighth call,
// counted first, read after that of the third, counted last, is 25 above
// it. Read as a fixed window's refill, that barred the count from ever
// being seen to give back as it goes (Record.gradual). The measure starts
// from the least of the burst's counts, at the last of its calls read: 3
// left once the eighth was spent.
func TestAFirstBurstsCountsShowNoRefill(t *testing.T) {
	sc := scope100(10)
	for _, burst := range []bool{true, false} {
		o := &Record{}
		read := func(at time.Duration, remaining, mark int64) {
			o.Count(t0.Add(at), Count{Remaining: remaining, Reset: time.Minute, Limit: -1, Mark: mark, Sent: t0.UnixNano(), Local: true, Burst: burst}, sc)
		}
		read(100*time.Millisecond, 3, 3)  // counted last of the ten
		read(101*time.Millisecond, 28, 8) // counted first, read later
		if refilled := o.refillAt != 0; refilled == burst {
			t.Errorf("a count of the first burst %v: a refill seen %v, want %v", burst, refilled, !burst)
		}
		if burst && (o.remaining != 3 || o.spent != 8) {
			t.Errorf("the measure starts from %v left at %d spent, want 3 at 8", o.remaining, o.spent)
		}
	}
}

// What a count's provider gave back since it was made is read over the
// call's round trip — the route's longest jitter at most, for a call held
// on its way: a call held three seconds on a 200–400 ms route was counted
// when it got through, and a sliding window giving back 40 a second had not
// given back 120 calls since.
func TestWhatFlowedBackSinceAHeldCallsCount(t *testing.T) {
	const ms = time.Millisecond
	now := t0.Add(10 * time.Second)
	for _, tc := range []struct {
		name string
		trip time.Duration
		want float64
	}{
		{"an ordinary round trip", 300 * ms, 12},
		{"the longest the route's jitter makes", 500 * ms, 20},
		{"a call held three seconds", 3 * time.Second, 20},
	} {
		o := &Record{known: true, supply: 40, rtt: RoundTrips{Floor: int64(200 * ms), Spread: float64(100 * ms), seen: spreadTrips}}
		if got := o.flownBack(now, now.Add(-tc.trip).UnixNano()); !near(got, tc.want) {
			t.Errorf("%s: %v given back, want %v", tc.name, got, tc.want)
		}
	}
}
