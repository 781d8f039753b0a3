package store

import (
	"context"
	"sync"
	"time"
)

// Memory keeps buckets in this process's memory. It is the default
// Store of a pacer Transport. The zero Memory is an empty store, ready to
// use, as is the one NewMemory returns.
//
// It stays bounded: a bucket that has refilled to capacity is the same as no
// bucket, so it is forgotten, a few at a time as other buckets are used. A
// million keys seen once do not stay in memory.
type Memory struct {
	mu      sync.Mutex
	buckets map[bucketKey]*memBucket
	ops     int
	keep    int // buckets held without sweeping; 0 for sweepFloor, below 0 for none (tests)
	// last is the bucket used last: most Transports pace one busy bucket,
	// and comparing two strings costs less than hashing them.
	last    *memBucket
	lastKey bucketKey
	// epoch is the first time the store was given; buckets keep their
	// times as Durations since it (see bucketLevel).
	epoch time.Time

	published publishedLimits // limitsync.go
}

type bucketKey struct{ scope, key string }

type memBucket struct {
	bucketLevel
	// The shape last seen, to tell when the bucket can be forgotten.
	rate, burst float64
	window      time.Duration
	taken       float64 // units taken, ever (Decision.Taken)
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{}
}

// The sweep looks at sweepBatch buckets every sweepEvery operations: four
// looks an operation, enough to keep up with a new key on every take while
// costing a few nanoseconds on average.
const (
	sweepEvery = 16
	sweepBatch = 64
	// sweepFloor is how many buckets are kept without sweeping: so few
	// cost little memory, and sweeping them would cost every take.
	sweepFloor = 1024
)

// Take implements Store.
func (m *Memory) Take(_ context.Context, now time.Time, demands []Demand) (Decision, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	at := m.since(now)
	m.maybeSweep(at)
	if len(demands) != 1 {
		return m.takeAll(at, demands), nil
	}
	// Most calls are charged to one bucket: all or none is then simple.
	d := &demands[0]
	b := m.bucket(d, at)
	if wait := b.wait(d, at); wait > 0 {
		return Decision{Wait: wait}, nil
	}
	if d.Cost > 0 {
		b.tokens -= d.Cost
		b.taken += d.Cost
	}
	return Decision{OK: true, Taken: b.taken}, nil
}

// takeAll takes every demand or none. The caller holds m.mu.
func (m *Memory) takeAll(at time.Duration, demands []Demand) Decision {
	var stack [4]*memBucket
	found := stack[:0]
	if len(demands) > len(stack) {
		found = make([]*memBucket, 0, len(demands))
	}
	decision := Decision{OK: true}
	for i := range demands {
		d := &demands[i]
		b := m.bucket(d, at)
		found = append(found, b)
		if wait := b.wait(d, at); wait > 0 && (decision.OK || wait > decision.Wait) {
			decision = Decision{Blocked: i, Wait: wait}
		}
	}
	if !decision.OK {
		return decision
	}
	for i, b := range found {
		if demands[i].Cost > 0 {
			b.tokens -= demands[i].Cost
			b.taken += demands[i].Cost
		}
	}
	if len(found) > 0 {
		decision.Taken = found[0].taken
	}
	return decision
}

// Refund implements Store.
func (m *Memory) Refund(_ context.Context, now time.Time, demands []Demand) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	at := m.since(now)
	for i := range demands {
		d := &demands[i]
		if d.Cost <= 0 {
			continue
		}
		b := m.bucket(d, at)
		b.tokens = min(b.tokens+d.Cost, d.Burst)
	}
	return nil
}

// Adjust implements Adjuster.
func (m *Memory) Adjust(_ context.Context, now time.Time, demands []Demand) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	at := m.since(now)
	for i := range demands {
		if d := &demands[i]; d.Cost != 0 {
			b := m.bucket(d, at)
			b.adjust(d)
			b.taken += max(0, d.Cost)
		}
	}
	return nil
}

// Clamp implements Store.
func (m *Memory) Clamp(_ context.Context, now time.Time, d Demand, tokens float64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.bucket(&d, m.since(now))
	b.tokens = min(b.tokens, tokens)
	return nil
}

// Level implements LevelReader: what d's bucket holds at now, without
// changing it; a bucket the store does not hold is full. It never fails,
// and takes no lock beyond the store's own, so a Transport's Stats report
// the level of the default store.
func (m *Memory) Level(_ context.Context, now time.Time, d Demand) (float64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.buckets[bucketKey{d.Scope, d.Key}]
	if b == nil {
		return d.Burst, nil
	}
	l := b.bucketLevel
	l.advance(&d, m.since(now))
	return l.tokens, nil
}

// since returns now as a Duration since the store's epoch, which is the
// first time it is given. The caller holds m.mu.
func (m *Memory) since(now time.Time) time.Duration {
	if m.epoch.IsZero() {
		m.epoch = now
	}
	return now.Sub(m.epoch)
}

// bucket returns d's bucket brought up to now, creating it full if it is new.
func (m *Memory) bucket(d *Demand, now time.Duration) *memBucket {
	k := bucketKey{d.Scope, d.Key}
	b := m.last
	if b == nil || k != m.lastKey {
		b = m.buckets[k]
		if b == nil {
			b = &memBucket{bucketLevel: bucketLevel{tokens: d.Burst, stamp: now}}
			if m.buckets == nil {
				m.buckets = make(map[bucketKey]*memBucket)
			}
			m.buckets[k] = b
		}
		m.last, m.lastKey = b, k
	}
	b.advance(d, now)
	b.rate, b.burst, b.window = d.Rate, d.Burst, d.Window
	return b
}

func (m *Memory) maybeSweep(now time.Duration) {
	m.ops++
	keep := m.keep
	if keep == 0 {
		keep = sweepFloor
	}
	if m.ops < sweepEvery || len(m.buckets) <= keep {
		return
	}
	m.ops = 0
	looked := 0
	// Map iteration starts at a random place, so successive sweeps sample
	// the whole map.
	for k, b := range m.buckets {
		if b.full(b.rate, b.burst, b.window, now) {
			delete(m.buckets, k)
			if b == m.last {
				m.last = nil
			}
		}
		if looked++; looked == sweepBatch {
			return
		}
	}
}
