package pacer

import (
	"io"
	"sync/atomic"
)

// acquireSlot takes one of the scope's concurrency slots for workload w, if
// one is free to w: w stays within its Max, and leaves the slots that other
// workloads reserved and are not using.
//
// Without reserves or caps a slot is a compare-and-swap; with them, the
// decision reads every workload's count, under the lock. Either way a slot
// is given back without the lock (releaseSlot), so a decision may see a
// count a moment old and refuse: the refused call then queues and tries
// again, and the release, which looks for a queue after it counts, wakes it.
func (s *scopeState) acquireSlot(w int) bool {
	c := s.class
	if c.Concurrency == 0 {
		return true
	}
	limit, share := s.slots()
	if !c.sharesSlots {
		for {
			n := s.inFlight.Load()
			if n >= int32(limit) {
				return false
			}
			if s.inFlight.CompareAndSwap(n, n+1) {
				s.inFlightBy[w].Add(1)
				return true
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	mine := int(s.inFlightBy[w].Load())
	if c.maxSlots[w] > 0 && mine >= scaled(c.maxSlots[w], share) {
		return false
	}
	reservedByOthers := 0
	for v, r := range c.reservedSlots {
		r = int(float64(r) * share) // a lowered cap lowers the reserves alike
		if used := int(s.inFlightBy[v].Load()); v != w && r > used {
			reservedByOthers += r - used
		}
	}
	if int(s.inFlight.Load())+reservedByOthers >= limit {
		return false
	}
	s.inFlight.Add(1)
	s.inFlightBy[w].Add(1)
	return true
}

// slots returns the cap on calls in flight now, and its share of the
// configured cap. A scope that limits only concurrency takes the cut
// factor that 429s lower and time raises (recovery.go) as the share of
// its slots it may use: the provider's real cap may be below the
// configured one. A scope with a rate takes it on the rate alone.
func (s *scopeState) slots() (limit int, share float64) {
	c := s.class
	if c.rate > 0 {
		return c.Concurrency, 1
	}
	share = s.rateFactor()
	return scaled(c.Concurrency, share), share
}

// scaled returns share of n slots, rounded down, and at least one.
func scaled(n int, share float64) int {
	if share >= 1 {
		return n
	}
	return max(1, int(float64(n)*share))
}

// releaseSlot gives back a slot taken by acquireSlot, and wakes the call at
// the head of the queue so that it can try for it — unless that call is
// self, the one giving the slot back after a failed attempt, which would
// only wake itself and spin.
func (s *scopeState) releaseSlot(w int, self *waiter) {
	if s.class.Concurrency == 0 {
		return
	}
	s.inFlightBy[w].Add(-1)
	s.inFlight.Add(-1)
	// Counted first, looked for second: a call that queued after failing
	// to get this slot is seen here, and one that queues later finds it.
	if s.waiting.Load() == 0 {
		return
	}
	s.mu.Lock()
	head := s.queue.head()
	s.mu.Unlock()
	if head != self {
		head.signal()
	}
}

// releasingBody is a response body that ends its call, releasing the call's
// slots, exactly once: when the body is closed or read to its end, whichever
// comes first, from whichever goroutine.
type releasingBody struct {
	io.ReadCloser
	call *call
	done atomic.Bool
}

func (b *releasingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.release()
	}
	return n, err
}

func (b *releasingBody) Close() error {
	defer b.release()
	return b.ReadCloser.Close()
}

func (b *releasingBody) release() {
	if b.done.CompareAndSwap(false, true) {
		b.call.finish()
	}
}

// releasingReadWriteBody keeps the io.Writer of a 101 Switching Protocols
// response's body, which net/http's callers rely on.
type releasingReadWriteBody struct {
	*releasingBody
	io.Writer
}

// wrapBody returns rc wrapped so that closing it, or reading it to its end,
// finishes c.
func wrapBody(rc io.ReadCloser, c *call) io.ReadCloser {
	b := &releasingBody{ReadCloser: rc, call: c}
	if w, ok := rc.(io.Writer); ok {
		return releasingReadWriteBody{b, w}
	}
	return b
}
