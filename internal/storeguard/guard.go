package storeguard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacer-go/pacer/store"
)

// ErrUnavailable is the cause of every error the guard returns for a store
// that did not answer: store.ErrUnavailable, under the name the guard's
// code uses.
var ErrUnavailable = store.ErrUnavailable

// defaultTimeout bounds each call to a shared store unless
// store.Policy.Timeout says otherwise.
const defaultTimeout = time.Second

// Timeout returns the bound of each call to a store used under p.
func Timeout(p store.Policy) time.Duration {
	if p.Timeout == 0 {
		return defaultTimeout
	}
	return p.Timeout
}

// How long a failed store is left alone before it is asked again: the
// first retry after MinRetry, doubling while it stays down, up to MaxRetry.
const (
	MinRetry = 100 * time.Millisecond
	MaxRetry = 2 * time.Second
)

// Hooks are how a Guard tells its owner what it found out, and tells the
// time where no caller passes it. Each may be nil.
type Hooks struct {
	// Now is the owner's clock: a background check reads it, and a call
	// that failed reads it to tell whether its context's deadline had
	// passed. Nil means time.Now.
	Now func() time.Time
	// Covered hears of each call that the store did not answer and that
	// the policy answered instead; a call that returns the failure to its
	// caller is reported by the caller.
	Covered func(scope string, err error)
	// Warn hears of a write in the background that the store refused or
	// that had to be dropped: there is no caller to tell.
	Warn func(scope string, err error)
}

// A Guard is a store.Store (a store.Adjuster, and a store.LevelReader) in
// front of a remote store: it applies a store.Policy's failure mode,
// bounds every call, and sends the writes nobody waits for (clamps,
// refunds, settlements) in the background. It is safe for concurrent use.
type Guard struct {
	remote    store.Store
	inline    bool // remote honours its context: call it on the caller's goroutine
	mode      store.FailureMode
	instances int // FallBackLocal's share, at least 1
	timeout   time.Duration
	hooks     Hooks
	local     *store.Memory // for FallBackLocal
	// ledger is this process's own count of each budget's spend, which no
	// store's answer overrules (see store.Policy.OnFailure and ledger.go).
	ledger *store.Memory
	writes writeQueue // clamps, refunds and adjustments on their way to the store

	// down is whether the store is known to be down: read without the
	// lock, so that a call to a store that answers takes none; written
	// under it, with the fields below.
	down atomic.Bool

	mu       sync.Mutex
	retryAt  time.Time     // while down: when the store may be asked again
	backoff  time.Duration // the wait after the next failure
	probing  bool          // a call is asking the store whether it is back
	checking bool          // a check is asking a silent store whether it answers
	lastErr  error
	// answered counts the calls the store answered, so that a caller that
	// gives up can tell whether anyone heard from it meanwhile.
	answered atomic.Uint64
}

// New returns the guard of remote under p, a policy its owner checked
// (pacer.WithStore): its zero fields mean the defaults.
func New(remote store.Store, p store.Policy, h Hooks) *Guard {
	if h.Now == nil {
		h.Now = time.Now
	}
	cs, ok := remote.(store.ContextStore)
	return &Guard{remote: remote, inline: ok && cs.HonoursContext(), mode: p.OnFailure, instances: max(p.Instances, 1), timeout: Timeout(p),
		hooks: h, local: store.NewMemory(), ledger: store.NewMemory(), backoff: MinRetry}
}

// cover reports a call the policy answered for the store.
func (g *Guard) cover(scope string) {
	if g.hooks.Covered != nil {
		g.hooks.Covered(scope, g.Unavailable())
	}
}

// warn reports a write in the background that did not reach the store.
func (g *Guard) warn(scope string, err error) {
	if g.hooks.Warn != nil {
		g.hooks.Warn(scope, err)
	}
}

// ask reports whether a call should go to the remote store; a call that is
// told yes while the store is down is its probe, and must report back.
func (g *Guard) ask(now time.Time) bool {
	return !g.down.Load() || g.probe(now)
}

// probe reports whether a call to a store that is down should ask it
// whether it is back: the first call once its wait has passed.
func (g *Guard) probe(now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.down.Load() {
		return true
	}
	if g.probing || now.Before(g.retryAt) {
		return false
	}
	g.probing = true
	return true
}

// IsDown reports whether the store is known to be down: its last call
// failed, and no call since has had an answer.
func (g *Guard) IsDown() bool { return g.down.Load() }

// report records how a call to the remote store went.
func (g *Guard) report(now time.Time, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.probing = false
	if err == nil {
		g.answered.Add(1)
		g.down.Store(false)
		g.backoff, g.lastErr = MinRetry, nil
		return
	}
	g.down.Store(true)
	g.lastErr = err
	g.retryAt = now.Add(g.backoff)
	g.backoff = min(2*g.backoff, MaxRetry)
}

// call runs f against the remote store, bounded by the timeout and by ctx.
// It returns the caller's own context error if that ended first, or an
// error matching store.ErrInvalidDemand that the store raised about the call's
// values, and otherwise reports whether the store failed.
func (g *Guard) call(ctx context.Context, now time.Time, f func(ctx context.Context) error) (failed bool, err error) {
	if !g.ask(now) {
		return true, nil
	}
	answered := g.answered.Load()
	err = g.Bounded(ctx, f)
	if err == nil || errors.Is(err, store.ErrInvalidDemand) {
		g.report(now, nil) // the store answered
		return false, err
	}
	if cerr := g.ended(ctx); cerr != nil {
		// The request gave up: that says nothing about the store, unless
		// nobody has heard from it since this call began.
		g.gaveUp(answered)
		return false, cerr
	}
	g.report(now, err)
	return true, nil
}

// Bounded runs f with a context that ends at the store timeout, or when ctx
// does. It neither asks whether the store is down nor records how the call
// went: that is for the caller.
//
// A store that honours its context (ContextStore) is called here. Any other
// is called in a goroutine of its own, which is abandoned if ctx or the
// timeout ends first: a store client need not honour its context (go-redis,
// unless ContextTimeoutEnabled, waits for its own socket timeouts), and a
// hung server must not hold the request. f must not write anything the
// caller reads unless it returned in time: results go through channels,
// and the demands it is given are its own (see demandsFor).
func (g *Guard) Bounded(ctx context.Context, f func(ctx context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	if g.inline {
		return f(cctx)
	}
	done := make(chan error, 1)
	go func() { done <- f(cctx) }()
	select {
	case err := <-done:
		return err
	case <-cctx.Done():
		return cctx.Err()
	}
}

// gaveUp handles a call whose caller gave up before the store answered.
// If the store answered nobody since the call began (answered is the count
// then), one check asks it, bounded by the store timeout alone, whether it
// answers at all.
func (g *Guard) gaveUp(answered uint64) {
	g.mu.Lock()
	g.probing = false
	check := !g.down.Load() && !g.checking && g.answered.Load() == answered
	g.checking = g.checking || check
	g.mu.Unlock()
	if check {
		go g.check()
	}
}

// checkDemand is the bucket a check lowers to its capacity: a write that
// changes nothing, and that every store must make in a round trip. Its
// scope is in the prefix pacer keeps for its own buckets, which no
// caller's scope may start with.
var checkDemand = store.Demand{Scope: "pacer:check", Rate: 1, Burst: 1}

// check asks the store whether it answers within the store timeout, and
// records the answer as any call's.
func (g *Guard) check() {
	now := g.hooks.Now()
	err := g.Bounded(context.Background(), func(ctx context.Context) error {
		return g.remote.Clamp(ctx, now, checkDemand, checkDemand.Burst)
	})
	if errors.Is(err, store.ErrInvalidDemand) {
		err = nil // it answered
	}
	g.report(g.hooks.Now(), err)
	g.mu.Lock()
	g.checking = false
	g.mu.Unlock()
}

// ended returns ctx's error if it has ended. A deadline that has passed
// counts even before the context's own timer marks it: a store client that
// honours its context sets its socket deadline to the context's, and may
// fail a moment before the context reports it. The deadline is compared on
// the owner's clock (Hooks.Now), as admission and retry compare it, so that
// every decision about one request reads one time.
func (g *Guard) ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if deadline, ok := ctx.Deadline(); ok && !g.hooks.Now().Before(deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// Unavailable returns the error of a call the store did not answer: it
// matches ErrUnavailable, and the store's last error if there is one.
func (g *Guard) Unavailable() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lastErr == nil {
		return ErrUnavailable
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, g.lastErr)
}

// share returns demands with their limits cut to this instance's share.
func (g *Guard) share(demands []store.Demand) []store.Demand {
	out := make([]store.Demand, len(demands))
	for i, d := range demands {
		out[i] = g.shareOf(d)
	}
	return out
}

// shareOf returns d with its limits cut to this instance's share of them.
func (g *Guard) shareOf(d store.Demand) store.Demand {
	n := float64(g.instances)
	d.Rate, d.Burst, d.Floor = d.Rate/n, d.Burst/n, d.Floor/n
	return d
}

// demandsFor returns the demands to hand the remote store: a copy when the
// call may outlive this one, which runs in a goroutine the caller may
// abandon while reusing its demands.
func (g *Guard) demandsFor(demands []store.Demand) []store.Demand {
	if g.inline {
		return demands
	}
	return slices.Clone(demands)
}

// Take implements store.Store: the remote store's decision, or the
// policy's while the store does not answer.
func (g *Guard) Take(ctx context.Context, now time.Time, demands []store.Demand) (store.Decision, error) {
	d, failed, err := g.takeRemote(ctx, now, demands)
	if err != nil || !failed {
		return d, err
	}
	if g.mode == store.FailClosed {
		return store.Decision{}, g.Unavailable()
	}
	if len(demands) > 0 {
		g.cover(demands[0].Scope)
	}
	if g.mode == store.FailOpen {
		return store.Decision{OK: true}, nil
	}
	d, err = g.local.Take(ctx, now, g.share(demands))
	// The local bucket's total is not the fleet's: a scope that mixed the
	// two would read the step between them as spending, or as quota given
	// back. Without one, it paces as if its store kept none.
	d.Taken = 0
	return d, err
}

// takeRemote asks the remote store, and reports whether it failed.
func (g *Guard) takeRemote(ctx context.Context, now time.Time, demands []store.Demand) (store.Decision, bool, error) {
	result := make(chan store.Decision, 1)
	ds := g.demandsFor(demands)
	failed, err := g.call(ctx, now, func(ctx context.Context) error {
		d, err := g.remote.Take(ctx, now, ds)
		result <- d
		return err
	})
	if err != nil || failed {
		return store.Decision{}, failed, err
	}
	return <-result, false, nil
}

// Refund implements store.Store. The refund goes to the store in the
// background (see writeQueue); while the store is known to be down, a
// fallback refund goes to the local bucket that granted it, at once.
func (g *Guard) Refund(ctx context.Context, now time.Time, demands []store.Demand) error {
	return g.giveBack(ctx, RefundWrite, now, demands)
}

// Adjust implements store.Adjuster. Like a refund, the adjustment goes to
// the store in the background (see writeQueue), coalesced by bucket; while
// the store is known to be down, the local fallback's bucket is adjusted
// instead, at once.
func (g *Guard) Adjust(ctx context.Context, now time.Time, demands []store.Demand) error {
	return g.giveBack(ctx, AdjustWrite, now, demands)
}

// giveBack sends a refund or an adjustment of demands to the store in the
// background, or, while the store is known to be down, to the local
// fallback at once.
func (g *Guard) giveBack(ctx context.Context, kind WriteKind, now time.Time, demands []store.Demand) error {
	if g.IsDown() {
		if len(demands) > 0 {
			g.cover(demands[0].Scope)
		}
		for _, d := range demands {
			if d.Cost > 0 || kind == AdjustWrite && d.Cost != 0 {
				g.writes.failed(kind, g.Unavailable()) // for Flush
			}
		}
		switch {
		case g.mode != store.FallBackLocal:
			return nil
		case kind == AdjustWrite:
			return g.local.Adjust(ctx, now, g.share(demands))
		}
		return g.local.Refund(ctx, now, g.share(demands))
	}
	for _, d := range demands {
		if d.Cost > 0 || kind == AdjustWrite && d.Cost != 0 {
			g.enqueue(kind, now, d, 0)
		}
	}
	return nil
}

// Clamp implements store.Store. The clamp goes to the store in the
// background (see writeQueue): learning from a response never delays
// returning it. While the store is known to be down, the local bucket is
// clamped instead, to its share, at once.
func (g *Guard) Clamp(ctx context.Context, now time.Time, d store.Demand, tokens float64) error {
	if g.IsDown() {
		g.cover(d.Scope)
		return g.clampLocal(now, d, tokens)
	}
	g.enqueue(ClampWrite, now, d, tokens)
	return nil
}

func (g *Guard) clampLocal(now time.Time, d store.Demand, tokens float64) error {
	if g.mode != store.FallBackLocal {
		return nil
	}
	return g.local.Clamp(context.Background(), now, g.shareOf(d), tokens/float64(g.instances))
}

// Level implements store.LevelReader: the remote store's level of d, read
// as any call is, bounded by the store timeout and ctx. It never answers
// for the store: a store that does not answer (or is known to be down,
// and not yet to be asked again) gives an error matching ErrUnavailable,
// at once or at the timeout; one that does not read levels an error
// matching errors.ErrUnsupported, without a round trip. The writes still
// in the queue (Drained) are not in what the store holds.
func (g *Guard) Level(ctx context.Context, now time.Time, d store.Demand) (float64, error) {
	lr, ok := g.remote.(store.LevelReader)
	if !ok {
		return 0, fmt.Errorf("the store (%T) does not read a bucket's level (store.LevelReader): %w", g.remote, errors.ErrUnsupported)
	}
	result := make(chan float64, 1)
	failed, err := g.call(ctx, now, func(ctx context.Context) error {
		l, err := lr.Level(ctx, now, d)
		result <- l
		return err
	})
	switch {
	case err != nil:
		return 0, err
	case failed:
		return 0, g.Unavailable()
	}
	return <-result, nil
}

// AdjustOrRefund settles demands on s: with Adjust if s is a
// store.Adjuster, else by refunding what was overestimated (Refund takes
// no charge).
func AdjustOrRefund(ctx context.Context, s store.Store, now time.Time, demands []store.Demand) error {
	if a, ok := s.(store.Adjuster); ok {
		return a.Adjust(ctx, now, demands)
	}
	var back []store.Demand
	for _, d := range demands {
		if d.Cost < 0 {
			d.Cost = -d.Cost
			back = append(back, d)
		}
	}
	if len(back) == 0 {
		return nil
	}
	return s.Refund(ctx, now, back)
}
