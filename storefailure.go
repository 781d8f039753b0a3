package pacer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// ErrStoreUnavailable is the cause of the error a request gets when the
// shared store did not answer and the policy is FailClosed.
var ErrStoreUnavailable = errors.New("pacer: the shared store is unavailable")

// A StoreFailure says what a Transport does while its shared store (Redis,
// Postgres) does not answer: FailOpen, FailClosed or FallBackLocal. The
// default is FallBackLocal(1).
//
// A call to the store fails when it returns an error or takes longer than
// the store timeout (WithStoreTimeout); a request whose own context ends
// first gets its context's error, whatever the policy. After a failure the
// store is left alone for a short while, then asked again by one request at
// a time, the wait growing while it stays down; the first answer ends the
// failure, and every request goes to the store again.
//
// Tokens already leased from the store (WithLease) were granted by it: they
// are spent while it is down, whatever the policy, and the policy applies to
// the requests that need a round trip.
type StoreFailure struct {
	mode      failureMode
	instances int
}

type failureMode int

const (
	fallBackLocal failureMode = iota
	failOpen
	failClosed
)

// FailOpen sends requests without shared pacing while the store is down.
// Each instance still caps concurrency, and still obeys what the provider
// says (Retry-After), but nothing stops the fleet from sending faster than
// the limit.
func FailOpen() StoreFailure { return StoreFailure{mode: failOpen} }

// FailClosed refuses requests while the store is down, with an error that
// matches ErrStoreUnavailable. Nothing is sent that the shared bucket did not
// allow.
func FailClosed() StoreFailure { return StoreFailure{mode: failClosed} }

// FallBackLocal paces requests with a bucket in this process while the store
// is down, at 1/instances of every limit: instances is how many processes
// share the store, so that together they stay near the limit. The share is
// of the rate, the burst and the floors; costs are unchanged, so a request
// that costs more than the shrunk burst fails at once, as one that exceeds
// any bucket does (ErrExceedsCapacity), until the store is back.
//
// The default is FallBackLocal(1): each instance alone at the full limit,
// which a fleet of N exceeds N times over. Set your fleet's size.
func FallBackLocal(instances int) StoreFailure {
	return StoreFailure{mode: fallBackLocal, instances: instances}
}

// DefaultStoreTimeout bounds each call to a shared store unless
// WithStoreTimeout says otherwise. A store answers in a round trip; a second
// means it is not answering.
const DefaultStoreTimeout = time.Second

// WithStoreFailure sets what happens while the shared store set WithStore
// does not answer. It has no effect on the in-memory store, which cannot
// fail.
func WithStoreFailure(f StoreFailure) Option {
	return func(c *config) {
		if f.mode == fallBackLocal && f.instances < 1 {
			c.errs = append(c.errs, fmt.Errorf("WithStoreFailure(FallBackLocal(%d)): the number of instances must be at least 1", f.instances))
			return
		}
		c.storeFailure = f
	}
}

// WithStoreTimeout bounds each call to the shared store set WithStore; a
// call that takes longer is a failure, handled as WithStoreFailure says.
// The default is DefaultStoreTimeout.
func WithStoreTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.errs = append(c.errs, fmt.Errorf("WithStoreTimeout(%v): the timeout must be positive", d))
			return
		}
		c.storeTimeout = d
	}
}

// How long a failed store is left alone before it is asked again: the
// first retry after minRetry, doubling while it stays down, up to maxRetry.
const (
	minRetry = 100 * time.Millisecond
	maxRetry = 2 * time.Second
)

// guardedStore is a Store decorator that applies a StoreFailure policy to
// a remote store.
type guardedStore struct {
	remote  Store
	inline  bool // remote honours its context: call it on the caller's goroutine
	policy  StoreFailure
	timeout time.Duration
	local   *MemoryStore // for FallBackLocal

	mu      sync.Mutex
	down    bool
	retryAt time.Time     // while down: when the store may be asked again
	backoff time.Duration // the wait after the next failure
	probing bool          // a call is asking the store whether it is back
	lastErr error

	// covered, when set, hears of each call that the store did not answer
	// and that the policy answered instead; a call that returns the failure
	// to its caller is reported by the caller.
	covered func(scope string, err error)
}

// cover reports a call the policy answered for the store.
func (g *guardedStore) cover(scope string) {
	if g.covered != nil {
		g.covered(scope, g.unavailable())
	}
}

func guardStore(s Store, f StoreFailure, timeout time.Duration) *guardedStore {
	if f.mode == fallBackLocal && f.instances < 1 {
		f.instances = 1
	}
	cs, ok := s.(ContextStore)
	return &guardedStore{remote: s, inline: ok && cs.HonoursContext(), policy: f, timeout: timeout,
		local: NewMemoryStore(), backoff: minRetry}
}

// ask reports whether a call should go to the remote store; a call that is
// told yes while the store is down is its probe, and must report back.
func (g *guardedStore) ask(now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.down {
		return true
	}
	if g.probing || now.Before(g.retryAt) {
		return false
	}
	g.probing = true
	return true
}

// report records how a call to the remote store went.
func (g *guardedStore) report(now time.Time, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.probing = false
	if err == nil {
		g.down, g.backoff, g.lastErr = false, minRetry, nil
		return
	}
	g.down, g.lastErr = true, err
	g.retryAt = now.Add(g.backoff)
	g.backoff = min(2*g.backoff, maxRetry)
}

// call runs f against the remote store, bounded by the timeout and by ctx.
// It returns the caller's own context error if that ended first, and
// otherwise reports whether the store failed.
//
// A store that honours its context (ContextStore) is called here. Any other
// is called in a goroutine of its own, which is abandoned if ctx or the
// timeout ends first: a store client need not honour its context (go-redis,
// unless ContextTimeoutEnabled, waits for its own socket timeouts), and a
// hung server must not hold the request. f must not write anything the
// caller reads unless it returned in time: results go through channels,
// and the demands it is given are its own (see demandsFor).
func (g *guardedStore) call(ctx context.Context, now time.Time, f func(ctx context.Context) error) (failed bool, err error) {
	if !g.ask(now) {
		return true, nil
	}
	cctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	if g.inline {
		err = f(cctx)
	} else {
		done := make(chan error, 1)
		go func() { done <- f(cctx) }()
		select {
		case err = <-done:
		case <-cctx.Done():
			err = cctx.Err()
		}
	}
	if err != nil {
		if cerr := ended(ctx); cerr != nil {
			// The request gave up; that says nothing about the store.
			g.mu.Lock()
			g.probing = false
			g.mu.Unlock()
			return false, cerr
		}
	}
	g.report(now, err)
	return err != nil, nil
}

// ended returns ctx's error if it has ended. A deadline that has passed
// counts even before the context's own timer marks it: a store client that
// honours its context sets its socket deadline to the context's, and may
// fail a moment before the context reports it.
func ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if deadline, ok := ctx.Deadline(); ok && !time.Now().Before(deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

func (g *guardedStore) unavailable() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lastErr == nil {
		return ErrStoreUnavailable
	}
	return fmt.Errorf("%w: %w", ErrStoreUnavailable, g.lastErr)
}

// share returns demands with their limits cut to this instance's share.
func (g *guardedStore) share(demands []Demand) []Demand {
	n := float64(g.policy.instances)
	out := make([]Demand, len(demands))
	for i, d := range demands {
		d.Rate, d.Burst, d.Floor = d.Rate/n, d.Burst/n, d.Floor/n
		out[i] = d
	}
	return out
}

// demandsFor returns the demands to hand the remote store: a copy when the
// call may outlive this one, which runs in a goroutine the caller may
// abandon while reusing its demands.
func (g *guardedStore) demandsFor(demands []Demand) []Demand {
	if g.inline {
		return demands
	}
	return slices.Clone(demands)
}

// Take implements Store.
func (g *guardedStore) Take(ctx context.Context, now time.Time, demands []Demand) (Decision, error) {
	result := make(chan Decision, 1)
	ds := g.demandsFor(demands)
	failed, err := g.call(ctx, now, func(ctx context.Context) error {
		d, err := g.remote.Take(ctx, now, ds)
		result <- d
		return err
	})
	if err != nil {
		return Decision{}, err
	}
	if !failed {
		return <-result, nil
	}
	if g.policy.mode == failClosed {
		return Decision{}, g.unavailable()
	}
	if len(demands) > 0 {
		g.cover(demands[0].Scope)
	}
	if g.policy.mode == failOpen {
		return Decision{OK: true}, nil
	}
	return g.local.Take(ctx, now, g.share(demands))
}

// Refund implements Store. While the store is down, a fallback refund goes
// to the local bucket that granted it.
func (g *guardedStore) Refund(ctx context.Context, now time.Time, demands []Demand) error {
	ds := g.demandsFor(demands)
	failed, err := g.call(ctx, now, func(ctx context.Context) error {
		return g.remote.Refund(ctx, now, ds)
	})
	if err != nil || !failed {
		return err
	}
	if len(demands) > 0 {
		g.cover(demands[0].Scope)
	}
	if g.policy.mode == fallBackLocal {
		return g.local.Refund(ctx, now, g.share(demands))
	}
	return nil
}

// Clamp implements Store. The local bucket is clamped too, while the store
// is down, to its share.
func (g *guardedStore) Clamp(ctx context.Context, now time.Time, d Demand, tokens float64) error {
	failed, err := g.call(ctx, now, func(ctx context.Context) error {
		return g.remote.Clamp(ctx, now, d, tokens)
	})
	if err != nil || !failed {
		return err
	}
	g.cover(d.Scope)
	if g.policy.mode == fallBackLocal {
		return g.local.Clamp(ctx, now, g.share([]Demand{d})[0], tokens/float64(g.policy.instances))
	}
	return nil
}
