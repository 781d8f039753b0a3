// Package clock is the time a pacer Transport tells and waits by: the
// system's, or a fake one that a test or the simulator injects with With.
// It is internal: callers of pacer test in virtual time with
// testing/synctest, which needs no clock of its own.
package clock

import "time"

// A Clock tells the time and makes timers. Every wait in pacer goes through
// one, so that a test or the simulator can run in virtual time: pass a
// fake with With. A Transport uses System unless given one.
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

// System is the Clock that reads the system's time.
var System Clock = systemClock{}

type systemClock struct{}

func (systemClock) Now() time.Time                 { return time.Now() }
func (systemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time   { return t.t.C }
func (t systemTimer) Stop() bool            { return t.t.Stop() }
func (t systemTimer) Reset(d time.Duration) { t.t.Reset(d) }

// With returns the option of type O that makes a Transport tell time and
// wait by clk, as clock.With[pacer.Option](clk). Type inference finds the
// configuration O configures, whose SetClock does the work.
//
// Why generic: the root package exports no clock option, so that go doc
// shows a caller none; a generic function here reaches the unexported
// configuration through the exported method of an unexported type, with
// no registration at init and no second option type.
func With[O ~func(C), C interface{ SetClock(Clock) }](clk Clock) O {
	return func(c C) { c.SetClock(clk) }
}
