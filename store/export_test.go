package store

// NewSweepingMemory returns a memory store that sweeps however few buckets
// it holds, so that the conformance suite's eviction case, which holds one,
// can see it forgotten.
func NewSweepingMemory() *Memory {
	m := NewMemory()
	m.keep = -1
	return m
}

// Len returns the number of buckets the store holds. Only tests ask: a
// caller has no use for the count of a store that forgets full buckets.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.buckets)
}
