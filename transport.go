package pacer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacer-go/pacer/classify"
	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/internal/lease"
	"github.com/pacer-go/pacer/internal/retryrule"
	"github.com/pacer-go/pacer/internal/storeguard"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/retry"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/usage"
)

// Transport is an http.RoundTripper that paces requests below the limits of
// the API it calls. It is safe for concurrent use; share one per API.
//
// The path of a request, in RoundTrip; each step is a file of its own:
//
//  1. Route (route.go): the scopes the request is charged to, and its cost
//     on each.
//  2. Workload (workload.go): the one the request's context names
//     (ContextWithWorkload, with what else a context says in context.go).
//  3. Budget (budget.go, with the Meter's estimate of an LLM call in
//     meter.go): the workload's spend cap; exhausted means an error at once.
//  4. Admission (admission.go, with the concurrency slots in slots.go): a
//     slot and tokens on every scope, all or none; higher-reserve workloads
//     first; a wait that cannot end before the context's deadline fails at
//     once.
//  5. Send (send, below), through the base RoundTripper.
//  6. Learn (learn.go): the response's Retry-After and rate-limit headers
//     pause, clamp or re-pace the scopes for every caller.
//  7. Retry (retry.go), only when it is safe to send twice; each attempt
//     goes back to step 1, so retries are paced like first attempts.
//  8. Return (body.go): the response with its body wrapped, so that the
//     call's slots are released exactly once, when the body is closed or
//     read to its end, and its cost settled on what it used (settle.go).
type Transport struct {
	base  http.RoundTripper
	clock clock.Clock
	store store.Store
	guard *storeguard.Guard // in front of a shared store; nil for the in-memory one (storeguard.go)

	headroom       float64
	maxWait        time.Duration
	maxWaitSeconds float64 // maxWait in seconds, for the hot path
	log            *slog.Logger
	classifiers    []classify.Func
	observers      []observe.Observer

	scopes          map[string]*configuredScope
	defaultScope    *configuredScope
	routes          []Route
	workloads       map[string]*workloadState
	defaultWorkload *workloadState
	undeclared      *workloadState // the one that TakesUndeclared; nil: such calls fail

	meter    *Meter        // meter.go; nil when no call is metered
	retry    *retrier      // nil when calls are sent once
	arrivals atomic.Uint64 // numbers waiters in arrival order
	calls    sync.Pool     // of *call
	err      error         // a configuration error, returned by every RoundTrip

	// What the Transport has said once in its log (workload.go, retry.go).
	unknownWorkloads sync.Map     // of undeclared names taken, to their *atomic.Int64 of calls
	unknownCount     atomic.Int32 // len(unknownWorkloads)
	unknownOthers    atomic.Int64 // calls of undeclared names beyond maxUnknownWorkloads
	bodyTooLargeSaid atomic.Bool

	slotAlert     time.Duration // slots.go
	nextSlotCheck atomic.Int64  // when checkAllSlots looks next, in Unix nanoseconds

	// SetWorkload's (livelimit.go): one change at a time, and the
	// workloads as they are now, by index.
	setMu   sync.Mutex
	current []Workload

	limitSync *limitSync                            // nil unless store.Policy.LimitSync (limitsync.go)
	tenantOf  func(*http.Request) (string, float64) // WithTenant (tenant.go)
	pool      *poolState                            // WithPool (pool.go); nil without a pool
}

// New returns a Transport that sends through base (http.DefaultTransport if
// nil), configured by opts.
//
// A configuration error does not panic: every RoundTrip returns it, and Err
// reports it, so a program can check its configuration when it starts.
func New(base http.RoundTripper, opts ...Option) *Transport {
	cfg := configure(base, opts)
	t := &Transport{
		base:           cfg.base,
		clock:          cfg.clock,
		headroom:       cfg.headroom,
		maxWait:        cfg.maxWait,
		maxWaitSeconds: cfg.maxWait.Seconds(),
		log:            cfg.log,
		classifiers:    cfg.classifiers,
		observers:      cfg.observers,
		routes:         cfg.routes,
		slotAlert:      cfg.slotAgeAlert,
		tenantOf:       cfg.tenantOf,
		meter:          cfg.meterFor(),
	}
	t.calls.New = func() any { return newPooledCall(t) }
	t.useStore(&cfg)
	for _, o := range t.observers {
		if b, ok := o.(transportObserver); ok {
			b.bind(t)
		}
	}
	workloads := t.addWorkloads(&cfg)
	t.addScopes(&cfg, workloads)
	t.pool = t.newPool(&cfg) // pool.go; nil without a pool
	t.retry = cfg.retrier(t.scopes)
	if err := errors.Join(cfg.errs...); err != nil {
		t.err = fmt.Errorf("pacer: invalid configuration: %w", err)
	}
	for _, w := range cfg.warnings() {
		t.log.Warn("pacer: " + w)
	}
	if cfg.concurrencyZero {
		t.log.Info("pacer: WithConcurrency(0) sets no cap on the calls in flight on DefaultScope; 0 means no cap")
	}
	return t
}

// configure returns the defaults with opts applied in order. A mistake in
// them is kept in the config's errs, never a panic.
func configure(base http.RoundTripper, opts []Option) config {
	cfg := config{base: base, headroom: defaultHeadroom, clock: clock.System, maxWait: defaultMaxWait,
		retries: true}
	if base == nil {
		cfg.base = http.DefaultTransport
	} else if isNil(base) {
		// A nil *http.Transport would panic inside net/http on the first call.
		cfg.errs = append(cfg.errs, fmt.Errorf("New: the base RoundTripper is a nil %T; pass nil itself for http.DefaultTransport", base))
	}
	cfg.scope(DefaultScope)
	cfg.defaultScopeDeclared = false // by an option, not here
	for i, opt := range opts {
		if opt == nil {
			cfg.errs = append(cfg.errs, fmt.Errorf("New: Option %d of %d is a nil Option; leave it out", i+1, len(opts)))
			continue
		}
		opt(&cfg)
	}
	if cfg.log == nil {
		cfg.log = slog.Default()
	}
	return cfg
}

// useStore sets the Transport's store: the memory store by default; a shared
// one behind its failure guard (storeguard.go, internal/storeguard) and its
// lease (internal/lease).
// The lease is outside the guard: tokens it holds were granted by the store,
// so they are spent while the store is down, and spending them needs none of
// what the guard spends on a round trip.
func (t *Transport) useStore(cfg *config) {
	s := cfg.store
	if s == nil {
		s = store.NewMemory()
	}
	p := cfg.storePolicy
	if p.LimitSync > 0 {
		if ls, ok := s.(store.LimitStore); ok {
			t.limitSync = &limitSync{store: ls, interval: p.LimitSync, timeout: storeguard.Timeout(p), readDone: make(chan struct{}),
				versions: make(map[string]int64), paces: make(map[string]int64)}
		} else {
			cfg.errs = append(cfg.errs, fmt.Errorf("WithStore: store.Policy.LimitSync is set, but the store (%T) keeps no limits; use one that implements store.LimitStore (store.Memory, store/redisstore, store/pgstore)", s))
		}
	}
	if _, ok := s.(*store.Memory); !ok {
		t.guard = t.guardStore(s, p)
		s = t.guard
		if p.Lease > 0 {
			s = lease.New(t.guard, lease.Config{Size: p.Lease, Adaptive: p.AdaptiveLease})
		}
	}
	t.store = s
}

// ownsBuckets reports whether the Transport's buckets are this process's
// alone (the in-memory store): what it spent is all that was spent from
// them. Behind a shared store, the fleet's other processes spend too.
func (t *Transport) ownsBuckets() bool {
	_, ok := t.store.(*store.Memory)
	return ok
}

// addWorkloads validates the configured workloads, DefaultWorkload among
// them, and returns them in their index order.
func (t *Transport) addWorkloads(cfg *config) []*workloadState {
	_, declared := findWorkload(cfg.workloads, DefaultWorkload)
	if !declared {
		cfg.workloads = append([]namedWorkload{{name: DefaultWorkload}}, cfg.workloads...)
	}
	t.workloads = make(map[string]*workloadState, len(cfg.workloads))
	var list []*workloadState
	var reserves float64
	for _, w := range cfg.workloads {
		if err := w.validate(w.name); err != nil {
			cfg.errs = append(cfg.errs, err)
		}
		if unit, err := cfg.budgetUnit(w.name, w.Budget); err != nil {
			cfg.errs = append(cfg.errs, err)
		} else {
			w.Budget.Unit = unit
		}
		reserves += w.Reserve
		ws := &workloadState{Workload: w.Workload, name: w.name, index: len(list), implicit: w.name == DefaultWorkload && !declared}
		ws.waiting.Set(w.MaxWaiting, w.ShedLowest)
		if err := t.initBudget(ws); err != nil {
			cfg.errs = append(cfg.errs, err)
		}
		list = append(list, ws)
		t.current = append(t.current, w.Workload)
		t.workloads[w.name] = ws
		if w.TakesUndeclared {
			if t.undeclared != nil {
				cfg.errs = append(cfg.errs, fmt.Errorf("workloads %q and %q both set TakesUndeclared; set it on one", t.undeclared.name, w.name))
			}
			t.undeclared = ws
		}
	}
	if reserves > 1+1e-9 {
		cfg.errs = append(cfg.errs, fmt.Errorf("the workloads' reserves add up to %v; they must add up to at most 1", reserves))
	}
	t.defaultWorkload = t.workloads[DefaultWorkload]
	return list
}

// addScopes validates the configured scopes and sets each one's shares of
// the workloads.
func (t *Transport) addScopes(cfg *config, workloads []*workloadState) {
	t.scopes = make(map[string]*configuredScope, len(cfg.scopes))
	for _, s := range cfg.scopes {
		cs := newConfiguredScope(s, cfg.headroom, workloads, cfg.clock)
		cs.implicit = s.Name == DefaultScope && !cfg.defaultScopeDeclared
		if err := cs.validate(); err != nil {
			cfg.errs = append(cfg.errs, err)
		}
		t.scopes[s.Name] = cs
	}
	t.defaultScope = t.scopes[DefaultScope]
}

// retrier returns the retrier that goes around every attempt: nil when a
// call is sent once as it is. With retries off, WithIdempotencyKey still
// needs it, to add the key; it then makes one attempt.
func (cfg *config) retrier(scopes map[string]*configuredScope) *retrier {
	if !cfg.retries && !cfg.idempotencyKey {
		return nil
	}
	p := cfg.retry.WithDefaults()
	if !cfg.retries {
		p.MaxAttempts = 1
	}
	if err := p.Validate(); err != nil {
		cfg.errs = append(cfg.errs, fmt.Errorf("WithRetry: %w", err))
	}
	for _, cs := range scopes {
		cs.retryCredit.Store(int64(p.Budget.Min) * retryUnit)
	}
	return newRetrier(p, cfg.idempotencyKey)
}

// isNil reports whether rt is an interface holding a nil pointer, func, map
// or the like, which cannot be called.
func isNil(rt http.RoundTripper) bool {
	v := reflect.ValueOf(rt)
	switch v.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Map, reflect.Slice, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

func findWorkload(ws []namedWorkload, name string) (Workload, bool) {
	for _, w := range ws {
		if w.name == name {
			return w.Workload, true
		}
	}
	return Workload{}, false
}

// Err returns the Transport's configuration error, or nil.
func (t *Transport) Err() error { return t.err }

// Client returns an *http.Client that sends through t.
func (t *Transport) Client() *http.Client { return &http.Client{Transport: t} }

// RoundTrip implements http.RoundTripper. It waits until the request is
// admitted by every scope it is charged to, honouring the request's context,
// then sends it through the base RoundTripper.
//
// It never modifies the request. It closes the request's body on every path
// where it does not reach the base RoundTripper. The response's body must be
// closed, as always: that is what releases the call's concurrency slots.
//
// As with net/http, a response is not an error: when retries end on a
// response — a 429 or a 503 after the last attempt — it is returned with a
// nil error, and the caller reads its status. An error is returned only when
// there is no response: a *retry.Error once an attempt was sent (see
// retry.Policy), else pacer's own refusal of the first attempt.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.err != nil {
		return nil, closeRequestBody(req, t.err)
	}
	if t.pool != nil {
		return t.pool.roundTrip(t, req) // pool.go: a member per attempt
	}
	if t.retry == nil {
		resp, _, err := t.attempt(req)
		return resp, err
	}
	return t.retry.roundTrip(t, req) // step 7, around every other
}

// attemptInfo tells the retrier what became of one attempt.
type attemptInfo struct {
	sent    bool             // the request reached the base RoundTripper
	scope   *configuredScope // the first scope it was charged to, for the retry budget
	verdict classify.Verdict // what the classifiers said of an error response
	stalled bool             // the response's body stalled for the classifiers: close it, do not drain it
}

// attempt takes req once through every step but the retry.
//
// What became of the attempt is returned by value, not written through a
// pointer: the retrier's copy then lives on its stack, without the garbage
// collector's write barriers.
func (t *Transport) attempt(req *http.Request) (*http.Response, attemptInfo, error) {
	c, err := t.callFor(req.Context(), req, nil) // steps 1 and 2: route.go, workload.go
	if err != nil {
		return nil, attemptInfo{}, closeRequestBody(req, err)
	}
	if err := c.enter(req.Context()); err != nil { // steps 3 and 4: budget.go, admission.go
		return nil, attemptInfo{}, closeRequestBody(req, err)
	}
	info := attemptInfo{sent: true, scope: t.defaultScope}
	if len(c.charges) > 0 {
		info.scope = c.charges[0].bucket.scope
	}
	sent := req
	if t.retry != nil && t.retry.AttemptTimeout > 0 {
		sent = c.bound(req, t.retry.AttemptTimeout)
	}
	var resp *http.Response
	resp, info.verdict, info.stalled, err = c.send(sent) // steps 5, 6 (learn.go) and 8 (body.go)
	if err != nil && sent != req && sent.Context().Err() == context.DeadlineExceeded && req.Context().Err() == nil {
		// The attempt's own bound, not the caller's context: worth a retry.
		err = fmt.Errorf("%w (%v): %v", retry.ErrAttemptTimeout, t.retry.AttemptTimeout, err)
	}
	return resp, info, err
}

// bound returns req with a context that ends after d, and makes the call's
// finish end it, when the response's body is closed or the attempt fails.
func (c *call) bound(req *http.Request, d time.Duration) *http.Request {
	ctx, cancel := context.WithDeadline(req.Context(), c.t.clock.Now().Add(d))
	c.cancel = cancel
	return req.WithContext(ctx)
}

// send passes the admitted request to the base RoundTripper and hands the
// call's release over to the response body. If the base RoundTripper fails,
// or panics, the call is finished here.
func (c *call) send(req *http.Request) (resp *http.Response, verdict classify.Verdict, stalled bool, err error) {
	handedOver := false
	defer func() {
		if !handedOver {
			c.finish()
		}
	}()
	resp, err = c.t.base.RoundTrip(req)
	if err != nil {
		c.answered(false) // no answer will come
		if retryrule.NeverLeft(err) {
			// The provider never saw it, so it spent nothing there.
			c.refundBudget(req.Context())
			c.settleRejected()
		}
		return nil, classify.Verdict{}, false, err
	}
	if resp == nil {
		c.answered(false)
		return nil, classify.Verdict{}, false, errors.New("pacer: the base RoundTripper returned neither a response nor an error")
	}
	if resp.StatusCode >= 400 {
		c.settleRejected() // before learning: a clamp must have the last word
		verdict, stalled = c.t.classify(req.Context(), resp)
		if c.t.pool != nil {
			confineToMember(req.Context(), &verdict) // pool.go: a member's refusal cools it alone
		}
	}
	c.learn(req.Context(), resp, verdict) // step 6
	// Step 8 follows; a spent quota ends the call here instead.
	if reason := verdict.Quota; reason != "" {
		drop(resp, stalled)
		c.t.emit(observe.Event{Kind: observe.EventBudgetExhausted, Workload: c.workload.name, Status: resp.StatusCode})
		return nil, verdict, stalled, &QuotaError{Status: resp.StatusCode, Message: reason}
	}
	if resp.StatusCode >= 400 {
		if err := c.farRefusal(resp, verdict); err != nil {
			// A wait beyond the maximum wait is said at once (farreset.go).
			drop(resp, stalled)
			c.t.emit(observe.Event{Kind: observe.EventBudgetExhausted, Workload: c.workload.name, Status: resp.StatusCode, Err: err})
			return nil, verdict, stalled, err
		}
	}
	var r usage.Reader
	if c.metered.on { // usageReader's own first check, without the call
		r = c.usageReader(req, resp)
	}
	if r != nil {
		resp.Body = &meteredBody{ReadCloser: resp.Body, call: c, req: req, r: r}
		handedOver = true
	} else if resp.Body != nil && (c.holdsResources() || c.cancel != nil) {
		resp.Body = wrapBody(resp.Body, c)
		handedOver = true
	}
	return resp, verdict, stalled, nil
}

// closeRequestBody closes the body of a request that will not be sent, as
// the RoundTripper contract requires, and returns err.
func closeRequestBody(req *http.Request, err error) error {
	if req.Body != nil {
		req.Body.Close()
	}
	return err
}
