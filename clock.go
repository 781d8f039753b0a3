package pacer

import "time"

// A Clock tells the time and makes timers. Every wait in pacer goes through
// one, so that tests can run in virtual time: pass a fake with WithClock.
//
// The zero configuration uses the system clock.
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that sends on its channel once d has passed.
	NewTimer(d time.Duration) Timer
}

// A Timer is the part of *time.Timer that pacer uses.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing. It reports whether it did so.
	Stop() bool
	// Reset makes the timer fire once d has passed from now.
	Reset(d time.Duration)
}

// SystemClock is the Clock that reads the system's time.
var SystemClock Clock = systemClock{}

type systemClock struct{}

func (systemClock) Now() time.Time                 { return time.Now() }
func (systemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time   { return t.t.C }
func (t systemTimer) Stop() bool            { return t.t.Stop() }
func (t systemTimer) Reset(d time.Duration) { t.t.Reset(d) }
