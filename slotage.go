package pacer

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

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

// slotEpoch is the epoch of a slot taken at now: its Unix second.
func slotEpoch(now time.Time) int64 { return now.Unix() }

// slotAges counts a scope's slots in flight by the second they were taken
// in, so that one held too long can be seen without a timer per call.
//
// The last ageRing seconds are counted in a ring of atomic words, each the
// low 32 bits of its second above a count, so taking and giving back a slot
// each cost one compare-and-swap. A second whose bucket is needed again
// while it still counts slots — slots held longer than the ring is long —
// is moved under the lock to old, where its slots are given back under the
// lock too: a slow path for slow calls.
type slotAges struct {
	ring [ageRing]atomic.Uint64

	mu        sync.Mutex
	old       map[int64]*oldSlots // by epoch
	lastCheck atomic.Int64        // the epoch of the last look for slots held too long
}

type oldSlots struct {
	n        int
	reported bool // observe.EventSlotHeld was sent for these slots
}

const (
	ageRing   = 8
	countBits = 32
	countMask = 1<<countBits - 1
)

func ageTag(epoch int64) uint64 { return uint64(uint32(epoch)) << countBits }

func (a *slotAges) bucket(epoch int64) *atomic.Uint64 { return &a.ring[uint64(epoch)%ageRing] }

// add counts a slot taken in epoch.
func (a *slotAges) add(epoch int64) {
	if !a.tryAdd(epoch) {
		a.addSlow(epoch)
	}
}

// tryAdd is add's common case, small enough to be inlined: the epoch's
// bucket already tagged with it, one load and one compare-and-swap. It
// reports whether it counted the slot.
func (a *slotAges) tryAdd(epoch int64) bool {
	b := &a.ring[uint64(epoch)%ageRing]
	w := b.Load()
	return w&^countMask == ageTag(epoch) && b.CompareAndSwap(w, w+1)
}

func (a *slotAges) addSlow(epoch int64) {
	b, tag := a.bucket(epoch), ageTag(epoch)
	for {
		w := b.Load()
		switch {
		case w&countMask == 0:
			if b.CompareAndSwap(w, tag|1) {
				return
			}
		case w&^countMask == tag:
			if b.CompareAndSwap(w, w+1) {
				return
			}
		default: // another second's slots, still held: move them to old
			a.mu.Lock()
			if w := b.Load(); w&countMask != 0 && w&^countMask != tag {
				a.fold(b, epoch)
			}
			a.mu.Unlock()
		}
	}
}

// fold moves the slots counted in bucket b to old. near is an epoch near
// that of the bucket, to restore the bits the tag does not keep. a.mu must
// be held: a bucket that counts slots changes its second only under it.
func (a *slotAges) fold(b *atomic.Uint64, near int64) {
	w := b.Swap(0)
	n := int(w & countMask)
	if n == 0 {
		return
	}
	epoch := fullEpoch(w, near)
	if a.old == nil {
		a.old = make(map[int64]*oldSlots)
	}
	o := a.old[epoch]
	if o == nil {
		o = &oldSlots{}
		a.old[epoch] = o
	}
	o.n += n
}

// remove gives back a slot taken in epoch.
func (a *slotAges) remove(epoch int64) {
	if !a.tryRemove(epoch) {
		a.removeSlow(epoch)
	}
}

// tryRemove is remove's common case, small enough to be inlined: one load
// and one compare-and-swap on the epoch's bucket. It reports whether it
// gave the slot back.
func (a *slotAges) tryRemove(epoch int64) bool {
	b := &a.ring[uint64(epoch)%ageRing]
	w := b.Load()
	return w&^countMask == ageTag(epoch) && w&countMask != 0 && b.CompareAndSwap(w, w-1)
}

func (a *slotAges) removeSlow(epoch int64) {
	if a.removeFromRing(epoch) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	// Folding happens under the lock: if the bucket still counts the second,
	// the slot is there; if not, it was moved to old.
	if a.removeFromRing(epoch) {
		return
	}
	if o := a.old[epoch]; o != nil {
		if o.n--; o.n <= 0 {
			delete(a.old, epoch)
		}
	}
}

func (a *slotAges) removeFromRing(epoch int64) bool {
	b, tag := a.bucket(epoch), ageTag(epoch)
	for {
		w := b.Load()
		if w&^countMask != tag || w&countMask == 0 {
			return false
		}
		if b.CompareAndSwap(w, w-1) {
			return true
		}
	}
}

// overdueSlots are slots of one epoch held for longer than the alert.
type overdueSlots struct {
	epoch int64
	n     int
}

// check looks at the slots held at now: it returns the epoch of the oldest
// (ok false when none is held), and the slots held for at least alert that
// were not reported before, marking them reported.
func (a *slotAges) check(now int64, alert time.Duration) (oldest int64, ok bool, overdue []overdueSlots) {
	a.lastCheck.Store(now)
	due := now - int64(alert/time.Second) // a slot of an epoch before due is held for alert or more
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range a.ring {
		b := &a.ring[i]
		w := b.Load()
		if w&countMask == 0 {
			continue
		}
		epoch := fullEpoch(w, now)
		if epoch < due {
			a.fold(b, now) // counted with the old below
			continue
		}
		if !ok || epoch < oldest {
			oldest, ok = epoch, true
		}
	}
	for epoch, o := range a.old {
		if !ok || epoch < oldest {
			oldest, ok = epoch, true
		}
		if epoch < due && !o.reported {
			o.reported = true
			overdue = append(overdue, overdueSlots{epoch, o.n})
		}
	}
	return oldest, ok, overdue
}

// fullEpoch returns the epoch of a ring word, restoring the high bits that
// its tag does not keep from near, an epoch within 68 years of it.
func fullEpoch(w uint64, near int64) int64 {
	epoch := near&^(1<<32-1) | int64(w>>countBits)
	switch {
	case epoch > near+1<<31:
		epoch -= 1 << 32
	case epoch < near-1<<31:
		epoch += 1 << 32
	}
	return epoch
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
	epoch, ok, overdue := s.ages.check(slotEpoch(now), t.slotAgeAlert())
	for _, o := range overdue { // outside the lock: an observer may call Stats
		held := now.Sub(time.Unix(o.epoch, 0)).Truncate(time.Second)
		for range o.n {
			t.emit(observe.Event{Kind: observe.EventSlotHeld, Scope: s.scope.Name, Wait: held})
		}
	}
	if !ok {
		return 0
	}
	return now.Sub(time.Unix(epoch, 0))
}

// checkSlotsSometimes is checkSlots for a scope found full: at most once a
// second per scope.
func (t *Transport) checkSlotsSometimes(s *bucket, now time.Time) {
	if e := slotEpoch(now); s.ages.lastCheck.Load() != e {
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
