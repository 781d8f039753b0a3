package pacer

// NewSweepingMemoryStore returns a memory store that sweeps however few
// buckets it holds, so that the conformance suite's eviction case, which
// holds one, can see it forgotten.
func NewSweepingMemoryStore() *MemoryStore {
	m := NewMemoryStore()
	m.keep = 0
	return m
}
