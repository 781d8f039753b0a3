package store

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// A LimitStore keeps what a fleet learns about its scopes, beside the
// buckets, for every instance sharing the store to read
// (Policy.LimitSync): the limits one instance's Transport.SetLimit
// publishes, and the pace records its Transport publishes when the
// provider refuses a call (a cut, and the climb back from it), so that the
// fleet learns a refusal once. Memory, store/redisstore and store/pgstore
// implement it; storetest.LimitSync, PaceRecords and CutSync check one.
type LimitStore interface {
	// PublishLimit records l as the scope's limit and returns its version,
	// larger than any the store returned before.
	PublishLimit(ctx context.Context, scope string, l Limit) (version int64, err error)
	// PublishPace records pace as the scope's pace record, in place of any
	// earlier one, and returns its version, larger than any the store
	// returned before (from PublishLimit too). The record is pacer's, and
	// opaque to the store, which keeps it as given: at most MaxPaceRecord
	// bytes of printable ASCII (CheckPaceRecord), never empty.
	PublishPace(ctx context.Context, scope string, pace string) (version int64, err error)
	// PublishedLimits returns, by scope, the limits and pace records
	// published, in one round trip: a scope with only a pace record has a
	// zero Limit and Version; one with only a limit, no Pace.
	PublishedLimits(ctx context.Context) (map[string]PublishedLimit, error)
}

// A PublishedLimit is what a LimitStore keeps for a scope: its limit and
// its pace record, each with the version it was published under (0 when
// none was).
type PublishedLimit struct {
	Limit   Limit
	Version int64
	// Pace is the scope's latest pace record, as PublishPace was given it;
	// "" when none was published.
	Pace        string
	PaceVersion int64
}

// MaxPaceRecord is the longest pace record a LimitStore must keep.
const MaxPaceRecord = 256

// CheckPaceRecord returns an error matching ErrInvalidDemand unless pace
// is a record every LimitStore can keep as given: 1 to MaxPaceRecord bytes
// of printable ASCII, spaces included. A store calls it before it writes.
func CheckPaceRecord(pace string) error {
	if pace == "" || len(pace) > MaxPaceRecord {
		return fmt.Errorf("%w: a pace record of %d bytes; it must hold 1 to %d", ErrInvalidDemand, len(pace), MaxPaceRecord)
	}
	for i := range len(pace) {
		if c := pace[i]; c < ' ' || c > '~' {
			return fmt.Errorf("%w: a pace record holds byte %#x at %d; it must be printable ASCII", ErrInvalidDemand, c, i)
		}
	}
	return nil
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

// record returns scope's entry, to change under p.mu.
func (p *publishedLimits) record(scope string) PublishedLimit {
	if p.limits == nil {
		p.limits = make(map[string]PublishedLimit)
	}
	return p.limits[scope]
}

// PublishLimit records l as the scope's limit, for the Transports sharing
// the store that sync limits (Policy.LimitSync).
func (s *Memory) PublishLimit(_ context.Context, scope string, l Limit) (int64, error) {
	p := &s.published
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.record(scope)
	p.version++
	r.Limit, r.Version = l, p.version
	p.limits[scope] = r
	return p.version, nil
}

// PublishPace records pace as the scope's pace record, for the Transports
// sharing the store that sync limits (Policy.LimitSync).
func (s *Memory) PublishPace(_ context.Context, scope string, pace string) (int64, error) {
	if err := CheckPaceRecord(pace); err != nil {
		return 0, err
	}
	p := &s.published
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.record(scope)
	p.version++
	r.Pace, r.PaceVersion = pace, p.version
	p.limits[scope] = r
	return p.version, nil
}

// PublishedLimits returns the limits and pace records published, by scope.
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
