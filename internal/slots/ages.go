package slots

import (
	"sync"
	"sync/atomic"
	"time"
)

// Epoch is the epoch of a slot taken at now: its Unix second.
func Epoch(now time.Time) int64 { return now.Unix() }

// Ages counts slots in flight by the epoch they were taken in.
//
// The last ageRing seconds are counted in a ring of atomic words, each the
// low 32 bits of its second above a count, so taking and giving back a slot
// each cost one compare-and-swap. A second whose word is needed again
// while it still counts slots (slots held longer than the ring is long) is
// moved under the lock to old, where its slots are given back under the
// lock too: a slow path for slow calls.
type Ages struct {
	ring [ageRing]atomic.Uint64

	mu        sync.Mutex
	old       map[int64]*oldSlots // by epoch
	lastCheck atomic.Int64        // the epoch of the last Check
}

type oldSlots struct {
	n        int
	reported bool // Check returned these slots as overdue
}

const (
	ageRing   = 8
	countBits = 32
	countMask = 1<<countBits - 1
)

func ageTag(epoch int64) uint64 { return uint64(uint32(epoch)) << countBits }

func (a *Ages) word(epoch int64) *atomic.Uint64 { return &a.ring[uint64(epoch)%ageRing] }

// TryAdd is Add's common case, small enough to be inlined: the epoch's
// word already tagged with it, one load and one compare-and-swap. It
// reports whether it counted the slot; when it did not, call Add.
func (a *Ages) TryAdd(epoch int64) bool {
	b := &a.ring[uint64(epoch)%ageRing]
	w := b.Load()
	return w&^countMask == ageTag(epoch) && b.CompareAndSwap(w, w+1)
}

// Add counts a slot taken in epoch.
func (a *Ages) Add(epoch int64) {
	b, tag := a.word(epoch), ageTag(epoch)
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

// fold moves the slots counted in word b to old. near is an epoch near
// that of the word, to restore the bits the tag does not keep. a.mu must
// be held: a word that counts slots changes its second only under it.
func (a *Ages) fold(b *atomic.Uint64, near int64) {
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

// TryRemove is Remove's common case, small enough to be inlined: one load
// and one compare-and-swap on the epoch's word. It reports whether it gave
// the slot back; when it did not, call Remove.
func (a *Ages) TryRemove(epoch int64) bool {
	b := &a.ring[uint64(epoch)%ageRing]
	w := b.Load()
	return w&^countMask == ageTag(epoch) && w&countMask != 0 && b.CompareAndSwap(w, w-1)
}

// Remove gives back a slot taken in epoch. A slot never added is ignored.
func (a *Ages) Remove(epoch int64) {
	if a.removeFromRing(epoch) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	// Folding happens under the lock: if the word still counts the second,
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

func (a *Ages) removeFromRing(epoch int64) bool {
	b, tag := a.word(epoch), ageTag(epoch)
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

// Overdue are the slots of one epoch held for longer than Check's alert.
type Overdue struct {
	Epoch int64
	N     int
}

// Check looks at the slots held at the epoch now. It returns the epoch of
// the oldest (held false when none is held), and the slots held for at
// least alert, in whole seconds, that no Check returned before: each slot
// is overdue once. An epoch is assumed within 68 years of now.
func (a *Ages) Check(now int64, alert time.Duration) (oldest int64, held bool, overdue []Overdue) {
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
		if !held || epoch < oldest {
			oldest, held = epoch, true
		}
	}
	for epoch, o := range a.old {
		if !held || epoch < oldest {
			oldest, held = epoch, true
		}
		if epoch < due && !o.reported {
			o.reported = true
			overdue = append(overdue, Overdue{epoch, o.n})
		}
	}
	return oldest, held, overdue
}

// CheckedAt returns the epoch of the last Check, 0 before the first: a
// caller that checks at most once a second compares it with its own.
func (a *Ages) CheckedAt() int64 { return a.lastCheck.Load() }

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
