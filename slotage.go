package pacer

import (
	"fmt"
	"time"

	"github.com/pacer-go/pacer/internal/slots"
	"github.com/pacer-go/pacer/observe"
)

// defaultSlotAgeAlert is how long a call may hold a concurrency slot before
// observe.EventSlotHeld reports it, unless WithSlotAgeAlert says otherwise.
const defaultSlotAgeAlert = 10 * time.Minute

// WithSlotAgeAlert sets how long a call may hold a concurrency slot before
// an observe.EventSlotHeld reports it, once per slot; the default is ten minutes.
// A slot is held until the response body is closed or
// read to its end, so a slot held for longer than any response should take
// is most likely a body that was never closed: closing it is the caller's
// job, as with net/http, and pacer does not take the slot back. Stats shows
// the age of each scope's oldest slot (ScopeStats.OldestSlot).
//
// Ages are counted in whole seconds, so d must be at least a second. Slots
// are looked at lazily, with no timer per call: when Stats is called, when
// a call finds a scope full, and at most every half of d while calls are
// admitted. An event may therefore come up to a second late, or later on a
// Transport with no traffic and no Stats.
func WithSlotAgeAlert(d time.Duration) Option {
	return func(c *config) {
		if d < time.Second {
			c.errs = append(c.errs, fmt.Errorf("WithSlotAgeAlert(%v): slots' ages are counted in seconds; give at least one second", d))
			return
		}
		c.slotAgeAlert = d
	}
}

// slotAgeAlert returns the age past which a held slot is reported.
func (t *Transport) slotAgeAlert() time.Duration {
	if t.slotAlert > 0 {
		return t.slotAlert
	}
	return defaultSlotAgeAlert
}

// checkSlots looks for slots of s held too long, reports each once to the
// observers, and returns how long the oldest slot has been held.
func (t *Transport) checkSlots(s *bucket, now time.Time) (oldest time.Duration) {
	if s.scope.Concurrency == 0 {
		return 0
	}
	epoch, held, overdue := s.ages.Check(slots.Epoch(now), t.slotAgeAlert())
	for _, o := range overdue { // outside the lock: an observer may call Stats
		age := now.Sub(time.Unix(o.Epoch, 0)).Truncate(time.Second)
		for range o.N {
			t.emit(observe.Event{Kind: observe.EventSlotHeld, Scope: s.scope.Name, Wait: age})
		}
	}
	if !held {
		return 0
	}
	return now.Sub(time.Unix(epoch, 0))
}

// checkSlotsSometimes is checkSlots for a scope found full: at most once a
// second per scope.
func (t *Transport) checkSlotsSometimes(s *bucket, now time.Time) {
	if slots.Epoch(now) != s.ages.CheckedAt() {
		t.checkSlots(s, now)
	}
}

// checkAllSlots looks at every scope's slots every half of the alert's age,
// so that a slot held too long on a scope that is never full is reported
// too. It costs an admitted call one atomic load: slotCheckDue, inlined.
func (t *Transport) checkAllSlots(now time.Time) {
	next := t.nextSlotCheck.Load()
	if now.UnixNano() < next || !t.nextSlotCheck.CompareAndSwap(next, now.Add(t.slotAgeAlert()/2).UnixNano()) {
		return
	}
	for _, cs := range t.scopes {
		if cs.Concurrency == 0 {
			continue
		}
		cs.eachBucket(func(s *bucket) { t.checkSlots(s, now) })
	}
}

// slotCheckDue reports whether checkAllSlots would look at the slots now.
func (t *Transport) slotCheckDue(now time.Time) bool {
	return now.UnixNano() >= t.nextSlotCheck.Load()
}
