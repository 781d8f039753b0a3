package pacer

import (
	"fmt"
	"math"
	"time"

	"github.com/pacer-go/pacer/internal/pace"
	"github.com/pacer-go/pacer/internal/queue"
	"github.com/pacer-go/pacer/internal/slots"
	"github.com/pacer-go/pacer/observe"
)

// acquireSlot takes one of the scope's concurrency slots for workload w, if
// one is free to w, and counts it as taken in the given epoch (internal/slots).
//
// A workload's reserved slots are its own: while it holds fewer, it takes
// any free slot. Beyond them it borrows: it takes a free slot only if that
// leaves free the unused reserved slots of every other workload that has a
// call waiting on the scope, and only within its Max. So a reserve is lent
// while its owner is idle, and a lent slot comes back to the owner when the
// borrower's call ends: the owner's waiters are first in line (waitqueue.go).
//
// Without reserves or caps a slot is a compare-and-swap; with them, the
// decision reads the workloads' counts and the queue, under the lock.
// Either way a slot is given back without the lock (releaseSlot), so a
// decision may see a count a moment old and refuse: the refused call then
// queues and tries again, and the release, which looks for a queue after it
// counts, wakes it.
//
// held is how many slots were taken, the new one not counted, when it was
// taken; -1 when none was (and 0 on a scope without a cap).
func (s *bucket) acquireSlot(w int, epoch int64) (held int32) {
	c := s.scope
	if c.Concurrency == 0 {
		return 0
	}
	// Nothing cut, the common case, is the whole cap without slots' call:
	// its share is then 1 either way.
	limit, share := c.Concurrency, 1.0
	if s.climb() != nil {
		limit, share = s.slots()
	}
	sh := c.shares.Load()
	if !sh.sharesSlots {
		for {
			n := s.inFlight.Load()
			if n >= int32(limit) {
				return -1
			}
			if s.inFlight.CompareAndSwap(n, n+1) {
				s.inFlightBy[w].Add(1)
				if !s.ages.TryAdd(epoch) {
					s.ages.Add(epoch)
				}
				return n
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	mine := int(s.inFlightBy[w].Load())
	if sh.maxSlots[w] > 0 && mine >= pace.Slots(sh.maxSlots[w], share) {
		return -1
	}
	n := int(s.inFlight.Load())
	if n >= limit {
		return -1
	}
	if s.reserveKeeps(sh, w, n, limit, share) {
		return -1
	}
	s.inFlight.Add(1)
	s.inFlightBy[w].Add(1)
	s.ages.Add(epoch)
	return int32(n)
}

// reserveKeeps reports whether workload w, borrowing beyond its own
// reserve, must leave the free slots to the unused reserves of the other
// workloads waiting on s, n slots of limit being taken. s.mu must be held.
func (s *bucket) reserveKeeps(sh *workloadShares, w, n, limit int, share float64) bool {
	if int(s.inFlightBy[w].Load()) < scaledReserve(sh.reservedSlots[w], share) {
		return false // its own reserved slots: not borrowing
	}
	heldBack := 0
	for v := range s.inFlightBy {
		if v != w && s.queue.Waiting(v) {
			heldBack += max(0, scaledReserve(sh.reservedSlots[v], share)-int(s.inFlightBy[v].Load()))
		}
	}
	return heldBack > 0 && n+heldBack >= limit
}

// slotRefusal says why acquireSlot refused workload w a slot, as a second
// look sees it: observe.ReasonReserve when a slot is free but other workloads'
// reserves keep it, else observe.ReasonConcurrency (every slot w may use is taken,
// or one was given back since). It is off the hot path: only a refused
// call asks.
func (s *bucket) slotRefusal(w int) observe.Reason {
	sh := s.scope.shares.Load()
	if !sh.sharesSlots {
		return observe.ReasonConcurrency
	}
	limit, share := s.scope.Concurrency, 1.0
	if s.climb() != nil {
		limit, share = s.slots()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := int(s.inFlight.Load())
	if n >= limit || sh.maxSlots[w] > 0 && int(s.inFlightBy[w].Load()) >= pace.Slots(sh.maxSlots[w], share) {
		return observe.ReasonConcurrency
	}
	if s.reserveKeeps(sh, w, n, limit, share) {
		return observe.ReasonReserve
	}
	return observe.ReasonConcurrency
}

// reservedSlots returns the slots that a reserve holds of a scope of n:
// reserve × n rounded down, so that reserves adding up to at most 1 never
// hold more slots than there are. A reserve worth less than one slot holds
// none (its workload is still served first).
func reservedSlots(reserve float64, n int) int {
	return int(math.Floor(reserve*float64(n) + 1e-9))
}

// scaledReserve returns the reserved slots left of r when the scope may use
// only share of its slots (a 429 lowered its cap): they shrink alike,
// rounded down.
func scaledReserve(r int, share float64) int {
	if share >= 1 {
		return r
	}
	return int(float64(r) * share)
}

// slots returns the cap on calls in flight now, and its share of the
// configured cap. A scope that limits only concurrency takes the cut
// factor that 429s lower and time raises (recovery.go) as the share of
// its slots it may use: the provider's real cap may be below the
// configured one. A scope with a rate takes it on the rate alone.
func (s *bucket) slots() (limit int, share float64) {
	c := s.scope
	if rate, _ := c.configuredPace(); rate > 0 {
		return c.Concurrency, 1
	}
	share = s.rateFactor()
	return pace.Slots(c.Concurrency, share), share
}

// slotsRiseIn returns how long from now until the cap of a scope that a
// cut lowered (slots) lets workload w take one slot more: the cap, or w's
// Max share of it, climbs back by time, and nothing else would wake a call
// that waits for it while the calls in flight hold their slots. 0 when the
// cap is not lowered: only a released slot admits a call then.
func (s *bucket) slotsRiseIn(w int, now time.Time) time.Duration {
	c := s.scope
	if s.climb() == nil || c.Concurrency == 0 {
		return 0
	}
	if rate, _ := c.configuredPace(); rate > 0 {
		return 0 // a scope with a rate keeps its whole cap (slots)
	}
	n := now.UnixNano()
	model := s.modelAt(n)
	share := model.Factor(n)
	if share >= 1 {
		return 0
	}
	next := nextSlotShare(c.Concurrency, share)
	if m := c.shares.Load().maxSlots[w]; m > 0 {
		next = min(next, nextSlotShare(m, share))
	}
	// A millisecond at least, and a hair past the share, so that the wait
	// does not end a rounding short of the slot.
	return max(time.Duration(model.Climb.Reaches(next+1e-9)-n), time.Millisecond)
}

// nextSlotShare returns the share of n slots at which scaled gives one slot
// more than at share.
func nextSlotShare(n int, share float64) float64 {
	return float64(pace.Slots(n, share)+1) / float64(n)
}

// releaseSlot gives back a slot taken by acquireSlot in the given epoch,
// and wakes the call at the head of the queue so that it can try for it —
// unless that call is self, the one giving the slot back after a failed
// attempt, which would only wake itself and spin.
func (s *bucket) releaseSlot(w int, epoch int64, self *queue.Waiter) {
	if s.scope.Concurrency == 0 {
		return
	}
	if !s.ages.TryRemove(epoch) {
		s.ages.Remove(epoch)
	}
	s.inFlightBy[w].Add(-1)
	s.inFlight.Add(-1)
	// Counted first, looked for second: a call that queued after failing
	// to get this slot is seen here, and one that queues later finds it.
	if s.waiting.Load() == 0 {
		return
	}
	if head := s.headOf(); head != self {
		head.Signal()
	}
}

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

// cutSlots lowers the cap on calls in flight of a scope that limits only
// concurrency, after the provider refused a call that took its slot while
// held others were taken (charge.heldWith), and reports whether it did.
//
// Server property: a concurrency cap refuses a call that arrives while it
// holds its cap, and what it held then were calls this scope had in flight
// when the refused one was sent, so for this scope its cap is at most
// held. The cap drops there at once — a factor of the configured cap took
// one refusal per step to reach a server's half, and a retry that took the
// freed slot drew the next one — then climbs back by time, flat at held
// first (the cubic curve of pace.Curve, over pace.CheapRecovery: the slot
// above 4 of 8 is tried again about 20 s on). A refusal of a call sent with
// more in flight than the cap allows now says nothing new, so the refusals
// of one burst cut once, to the least of them.
func (s *bucket) cutSlots(held int32, now time.Time) bool {
	n := s.scope.Concurrency
	if n == 0 || held < 0 {
		return false
	}
	// Calls reach the server out of the order they took their slots in: a
	// call sent with one other in flight may arrive after seven, still in
	// flight now. What the scope holds now, the refused call not counted,
	// is the other bound; the larger of the two is the safe one.
	held = max(held, s.inFlight.Load()-1)
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.cuts.SlotsRefused(now, int(held), n, s.climb(), s.admitted.Load())
	if r == nil {
		return false
	}
	s.setClimb(r)
	return true
}

// limitsOnlyConcurrency reports whether the scope caps calls in flight and
// has no rate, configured or published: its refusals then lower the cap
// (cutSlots), there being no pace to cut.
func (s *bucket) limitsOnlyConcurrency(now time.Time) bool {
	if s.scope.Concurrency == 0 {
		return false
	}
	rate, _ := s.basePace(now.UnixNano())
	return rate == 0
}
