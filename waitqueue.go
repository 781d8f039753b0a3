package pacer

import (
	"fmt"
	"time"

	"github.com/pacer-go/pacer/internal/queue"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/store"
)

// A scope's waiting calls are an internal/queue.Queue, guarded by the
// scope's mu; a workload's bound on them (Workload.MaxWaiting) is a
// queue.Bounded, and its tenants' fair-queuing tags a queue.Fair. This file
// is where a bucket meets its queue: what the queue cannot know, whether a
// workload holds fewer slots than it reserves, goes in as a queue.Owns.

// Priorities within a workload are clamped to ±maxRank.
const maxRank = 127

// slotOwners answers the queue's Owns for a scope at a share of its slots.
type slotOwners struct {
	s     *bucket
	share float64
}

// owners returns the scope's slotOwners at its current share of its slots.
// Its owns method value is made where the queue is called, so that it
// stays on the stack (the queue keeps no Owns).
func (s *bucket) owners() slotOwners {
	_, share := s.slots()
	return slotOwners{s, share}
}

// owns reports whether workload v holds fewer of the scope's slots than it
// reserves: its waiters are then first in line for a slot.
func (o slotOwners) owns(v int) bool {
	sh := o.s.scope.shares.Load()
	if !sh.sharesSlots || sh.reservedSlots[v] == 0 {
		return false
	}
	return int(o.s.inFlightBy[v].Load()) < scaledReserve(sh.reservedSlots[v], o.share)
}

// head returns the waiter to be served next, or nil. s.mu must be held.
func (s *bucket) head() *queue.Waiter {
	if s.queue.Len() == 0 {
		return nil
	}
	return s.queue.Head(s.owners().owns)
}

// enqueue adds w to the scope's queue and returns the cost queued ahead of
// it, as things stand: a lower bound on what must be paid before w.
func (s *bucket) enqueue(w *queue.Waiter) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ahead := s.queue.Insert(w, len(s.inFlightBy), s.owners().owns)
	s.waiting.Store(int32(s.queue.Len()))
	return ahead
}

// leave takes w out of the scope's queue; if w was at its head, the next
// waiter is woken to take its turn.
func (s *bucket) leave(w *queue.Waiter) {
	s.mu.Lock()
	next := s.queue.Remove(w, s.owners().owns)
	s.waiting.Store(int32(s.queue.Len()))
	s.mu.Unlock()
	next.Signal()
}

// headOf returns the scope's head, which is w or another waiter that w
// should wake, having been woken itself: the head can change with no call
// leaving, when a workload takes or gives back its reserved slots.
func (s *bucket) headOf() *queue.Waiter {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.head()
}

func (s *bucket) isHead(w *queue.Waiter) bool { return s.headOf() == w }

// servesBefore reports whether a waiter of the scope comes before a new call
// of workload w, which must then queue behind it.
func (s *bucket) servesBefore(w int, priority float64) bool {
	if s.waiting.Load() == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queue.ServesBefore(w, priority, s.owners().owns)
}

// paceRose wakes the scope's head to try again: it sleeps for the wait the
// store gave it at the pace of its last try, and a pace that rose since
// (a fixed window seen refilled, after the count at its end had set a
// crawl) would keep it asleep on the old wait, the scope idle with quota
// to spend. Called off the path of a call admitted at once, on a report
// that raised the pace.
func (s *bucket) paceRose() {
	if s.waiting.Load() == 0 {
		return
	}
	s.mu.Lock()
	h := s.head()
	s.mu.Unlock()
	h.Signal()
}

// setReason records what holds w back, w being in s's queue.
func (s *bucket) setReason(w *queue.Waiter, r observe.Reason) {
	s.mu.Lock()
	w.Reason = string(r)
	s.mu.Unlock()
}

// headReason returns what held back the first call waiting on s when it
// last tried; "" when none waits.
func (s *bucket) headReason() observe.Reason {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.head(); h != nil {
		return observe.Reason(h.Reason)
	}
	return ""
}

// waits describes the calls waiting on s, for Stats: how many, and what
// holds them back, which is what holds its head, since only the head
// tries; and when the call that has waited longest began, and its
// workload's index. It returns n == 0 when none waits.
func (s *bucket) waits() (n int, reason observe.Reason, since time.Time, workload int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queue.Len() == 0 {
		return 0, "", time.Time{}, 0
	}
	o := s.queue.Eldest()
	return s.queue.Len(), observe.Reason(s.head().Reason), o.Since, o.Workload
}

// queueFull returns the error of a call its workload's bounded queue
// refused or shed (queue.ErrFull, queue.ErrShed), naming the queue.
func (b blocked) queueFull(w *workloadState, cause error) error {
	e := &ThrottledError{Scope: b.bucket.scope.Name, Reason: observe.ReasonQueueFull,
		Err: fmt.Errorf("workload %q's queue holds at most %d waiting calls (Workload.MaxWaiting): %w", w.name, w.waiting.Bound(), cause)}
	if b.wait != store.Never {
		e.RetryAfter = b.wait
	}
	return e
}
