package pacer

// A waiter is a call waiting on a scope.
type waiter struct {
	priority float64 // the workload's Reserve: larger is served first
	seq      uint64  // arrival order, kept when the call moves between scopes
	cost     float64 // what the call takes from the scope it waits on
	wake     chan struct{}
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

func (w *waiter) before(o *waiter) bool {
	if w.priority != o.priority {
		return w.priority > o.priority
	}
	return w.seq < o.seq
}

// A waitQueue holds a scope's waiters in the order they will be served.
// Only its head tries for admission; the others sleep until they reach it,
// so a scope has at most one timer running however many calls wait.
type waitQueue []*waiter

func (q waitQueue) head() *waiter {
	if len(q) == 0 {
		return nil
	}
	return q[0]
}

// insert puts w in its place and returns the cost of the waiters ahead of it.
func (q *waitQueue) insert(w *waiter) (ahead float64) {
	i := len(*q)
	for i > 0 && w.before((*q)[i-1]) {
		i--
	}
	*q = append(*q, nil)
	copy((*q)[i+1:], (*q)[i:])
	(*q)[i] = w
	for _, o := range (*q)[:i] {
		ahead += o.cost
	}
	return ahead
}

// remove takes w out of the queue and reports whether it was the head.
func (q *waitQueue) remove(w *waiter) (wasHead bool) {
	for i, o := range *q {
		if o == w {
			copy((*q)[i:], (*q)[i+1:])
			(*q)[len(*q)-1] = nil
			*q = (*q)[:len(*q)-1]
			return i == 0
		}
	}
	return false
}

// enqueue adds w to the scope's queue and returns the cost ahead of it.
func (s *scopeState) enqueue(w *waiter) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ahead := s.queue.insert(w)
	s.waiting.Store(int32(len(s.queue)))
	return ahead
}

// leave takes w out of the scope's queue; if w was at its head, the next
// waiter is woken to take its turn.
func (s *scopeState) leave(w *waiter) {
	s.mu.Lock()
	var next *waiter
	if s.queue.remove(w) {
		next = s.queue.head()
	}
	s.waiting.Store(int32(len(s.queue)))
	s.mu.Unlock()
	next.signal()
}

func (s *scopeState) isHead(w *waiter) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queue.head() == w
}

// servesBefore reports whether a waiter of the scope comes before a new call
// of the given priority, which must then queue behind it.
func (s *scopeState) servesBefore(priority float64) bool {
	if s.waiting.Load() == 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.queue.head()
	return h != nil && h.priority >= priority
}
