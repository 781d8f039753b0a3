package pacer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/store"
)

// ErrStoreUnavailable is the cause of the error a request gets when the
// shared store did not answer and its store.Policy is store.FailClosed.
var ErrStoreUnavailable = errors.New("pacer: the shared store is unavailable")

// defaultStoreTimeout bounds each call to a shared store unless
// store.Policy.Timeout says otherwise.
const defaultStoreTimeout = time.Second

// storeTimeout returns the bound of each call to a store used under p.
func storeTimeout(p store.Policy) time.Duration {
	if p.Timeout == 0 {
		return defaultStoreTimeout
	}
	return p.Timeout
}

// How long a failed store is left alone before it is asked again: the
// first retry after minRetry, doubling while it stays down, up to maxRetry.
const (
	minRetry = 100 * time.Millisecond
	maxRetry = 2 * time.Second
)

// guardedStore is a Store decorator that applies a store.Policy's failure mode to
// a remote store, bounds every call to it, and sends the writes nobody
// waits for (clamps, refunds) in the background.
type guardedStore struct {
	remote    store.Store
	inline    bool // remote honours its context: call it on the caller's goroutine
	mode      store.FailureMode
	instances int // FallBackLocal's share, at least 1
	timeout   time.Duration
	clock     clock.Clock
	local     *store.Memory // for FallBackLocal
	// ledger is this process's own count of each budget's spend, which no
	// store's answer overrules (see store.Policy.OnFailure).
	ledger *store.Memory
	writes writeQueue // clamps and refunds on their way to the store

	mu       sync.Mutex
	down     bool
	retryAt  time.Time     // while down: when the store may be asked again
	backoff  time.Duration // the wait after the next failure
	probing  bool          // a call is asking the store whether it is back
	checking bool          // a check is asking a silent store whether it answers
	lastErr  error
	// answered counts the calls the store answered, so that a caller that
	// gives up can tell whether anyone heard from it meanwhile.
	answered atomic.Uint64

	// covered, when set, hears of each call that the store did not answer
	// and that the policy answered instead; a call that returns the failure
	// to its caller is reported by the caller.
	covered func(scope string, err error)
	// warn hears of a write in the background that the store refused or
	// that had to be dropped: there is no caller to tell.
	warn func(scope string, err error)
}

// guardStore returns the guard of s under p, a policy WithStore checked;
// its zero fields mean the defaults.
func guardStore(s store.Store, p store.Policy) *guardedStore {
	cs, ok := s.(store.ContextStore)
	return &guardedStore{remote: s, inline: ok && cs.HonoursContext(), mode: p.OnFailure, instances: max(p.Instances, 1), timeout: storeTimeout(p),
		clock: clock.System, local: store.NewMemory(), ledger: store.NewMemory(), backoff: minRetry}
}

// bind connects the guard to its Transport's clock, observers and log.
func (g *guardedStore) bind(t *Transport) {
	g.clock = t.clock
	if len(t.observers) > 0 {
		// A failure the policy covers returns no error, so no caller
		// would report it.
		g.covered = func(scope string, err error) {
			t.emit(observe.Event{Kind: observe.EventStoreFailure, Scope: scope, Err: err})
		}
	}
	g.warn = func(scope string, err error) {
		t.emit(observe.Event{Kind: observe.EventStoreFailure, Scope: scope, Err: err})
		t.log.Warn("pacer: a write to the shared store failed", "scope", scope, "err", err)
	}
}

// guard returns the Transport's store guard; nil for the in-memory store.
func (t *Transport) guard() *guardedStore {
	switch s := t.store.(type) {
	case *guardedStore:
		return s
	case *leaseStore:
		g, _ := s.store.(*guardedStore)
		return g
	}
	return nil
}

// cover reports a call the policy answered for the store.
func (g *guardedStore) cover(scope string) {
	if g.covered != nil {
		g.covered(scope, g.unavailable())
	}
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

// isDown reports whether the store is known to be down.
func (g *guardedStore) isDown() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.down
}

// report records how a call to the remote store went.
func (g *guardedStore) report(now time.Time, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.probing = false
	if err == nil {
		g.answered.Add(1)
		g.down, g.backoff, g.lastErr = false, minRetry, nil
		return
	}
	g.down, g.lastErr = true, err
	g.retryAt = now.Add(g.backoff)
	g.backoff = min(2*g.backoff, maxRetry)
}

// call runs f against the remote store, bounded by the timeout and by ctx.
// It returns the caller's own context error if that ended first, or an
// error matching store.ErrInvalidDemand that the store raised about the call's
// values, and otherwise reports whether the store failed.
func (g *guardedStore) call(ctx context.Context, now time.Time, f func(ctx context.Context) error) (failed bool, err error) {
	if !g.ask(now) {
		return true, nil
	}
	answered := g.answered.Load()
	err = g.bounded(ctx, f)
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

// bounded runs f with a context that ends at the store timeout, or when ctx
// does.
//
// A store that honours its context (ContextStore) is called here. Any other
// is called in a goroutine of its own, which is abandoned if ctx or the
// timeout ends first: a store client need not honour its context (go-redis,
// unless ContextTimeoutEnabled, waits for its own socket timeouts), and a
// hung server must not hold the request. f must not write anything the
// caller reads unless it returned in time: results go through channels,
// and the demands it is given are its own (see demandsFor).
func (g *guardedStore) bounded(ctx context.Context, f func(ctx context.Context) error) error {
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
func (g *guardedStore) gaveUp(answered uint64) {
	g.mu.Lock()
	g.probing = false
	check := !g.down && !g.checking && g.answered.Load() == answered
	g.checking = g.checking || check
	g.mu.Unlock()
	if check {
		go g.check()
	}
}

// checkDemand is the bucket a check lowers to its capacity: a write that
// changes nothing, and that every store must make in a round trip.
var checkDemand = store.Demand{Scope: reservedPrefix + "check", Rate: 1, Burst: 1}

// check asks the store whether it answers within the store timeout, and
// records the answer as any call's.
func (g *guardedStore) check() {
	now := g.clock.Now()
	err := g.bounded(context.Background(), func(ctx context.Context) error {
		return g.remote.Clamp(ctx, now, checkDemand, checkDemand.Burst)
	})
	if errors.Is(err, store.ErrInvalidDemand) {
		err = nil // it answered
	}
	g.report(g.clock.Now(), err)
	g.mu.Lock()
	g.checking = false
	g.mu.Unlock()
}

// ended returns ctx's error if it has ended. A deadline that has passed
// counts even before the context's own timer marks it: a store client that
// honours its context sets its socket deadline to the context's, and may
// fail a moment before the context reports it. The deadline is compared on
// the Transport's clock, as admission and retry compare it, so that every
// decision about one request reads one time.
func (g *guardedStore) ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if deadline, ok := ctx.Deadline(); ok && !g.clock.Now().Before(deadline) {
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
func (g *guardedStore) share(demands []store.Demand) []store.Demand {
	out := make([]store.Demand, len(demands))
	for i, d := range demands {
		out[i] = g.shareOf(d)
	}
	return out
}

// shareOf returns d with its limits cut to this instance's share of them.
func (g *guardedStore) shareOf(d store.Demand) store.Demand {
	n := float64(g.instances)
	d.Rate, d.Burst, d.Floor = d.Rate/n, d.Burst/n, d.Floor/n
	return d
}

// demandsFor returns the demands to hand the remote store: a copy when the
// call may outlive this one, which runs in a goroutine the caller may
// abandon while reusing its demands.
func (g *guardedStore) demandsFor(demands []store.Demand) []store.Demand {
	if g.inline {
		return demands
	}
	return slices.Clone(demands)
}

// Take implements Store.
func (g *guardedStore) Take(ctx context.Context, now time.Time, demands []store.Demand) (store.Decision, error) {
	d, failed, err := g.takeRemote(ctx, now, demands)
	if err != nil || !failed {
		return d, err
	}
	if g.mode == store.FailClosed {
		return store.Decision{}, g.unavailable()
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
func (g *guardedStore) takeRemote(ctx context.Context, now time.Time, demands []store.Demand) (store.Decision, bool, error) {
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

// Refund implements Store. The refund goes to the store in the background
// (see writeQueue); while the store is known to be down, a fallback refund
// goes to the local bucket that granted it, at once.
func (g *guardedStore) Refund(ctx context.Context, now time.Time, demands []store.Demand) error {
	return g.giveBack(ctx, refundWrite, now, demands)
}

// giveBack sends a refund or an adjustment of demands to the store in the
// background, or, while the store is known to be down, to the local
// fallback at once.
func (g *guardedStore) giveBack(ctx context.Context, kind writeKind, now time.Time, demands []store.Demand) error {
	if g.isDown() {
		if len(demands) > 0 {
			g.cover(demands[0].Scope)
		}
		for _, d := range demands {
			if d.Cost > 0 || kind == adjustWrite && d.Cost != 0 {
				g.writes.failed(kind, g.unavailable()) // for Flush
			}
		}
		switch {
		case g.mode != store.FallBackLocal:
			return nil
		case kind == adjustWrite:
			return g.local.Adjust(ctx, now, g.share(demands))
		}
		return g.local.Refund(ctx, now, g.share(demands))
	}
	for _, d := range demands {
		if d.Cost > 0 || kind == adjustWrite && d.Cost != 0 {
			g.enqueue(kind, now, d, 0)
		}
	}
	return nil
}

// Clamp implements Store. The clamp goes to the store in the background
// (see writeQueue): learning from a response never delays returning it.
// While the store is known to be down, the local bucket is clamped instead,
// to its share, at once.
func (g *guardedStore) Clamp(ctx context.Context, now time.Time, d store.Demand, tokens float64) error {
	if g.isDown() {
		g.cover(d.Scope)
		return g.clampLocal(now, d, tokens)
	}
	g.enqueue(clampWrite, now, d, tokens)
	return nil
}

func (g *guardedStore) clampLocal(now time.Time, d store.Demand, tokens float64) error {
	if g.mode != store.FallBackLocal {
		return nil
	}
	return g.local.Clamp(context.Background(), now, g.shareOf(d), tokens/float64(g.instances))
}

// enqueue queues a write for the store, and starts the goroutine that sends
// the queue if none is running.
func (g *guardedStore) enqueue(kind writeKind, now time.Time, d store.Demand, tokens float64) {
	start, dropped := g.writes.add(kind, now, d, tokens)
	if dropped && g.warn != nil {
		g.warn(d.Scope, fmt.Errorf("%w: %d buckets' writes are waiting for it; dropping more (a %v first)",
			ErrStoreUnavailable, maxPendingWrites, kind))
	}
	if start {
		go g.sendWrites()
	}
}

// sendWrites sends queued writes until there are none.
func (g *guardedStore) sendWrites() {
	for {
		w, ok := g.writes.next()
		if !ok {
			return
		}
		g.write(w)
	}
}

// write sends one write to the store; one it does not answer goes to the
// local fallback.
func (g *guardedStore) write(w pendingWrite) {
	d := w.demand
	failed, err := g.call(context.Background(), w.now, func(ctx context.Context) error {
		switch w.kind {
		case clampWrite:
			return g.remote.Clamp(ctx, w.now, d, w.tokens)
		case adjustWrite:
			return adjustOrRefund(ctx, g.remote, w.now, []store.Demand{d})
		}
		return g.remote.Refund(ctx, w.now, []store.Demand{d})
	})
	switch {
	case err != nil:
		g.writes.failed(w.kind, err) // for Flush
		if g.warn != nil {
			g.warn(d.Scope, err)
		}
	case failed:
		g.writes.failed(w.kind, g.unavailable())
		g.cover(d.Scope)
		switch {
		case w.kind == clampWrite:
			g.clampLocal(w.now, d, w.tokens)
		case g.mode != store.FallBackLocal:
		case w.kind == adjustWrite:
			g.local.Adjust(context.Background(), w.now, g.share([]store.Demand{d}))
		default:
			g.local.Refund(context.Background(), w.now, g.share([]store.Demand{d}))
		}
	}
}

// Adjust implements Adjuster. Like a refund, the adjustment goes to the
// store in the background (see writeQueue), coalesced by bucket; while the
// store is known to be down, the local fallback's bucket is adjusted
// instead, at once.
func (g *guardedStore) Adjust(ctx context.Context, now time.Time, demands []store.Demand) error {
	return g.giveBack(ctx, adjustWrite, now, demands)
}

// adjustOrRefund settles demands on s: with Adjust if s is an Adjuster,
// else by refunding what was overestimated (Refund takes no charge).
func adjustOrRefund(ctx context.Context, s store.Store, now time.Time, demands []store.Demand) error {
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

// takeBudget spends a workload's budget: demands is its one budget demand.
// follow is the workload's Budget.FollowStoreFailure. See the budgets
// paragraph of store.Policy.OnFailure.
func (g *guardedStore) takeBudget(ctx context.Context, now time.Time, demands []store.Demand, follow bool) (store.Decision, error) {
	// This process's own count comes first, and no store overrules it.
	if dec, _ := g.ledger.Take(ctx, now, demands); !dec.OK {
		return dec, nil
	}
	dec, failed, err := g.takeRemote(ctx, now, demands)
	if err == nil && !failed && dec.OK {
		return dec, nil
	}
	g.ledger.Refund(ctx, now, demands)
	switch {
	case err != nil || !failed:
		return dec, err
	case !follow || g.mode == store.FailClosed:
		return store.Decision{}, fmt.Errorf("%w (a budget fails closed while the store is down, unless its Budget.FollowStoreFailure is set)", g.unavailable())
	}
	g.cover(demands[0].Scope)
	if g.mode == store.FailOpen {
		return g.ledger.Take(ctx, now, demands)
	}
	// FallBackLocal: 1/instances of the budget in the period, this process's
	// spend before the outage counted: the take must leave the rest.
	share := demands[0]
	share.Floor = share.Burst - share.Burst/float64(g.instances)
	return g.ledger.Take(ctx, now, []store.Demand{share})
}

// takeBudget spends a workload's budget from the Transport's store, through
// the guard's rules for budgets when the store is shared.
func (t *Transport) takeBudget(ctx context.Context, now time.Time, demands []store.Demand, follow bool) (store.Decision, error) {
	if g := t.guard(); g != nil {
		return g.takeBudget(ctx, now, demands, follow)
	}
	return t.store.Take(ctx, now, demands)
}

// refundBudget gives back what takeBudget took for a call that was not
// sent. It never waits for a shared store: this process's count is
// refunded at once, the store's in the background.
func (t *Transport) refundBudget(ctx context.Context, now time.Time, demands []store.Demand) error {
	if g := t.guard(); g != nil {
		g.ledger.Refund(ctx, now, demands)
		return g.Refund(ctx, now, demands)
	}
	return t.store.Refund(ctx, now, demands)
}
