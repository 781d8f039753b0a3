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
// 400 ms, 11 calls of the first minute were refused in 33 runs of 40. Up to
// two are allowed: the first burst may beat the first count to the server
// on loopback, and a count's end wakes one probe (pace.Model.Base).
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
				accepted, refused := api.counts("pacer", start, time.Now())
				if refused > 2 || accepted < 3*40 {
					t.Errorf("%d calls accepted, %d refused; want three windows' 120 or more, at most two refused", accepted, refused)
				}
			})
		})
	}
}
