// Package fakeclock is a manual clock for tests: time stands still until the
// test calls Advance, and timers fire in deadline order as it passes them.
package fakeclock

import (
	"sort"
	"sync"
	"time"

	"github.com/pacer-go/pacer/internal/clock"
)

// Clock is a fake clock. The zero value is not usable; call New.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*Timer
}

// New returns a clock that reads start until advanced.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d, firing every timer whose deadline
// it reaches, earliest first.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			kept = append(kept, t)
			continue
		}
		t.armed = false
		select {
		case t.ch <- c.now:
		default:
		}
	}
	c.timers = kept
}

// Timers reports how many timers are waiting to fire.
func (c *Clock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Timer is a fake timer driven by its Clock.
type Timer struct {
	c     *Clock
	ch    chan time.Time
	at    time.Time
	armed bool
}

// NewTimer returns a timer that fires when the clock has advanced by d.
func (c *Clock) NewTimer(d time.Duration) *Timer {
	t := &Timer{c: c, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// C returns the channel the timer sends on.
func (t *Timer) C() <-chan time.Time { return t.ch }

// Stop disarms the timer and reports whether it was armed.
func (t *Timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.disarm()
}

// Reset rearms the timer to fire d after the clock's current time.
func (t *Timer) Reset(d time.Duration) {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.disarm()
	select { // a fire the owner never read must not count for the new deadline
	case <-t.ch:
	default:
	}
	t.at = t.c.now.Add(d)
	if d <= 0 {
		select {
		case t.ch <- t.c.now:
		default:
		}
		return
	}
	t.armed = true
	t.c.timers = append(t.c.timers, t)
}

func (t *Timer) disarm() bool {
	if !t.armed {
		return false
	}
	t.armed = false
	for i, x := range t.c.timers {
		if x == t {
			t.c.timers = append(t.c.timers[:i], t.c.timers[i+1:]...)
			break
		}
	}
	return true
}

// AsClock returns c as the clock.Clock a Transport takes (clock.With), its
// timers as clock.Timers.
func (c *Clock) AsClock() clock.Clock { return asClock{c} }

type asClock struct{ *Clock }

func (a asClock) NewTimer(d time.Duration) clock.Timer { return a.Clock.NewTimer(d) }
