package store

import (
	"context"
	"sync"
	"time"
)

// A LimitStore keeps the scopes' limits for a fleet, beside the buckets:
// what one instance's Transport.SetLimit publishes, every instance sharing the store
// reads (pacer.WithLimitSync). Memory and store/redisstore implement it.
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

// A Limit is a pacer.Limit as a LimitStore keeps it: the same fields, so
// that each converts to the other (store.Limit(l), pacer.Limit(p.Limit)).
// A store keeps it as given and need not understand it.
type Limit struct {
	Count int
	Per   time.Duration
	Burst int
}

// publishedLimits is a Memory's LimitStore.
type publishedLimits struct {
	mu      sync.Mutex
	limits  map[string]PublishedLimit
	version int64
}

// PublishLimit records l as the scope's limit, for the Transports sharing
// the store that sync limits (pacer.WithLimitSync).
func (s *Memory) PublishLimit(_ context.Context, scope string, l Limit) (int64, error) {
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
func (s *Memory) PublishedLimits(context.Context) (map[string]PublishedLimit, error) {
	p := &s.published
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]PublishedLimit, len(p.limits))
	for k, v := range p.limits {
		out[k] = v
	}
	return out, nil
}
