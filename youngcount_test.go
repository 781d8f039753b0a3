package pacer

import (
	"io"
	"testing"
	"testing/synctest"
	"time"
)

// A scope configured far above its server (1,000 a second against 40 a
// minute) reads its first counts below their margin before anything has
// been refused, and the floor that lets calls bring the news of what comes
// back was half the blind pace: 450 a second, a round trip's worth of calls
// into a count with a handful left and most of a minute to its reset.
// Whatever the server counts by, it gives back at most what it holds by its
// reset, so the floor is held to what lasts that long
// (pace.reading.lastsToReset), and the first minute is not spent into
// refusals. One refusal is allowed: on loopback the first burst can beat
// the first count to the server, or the live count's end wake a probe
// (pace.Model.Base).
func TestAFloorLastsToTheReset(t *testing.T) {
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
				accepted, refused := api.counts("pacer", start, time.Now())
				if refused > 1 || accepted < 3*40 {
					t.Errorf("%d calls accepted, %d refused; want three windows' 120 or more, at most one refused: the floor spent past what the count had left before its reset", accepted, refused)
				}
			})
		})
	}
}
