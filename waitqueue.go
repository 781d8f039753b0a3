package pacer

import (
	"sync/atomic"
	"time"
)

// A waiter is a call waiting on a scope.
type waiter struct {
	workload int     // the workload's index
	priority float64 // the workload's Reserve: larger is served first
	seq      uint64  // arrival order, kept when the call moves between scopes
	rank     int     // the call's priority within its workload (Call.Priority)
	tag      vtime   // its virtual finish among its workload's tenants (tenant.go); 0 without tenants
	cost     float64 // what the call takes from the scope it waits on
	wake     chan struct{}
	shed     atomic.Bool // its workload's bounded queue dropped it (boundedqueue.go)
	shedAt   int         // its index in that queue's heap; -1 when not in it
	// For Stats: when the call began to wait, and what holds it back: what
	// it met when it last tried, or what held the queue it joined. reason
	// changes under the lock of the scope it waits on (setReason).
	since  time.Time
	reason ThrottleReason

	// The waiter's node in its workload's line (see line), while queued.
	queued      bool
	left, right *waiter
	heap        uint64  // the treap's priority, a hash of seq
	sum         float64 // the cost of the subtree
}

// signal wakes the waiter if it sleeps; a signal sent while it is awake is
// kept for its next sleep, so none is lost. A nil waiter ignores it.
func (w *waiter) signal() {
	if w == nil {
		return
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// A waitQueue holds a scope's waiters in the order they will be served.
// Only its head tries for admission; the others sleep until they reach it,
// so a scope has at most one timer running however many calls wait.
//
// Each workload has a line of its own, in arrival order. The head is the
// first of one of the lines: that of a workload using fewer slots than it
// reserved, if one waits (its reserved slots come back to it before anyone
// borrows them again); else that of the largest Reserve, and among equal
// reserves the earliest arrival. Queueing, leaving and finding the head
// cost O(log n) in the calls waiting and O(workloads), so a scope can hold
// a hundred thousand waiters without its lock becoming the bottleneck.
type waitQueue struct {
	lines []line // by workload index; nil until a call first waits
	n     int
}

// A line is one workload's waiters in the order they are served (precedes:
// priority within the workload, then the tenant's fair-queuing tag, then
// seq): a treap whose nodes carry their subtree's cost, so
// that the cost queued ahead of a waiter is a walk from the root. A call
// that moves between scopes keeps its seq and takes its place by it, not
// at the back.
type line struct {
	root, first *waiter
	n           int
	ranked      int // waiters of a rank other than 0, or with a tenant's tag
}

// Priorities within a workload are clamped to ±maxRank.
const maxRank = 127

// precedes reports whether w is served before o in their line: larger rank
// first, then the earlier fair-queuing tag, then the earlier arrival.
func (w *waiter) precedes(o *waiter) bool {
	if w.rank != o.rank {
		return w.rank > o.rank
	}
	if w.tag != o.tag {
		return w.tag.before(o.tag)
	}
	return w.seq < o.seq
}

func (w *waiter) ordered() bool { return w.rank != 0 || !w.tag.isZero() }

func (w *waiter) subtreeCost() float64 {
	if w == nil {
		return 0
	}
	return w.sum
}

func (w *waiter) update() { w.sum = w.cost + w.left.subtreeCost() + w.right.subtreeCost() }

// split cuts t into the waiters before w and the rest.
func split(t, w *waiter) (before, rest *waiter) {
	if t == nil {
		return nil, nil
	}
	if t.precedes(w) {
		t.right, rest = split(t.right, w)
		t.update()
		return t, rest
	}
	before, t.left = split(t.left, w)
	t.update()
	return before, t
}

// merge joins a and b, every waiter of a being before every waiter of b.
func merge(a, b *waiter) *waiter {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.heap > b.heap:
		a.right = merge(a.right, b)
		a.update()
		return a
	default:
		b.left = merge(a, b.left)
		b.update()
		return b
	}
}

// treapHeap hashes a seq (splitmix64) into a treap priority: seqs come in
// order, and a treap keyed by them stays balanced only if its priorities
// look random.
func treapHeap(seq uint64) uint64 {
	z := seq + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// insert puts w in its place and returns the cost of the line ahead of it.
func (l *line) insert(w *waiter) (ahead float64) {
	w.left, w.right, w.heap, w.sum = nil, nil, treapHeap(w.seq), w.cost
	l.root, ahead = insertAt(l.root, w)
	if l.first == nil || w.precedes(l.first) {
		l.first = w
	}
	l.n++
	if w.ordered() {
		l.ranked++
	}
	return ahead
}

// insertAt inserts w in the treap t in one descent: down to where w's heap
// puts it, where it takes the subtree below, split around it.
func insertAt(t, w *waiter) (root *waiter, ahead float64) {
	if t == nil {
		return w, 0
	}
	if w.heap > t.heap {
		w.left, w.right = split(t, w)
		w.update()
		return w, w.left.subtreeCost()
	}
	t.sum += w.cost // costs are whole units: sums are exact
	if w.precedes(t) {
		t.left, ahead = insertAt(t.left, w)
		return t, ahead
	}
	t.right, ahead = insertAt(t.right, w)
	return t, ahead + t.left.subtreeCost() + t.cost
}

func (l *line) remove(w *waiter) {
	l.root = removeFrom(l.root, w)
	w.left, w.right = nil, nil
	l.n--
	if w.ordered() {
		l.ranked--
	}
	if l.first == w {
		l.first = l.root
		for l.first != nil && l.first.left != nil {
			l.first = l.first.left
		}
	}
}

// removeFrom takes w out of the treap t, which holds it.
func removeFrom(t, w *waiter) *waiter {
	if t == w {
		return merge(t.left, t.right)
	}
	t.sum -= w.cost
	if w.precedes(t) {
		t.left = removeFrom(t.left, w)
	} else {
		t.right = removeFrom(t.right, w)
	}
	return t
}

// costBefore returns the cost of the line's waiters placed before w.
func (l *line) costBefore(w *waiter) (c float64) {
	for t := l.root; t != nil; {
		if t.precedes(w) {
			c += t.left.subtreeCost() + t.cost
			t = t.right
		} else {
			t = t.left
		}
	}
	return c
}

// owns reports whether workload v holds fewer of the scope's slots than it
// reserves: its waiters are then first in line for a slot.
func (s *bucket) owns(v int, share float64) bool {
	sh := s.scope.shares.Load()
	if !sh.sharesSlots || sh.reservedSlots[v] == 0 {
		return false
	}
	return int(s.inFlightBy[v].Load()) < scaledReserve(sh.reservedSlots[v], share)
}

// ranksBefore reports whether workload a's calls are served before workload
// b's: owners of unused reserved slots first, then by Reserve. Equal ranks
// are served in arrival order.
func (s *bucket) ranksBefore(a int, pa float64, b int, pb float64, share float64) (before, equal bool) {
	oa, ob := s.owns(a, share), s.owns(b, share)
	if oa != ob {
		return oa, false
	}
	return pa > pb, pa == pb
}

// head returns the waiter to be served next, or nil. s.mu must be held.
func (s *bucket) head() *waiter {
	q := &s.queue
	if q.n == 0 {
		return nil
	}
	_, share := s.slots()
	var best *waiter
	for v := range q.lines {
		w := q.lines[v].first
		if w == nil {
			continue
		}
		if best == nil {
			best = w
			continue
		}
		if before, equal := s.ranksBefore(v, w.priority, best.workload, best.priority, share); before || equal && w.seq < best.seq {
			best = w
		}
	}
	return best
}

// enqueue adds w to the scope's queue and returns the cost queued ahead of
// it, as things stand: a lower bound on what must be paid before w.
func (s *bucket) enqueue(w *waiter) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := &s.queue
	if q.lines == nil {
		q.lines = make([]line, len(s.inFlightBy))
	}
	ahead := q.lines[w.workload].insert(w)
	w.queued = true
	q.n++
	s.waiting.Store(int32(q.n))
	_, share := s.slots()
	for v := range q.lines {
		l := &q.lines[v]
		if v == w.workload || l.first == nil {
			continue
		}
		switch before, equal := s.ranksBefore(v, l.first.priority, w.workload, w.priority, share); {
		case before:
			ahead += l.root.subtreeCost()
		case equal && l.ranked == 0:
			// Lines of equal rank are served in arrival order. A line with
			// ranked waiters is left out: which of them come first is not
			// known here, and what is returned must stay a lower bound.
			ahead += l.costBefore(&waiter{seq: w.seq})
		}
	}
	return ahead
}

// leave takes w out of the scope's queue; if w was at its head, the next
// waiter is woken to take its turn.
func (s *bucket) leave(w *waiter) {
	s.mu.Lock()
	var next *waiter
	if w.queued {
		wasHead := s.head() == w
		s.queue.lines[w.workload].remove(w)
		w.queued = false
		s.queue.n--
		if wasHead {
			next = s.head()
		}
	}
	s.waiting.Store(int32(s.queue.n))
	s.mu.Unlock()
	next.signal()
}

// headOf returns the scope's head, which is w or another waiter that w
// should wake, having been woken itself: the head can change with no call
// leaving, when a workload takes or gives back its reserved slots.
func (s *bucket) headOf() *waiter {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.head()
}

func (s *bucket) isHead(w *waiter) bool { return s.headOf() == w }

// servesBefore reports whether a waiter of the scope comes before a new call
// of workload w, which must then queue behind it.
func (s *bucket) servesBefore(w int, priority float64) bool {
	if s.waiting.Load() == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.head()
	if h == nil {
		return false
	}
	_, share := s.slots()
	before, equal := s.ranksBefore(h.workload, h.priority, w, priority, share)
	return before || equal
}

// setReason records what holds w back, w being in s's queue.
func (s *bucket) setReason(w *waiter, r ThrottleReason) {
	s.mu.Lock()
	w.reason = r
	s.mu.Unlock()
}

// headReason returns what held back the first call waiting on s when it
// last tried; "" when none waits.
func (s *bucket) headReason() ThrottleReason {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.head(); h != nil {
		return h.reason
	}
	return ""
}

// waits describes the calls waiting on s, for Stats: how many, and what
// holds them back, which is what holds its head, since only the head
// tries; and when the call that has waited longest began, and its
// workload's index. It returns n == 0 when none waits.
func (s *bucket) waits() (n int, reason ThrottleReason, since time.Time, workload int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queue.n == 0 {
		return 0, "", time.Time{}, 0
	}
	var o *waiter
	for v := range s.queue.lines {
		l := &s.queue.lines[v]
		w := l.first // the earliest arrival of a line in arrival order
		if l.ranked > 0 {
			w = eldest(l.root)
		}
		if w != nil && (o == nil || w.since.Before(o.since)) {
			o = w
		}
	}
	return s.queue.n, s.head().reason, o.since, o.workload
}

// eldest returns the waiter of the treap t that began to wait first, or nil.
func eldest(t *waiter) *waiter {
	if t == nil {
		return nil
	}
	e := t
	for _, c := range [2]*waiter{eldest(t.left), eldest(t.right)} {
		if c != nil && c.since.Before(e.since) {
			e = c
		}
	}
	return e
}
