package simulate

import (
	"time"

	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/internal/fakeclock"
)

// virtualClock is the clock.Clock of a simulated run: it reads the start
// of the run plus however far the simulation has advanced it.
type virtualClock struct {
	*fakeclock.Clock
	start time.Time
}

// runStart is an arbitrary fixed instant, so that runs are reproducible.
var runStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newVirtualClock() virtualClock {
	return virtualClock{fakeclock.New(runStart), runStart}
}

// NewTimer implements clock.Clock.
func (c virtualClock) NewTimer(d time.Duration) clock.Timer { return c.Clock.NewTimer(d) }

// advanceTo moves the clock to t since the start of the run; never back.
func (c virtualClock) advanceTo(t time.Duration) {
	if d := t - c.Now().Sub(c.start); d > 0 {
		c.Advance(d)
	}
}
