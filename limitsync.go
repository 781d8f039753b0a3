package pacer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// A LimitStore keeps the scopes' limits for a fleet, beside the buckets:
// what one instance's SetLimit publishes, every instance sharing the store
// reads (WithLimitSync). MemoryStore, store/redisstore and store/pgstore
// implement it.
type LimitStore interface {
	// PublishLimit records l as the scope's limit and returns its version,
	// larger than any the store returned before.
	PublishLimit(ctx context.Context, scope string, l Limit) (version int64, err error)
	// PublishedLimits returns the limits published, by scope.
	PublishedLimits(ctx context.Context) (map[string]PublishedLimit, error)
}

// A PublishedLimit is a scope's limit as a LimitStore keeps it.
type PublishedLimit struct {
	Limit   Limit
	Version int64
}

// OriginStore is the Origin of an EventLimitChanged that another instance
// made, read from the shared store (WithLimitSync).
const OriginStore = "store"

// WithLimitSync makes SetLimit a change for the whole fleet: it publishes
// the limit in the Transport's store, which must be a LimitStore, and every
// Transport sharing the store with this option reads the published limits
// at most interval apart, on the path of its first call after interval has
// passed (one store round trip, bounded by WithStoreTimeout), and applies
// the newer ones as SetLimit would. So every instance that makes calls
// paces by a change within interval of it. A Transport with no calls reads
// nothing, and needs nothing.
//
// A store that fails to publish makes SetLimit fail, and nothing changes;
// one that fails to be read is reported (EventStoreFailure) and read again
// at the next interval. Limits given to New are each instance's own until
// a SetLimit publishes one.
func WithLimitSync(interval time.Duration) Option {
	return func(c *config) {
		if interval <= 0 {
			c.errs = append(c.errs, fmt.Errorf("WithLimitSync(%v): the interval must be positive", interval))
			return
		}
		c.limitSync = interval
	}
}

// limitSync is what a Transport keeps for WithLimitSync.
type limitSync struct {
	store    LimitStore
	interval time.Duration
	timeout  time.Duration
	next     atomic.Int64     // Unix nanoseconds of the next read
	mu       sync.Mutex       // held by the one call that reads
	versions map[string]int64 // by scope, the version applied
}

// syncLimits reads the published limits if interval has passed since the
// last read, and applies the newer ones. Only one call reads at a time;
// the others go on at once.
func (t *Transport) syncLimits(ctx context.Context) {
	ls := t.limitSync
	now := t.clock.Now().UnixNano()
	if now < ls.next.Load() || !ls.mu.TryLock() {
		return // between reads, every call goes on without the lock
	}
	defer ls.mu.Unlock()
	if now < ls.next.Load() {
		return
	}
	ls.next.Store(now + int64(ls.interval))
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ls.timeout)
	defer cancel()
	published, err := ls.store.PublishedLimits(ctx)
	if err != nil {
		t.emit(Event{Kind: EventStoreFailure, Err: fmt.Errorf("pacer: reading the fleet's limits: %w", err)})
		return
	}
	for scope, p := range published {
		class := t.scopes[scope]
		if class == nil || p.Version <= ls.versions[scope] {
			continue
		}
		ls.versions[scope] = p.Version
		if class.configured.Load().limit != p.Limit && p.Limit.validate() == nil {
			t.applyLimit(class, p.Limit, OriginStore)
		}
	}
}

// publishLimit publishes l for the fleet, when the Transport syncs limits.
func (t *Transport) publishLimit(scope string, l Limit) error {
	ls := t.limitSync
	if ls == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), ls.timeout)
	defer cancel()
	v, err := ls.store.PublishLimit(ctx, scope, l)
	if err != nil {
		return fmt.Errorf("pacer: SetLimit: publishing scope %q's limit to the fleet: %w", scope, err)
	}
	ls.mu.Lock()
	ls.versions[scope] = max(ls.versions[scope], v)
	ls.mu.Unlock()
	return nil
}

// publishedLimits is a MemoryStore's LimitStore.
type publishedLimits struct {
	mu      sync.Mutex
	limits  map[string]PublishedLimit
	version int64
}

// PublishLimit records l as the scope's limit, for the Transports sharing
// the store that sync limits (WithLimitSync).
func (s *MemoryStore) PublishLimit(_ context.Context, scope string, l Limit) (int64, error) {
	p := &s.published
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.limits == nil {
		p.limits = make(map[string]PublishedLimit)
	}
	p.version++
	p.limits[scope] = PublishedLimit{l, p.version}
	return p.version, nil
}

// PublishedLimits returns the limits published, by scope.
func (s *MemoryStore) PublishedLimits(context.Context) (map[string]PublishedLimit, error) {
	p := &s.published
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]PublishedLimit, len(p.limits))
	for k, v := range p.limits {
		out[k] = v
	}
	return out, nil
}
