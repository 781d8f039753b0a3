package pacer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacer-go/pacer/store"
)

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
	store    store.LimitStore
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
		cs := t.scopes[scope]
		if cs == nil || p.Version <= ls.versions[scope] {
			continue
		}
		ls.versions[scope] = p.Version
		if l := Limit(p.Limit); cs.configured.Load().limit != l && l.validate() == nil {
			t.applyLimit(cs, l, OriginStore)
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
	v, err := ls.store.PublishLimit(ctx, scope, store.Limit(l))
	if err != nil {
		return fmt.Errorf("pacer: SetLimit: publishing scope %q's limit to the fleet: %w", scope, err)
	}
	ls.mu.Lock()
	ls.versions[scope] = max(ls.versions[scope], v)
	ls.mu.Unlock()
	return nil
}
