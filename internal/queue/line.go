package queue

// Owns reports whether a workload, by index, holds fewer of the scope's
// slots than it reserves: its waiters are then first in line for a slot.
// A nil Owns says no workload does.
type Owns func(workload int) bool

// A Queue holds a scope's waiters in the order they will be served. Only
// its head should try for admission; the others sleep until they reach it,
// so a scope needs at most one timer running however many calls wait.
//
// Each workload has a line of its own (precedes: larger Rank first, then
// the earlier Tag, then the earlier Seq). The head is the first of one of
// the lines: that of a workload that Owns its unused reserved slots, if
// one waits; else that of the largest Priority, and among equal priorities
// the earliest arrival.
//
// A Queue is not safe for concurrent use: the caller's lock guards it.
type Queue struct {
	lines []line // by workload index; nil until a call first waits
	n     int
}

// A line is one workload's waiters in the order they are served: a treap
// whose nodes carry their subtree's cost, so that the cost queued ahead of
// a waiter is a walk from the root. A call that moves between scopes keeps
// its Seq and takes its place by it, not at the back.
type line struct {
	root, first *Waiter
	n           int
	ranked      int // waiters of a rank other than 0, or with a tenant's tag
}

// Len returns the number of waiters queued.
func (q *Queue) Len() int { return q.n }

// Cost returns the cost of the waiters queued, all lines together.
func (q *Queue) Cost() float64 {
	var c float64
	for v := range q.lines {
		c += q.lines[v].root.subtreeCost()
	}
	return c
}

// Waiting reports whether a waiter of the workload is queued.
func (q *Queue) Waiting(workload int) bool {
	return workload < len(q.lines) && q.lines[workload].n > 0
}

// ranksBefore reports whether workload a's calls are served before workload
// b's: owners of unused reserved slots first, then by Priority. Equal ranks
// are served in arrival order.
func ranksBefore(a int, pa float64, b int, pb float64, owns Owns) (before, equal bool) {
	if owns != nil {
		if oa, ob := owns(a), owns(b); oa != ob {
			return oa, false
		}
	}
	return pa > pb, pa == pb
}

// Head returns the waiter to be served next, or nil.
func (q *Queue) Head(owns Owns) *Waiter {
	if q.n == 0 {
		return nil
	}
	var best *Waiter
	for v := range q.lines {
		w := q.lines[v].first
		if w == nil {
			continue
		}
		if best == nil {
			best = w
			continue
		}
		if before, equal := ranksBefore(v, w.Priority, best.Workload, best.Priority, owns); before || equal && w.Seq < best.Seq {
			best = w
		}
	}
	return best
}

// ServesBefore reports whether the head comes before a new call of the
// workload at the priority, which must then queue behind it.
func (q *Queue) ServesBefore(workload int, priority float64, owns Owns) bool {
	h := q.Head(owns)
	if h == nil {
		return false
	}
	before, equal := ranksBefore(h.Workload, h.Priority, workload, priority, owns)
	return before || equal
}

// Insert queues w, of a workload index below workloads, and returns the
// cost queued ahead of it, as things stand: a lower bound on what must be
// paid before w. w must be in no Queue.
func (q *Queue) Insert(w *Waiter, workloads int, owns Owns) (ahead float64) {
	if q.lines == nil {
		q.lines = make([]line, workloads)
	}
	ahead = q.lines[w.Workload].insert(w)
	w.queued = true
	q.n++
	for v := range q.lines {
		l := &q.lines[v]
		if v == w.Workload || l.first == nil {
			continue
		}
		switch before, equal := ranksBefore(v, l.first.Priority, w.Workload, w.Priority, owns); {
		case before:
			ahead += l.root.subtreeCost()
		case equal && l.ranked == 0:
			// Lines of equal rank are served in arrival order. A line with
			// ranked waiters is left out: which of them come first is not
			// known here, and what is returned must stay a lower bound.
			ahead += l.costBefore(&Waiter{Seq: w.Seq})
		}
	}
	return ahead
}

// Remove takes w out of the queue, if it is in it, and returns the waiter
// to wake to take its turn: the new head if w was the head, else nil.
func (q *Queue) Remove(w *Waiter, owns Owns) (next *Waiter) {
	if !w.queued {
		return nil
	}
	wasHead := q.Head(owns) == w
	q.lines[w.Workload].remove(w)
	w.queued = false
	q.n--
	if wasHead {
		return q.Head(owns)
	}
	return nil
}

// Eldest returns the queued waiter that began to wait first (by Since),
// or nil.
func (q *Queue) Eldest() *Waiter {
	var o *Waiter
	for v := range q.lines {
		l := &q.lines[v]
		w := l.first // the earliest arrival of a line in arrival order
		if l.ranked > 0 {
			w = eldest(l.root)
		}
		if w != nil && (o == nil || w.Since.Before(o.Since)) {
			o = w
		}
	}
	return o
}

// eldest returns the waiter of the treap t that began to wait first, or nil.
func eldest(t *Waiter) *Waiter {
	if t == nil {
		return nil
	}
	e := t
	for _, c := range [2]*Waiter{eldest(t.left), eldest(t.right)} {
		if c != nil && c.Since.Before(e.Since) {
			e = c
		}
	}
	return e
}

// precedes reports whether w is served before o in their line: larger rank
// first, then the earlier fair-queuing tag, then the earlier arrival.
func (w *Waiter) precedes(o *Waiter) bool {
	if w.Rank != o.Rank {
		return w.Rank > o.Rank
	}
	if w.Tag != o.Tag {
		return w.Tag.before(o.Tag)
	}
	return w.Seq < o.Seq
}

func (w *Waiter) ordered() bool { return w.Rank != 0 || !w.Tag.isZero() }

func (w *Waiter) subtreeCost() float64 {
	if w == nil {
		return 0
	}
	return w.sum
}

func (w *Waiter) update() { w.sum = w.Cost + w.left.subtreeCost() + w.right.subtreeCost() }

// split cuts t into the waiters before w and the rest.
func split(t, w *Waiter) (before, rest *Waiter) {
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
func merge(a, b *Waiter) *Waiter {
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
func (l *line) insert(w *Waiter) (ahead float64) {
	w.left, w.right, w.heap, w.sum = nil, nil, treapHeap(w.Seq), w.Cost
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
func insertAt(t, w *Waiter) (root *Waiter, ahead float64) {
	if t == nil {
		return w, 0
	}
	if w.heap > t.heap {
		w.left, w.right = split(t, w)
		w.update()
		return w, w.left.subtreeCost()
	}
	t.sum += w.Cost // costs are whole units: sums are exact
	if w.precedes(t) {
		t.left, ahead = insertAt(t.left, w)
		return t, ahead
	}
	t.right, ahead = insertAt(t.right, w)
	return t, ahead + t.left.subtreeCost() + t.Cost
}

func (l *line) remove(w *Waiter) {
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
func removeFrom(t, w *Waiter) *Waiter {
	if t == w {
		return merge(t.left, t.right)
	}
	t.sum -= w.Cost
	if w.precedes(t) {
		t.left = removeFrom(t.left, w)
	} else {
		t.right = removeFrom(t.right, w)
	}
	return t
}

// costBefore returns the cost of the line's waiters placed before w.
func (l *line) costBefore(w *Waiter) (c float64) {
	for t := l.root; t != nil; {
		if t.precedes(w) {
			c += t.left.subtreeCost() + t.Cost
			t = t.right
		} else {
			t = t.left
		}
	}
	return c
}
