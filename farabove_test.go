package pacer

import (
	"io"
	"testing"
	"testing/synctest"
	"time"
)

// A scope configured far above its server (1,000 a second against a fixed
// minute of 40 that states what remains, not its limit) spends each window
// with at most a probe refused. Its first burst's answers, read out of
// order, neither refill the bucket between clamps
// (TestAClampDoesNotRefillAtThePaceTheCallWasAdmittedAt) nor read as the
// window's refill (pace.Record.measure): without them, over a route of up to
// 400 ms, 11 calls of the first minute were refused in 33 runs of 40. Two
// of the first burst may be refused — on loopback it may beat the first
// count to the server — and one call after it: a count's end wakes a probe
// (pace.Model.Base), which under the race detector's schedules met none
// left in five runs of 300.
func TestAFixedMinuteFarBelowTheConfiguredLimit(t *testing.T) {
	for _, tt := range []struct {
		name string
		lag  time.Duration
	}{
		{"loopback", 0},
		{"a round trip of up to 400 ms", 400 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				toPresent()
				// A fixed window that says what remains and when it
				// resets, not its limit; its first window starts now.
				api := &windowAPI{limit: 40, window: time.Minute, unstated: true}
				if tt.lag > 0 {
					api.lag = lagUpTo(tt.lag)
				}
				tr := New(api, WithLimit(PerSecond(1000)), WithoutRetry(), WithLogger(slogTo(io.Discard)))
				start := time.Now()
				hammer(tr, 32, start.Add(3*time.Minute))
				first := start.Add(100 * time.Millisecond)
				_, inBurst := api.counts("pacer", start, first)
				accepted, refused := api.counts("pacer", start, time.Now())
				if inBurst > 2 || refused-inBurst > 1 || accepted < 3*40 {
					t.Errorf("%d calls accepted, %d refused, %d of them in the first burst; want three windows' 120 or more, at most two refused in the burst and one after it",
						accepted, refused, inBurst)
				}
			})
		})
	}
}

// The same scope, whose first window ends within two seconds of its start.
// Every window after the first is spent with at most one refusal (the probe
// a count's end wakes, pace.Model.Base, which met none left in three runs
// of 300 under the race detector). A reset in whole seconds may come up to
// a second after it says, and a pause to it waits out that slack where the
// slack is a small share of the window (pace.reading.noneLeft); the window
// was the configured second until two turns had taught the minute, so the
// pause ended up to a second before the turn, and the restart was refused
// there (4 at the first minute's turn, 18 at the second's). The longest
// reset a count has stated now bounds the window from below.
//
// The first window's none left, before the scope knows what the server
// holds, is refused what wakes a waiting call at each count's end: no more
// than the counts have shown the server holds, 40 (pace.LivePace.Holds),
// where it was the configured burst of 100. Over the six cases, 371
// refused in the first windows with the configured burst; 138 on average
// with the server's, and at most 236 if each case met its worst of 1,000
// runs at once.
func TestAFixedMinuteFarBelowTheConfiguredLimitTurningSoon(t *testing.T) {
	firstWindows := 0
	for _, lag := range []time.Duration{0, 400 * time.Millisecond} {
		for _, end := range []time.Duration{500 * time.Millisecond, 900 * time.Millisecond, 1500 * time.Millisecond} {
			t.Run(lag.String()+"/"+end.String(), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					toPresent()
					api := &windowAPI{limit: 40, window: time.Minute, offset: end, unstated: true}
					if lag > 0 {
						api.lag = lagUpTo(lag)
					}
					tr := New(api, WithLimit(PerSecond(1000)), WithoutRetry(), WithLogger(slogTo(io.Discard)))
					start := time.Now()
					hammer(tr, 32, start.Add(4*time.Minute))
					later := start.Add(end + 2*time.Second)
					_, first := api.counts("pacer", start, later)
					firstWindows += first
					accepted, refused := api.counts("pacer", later, time.Now())
					if refused > 1 || accepted < 3*40 {
						var per []int
						for w := end; w < 4*time.Minute; w += time.Minute {
							a, _ := api.counts("pacer", start.Add(w), start.Add(w+time.Minute))
							per = append(per, a)
						}
						t.Errorf("past the first window: %d calls accepted (by window %v), %d refused; want three windows' 120 or more, at most one refused", accepted, per, refused)
					}
				})
			})
		}
	}
	if firstWindows > 240 {
		t.Errorf("%d calls refused in the first windows of the six cases; want at most 240, what the server holds woken at each count's end", firstWindows)
	}
}

// A scope configured far above a sliding minute of 40 (1,000 or 400 a
// second) is paced by its counts, and what wakes a waiting call as each
// count runs out refilled the configured burst by the count's reset. A
// sliding window's reset counts down to its window's end, so each count
// armed the wake anew over less time, up to the burst a second in the
// window's last second, into a window that gives back no faster at its
// end than before: past the first minute, one call in three was refused.
// The count is seen to give back as it goes, and the configured pace is
// more than it holds in its window, so the wake spends no faster than
// what comes back (pace.LivePace.WakeAtMost). Past the first minute (the
// first window's turn, after a pause to it, is another matter), over
// loopback, a route of 40–60 ms and one of up to 400 ms, at most two calls
// are refused at each turn (107–121 of 290 without the bound): the one
// call the wake still sends by each count's end may meet a turn, when the
// sliding window still holds the whole of the window before it. Told the
// limit itself or twice it, the scope spends as much as before, 0.9 of the
// window or more.
func TestTheWakeSpendsNoFasterThanASlidingWindowGivesBack(t *testing.T) {
	for _, lag := range []time.Duration{0, 50 * time.Millisecond, 400 * time.Millisecond} {
		for _, tt := range []struct {
			limit Limit
			least int // accepted past the first minute and ten seconds, of the 153 the window gives back
		}{
			{PerSecond(1000), 140},
			{PerSecond(400), 140},
			{PerMinute(80), 140},
			{PerMinute(40), 120},
		} {
			t.Run(lag.String()+"/"+tt.limit.String(), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					toPresent()
					api := &windowAPI{limit: 40, window: time.Minute, sliding: true, unstated: true}
					if lag > 0 {
						api.lag = lagUpTo(lag)
					}
					tr := New(api, WithLimit(tt.limit), WithoutRetry(), WithLogger(slogTo(io.Discard)))
					start := time.Now()
					hammer(tr, 32, start.Add(5*time.Minute))
					accepted, refused := api.counts("pacer", start.Add(70*time.Second), time.Now())
					if refused > 2*4 || accepted < tt.least {
						t.Errorf("past the first minute: %d accepted, %d refused; want %d or more, and at most two refused at each of the four turns", accepted, refused, tt.least)
					}
				})
			})
		}
	}
}
