package pacer

import (
	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/pool"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/usage/prices"

	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pacer-go/pacer/classify"
	"github.com/pacer-go/pacer/retry"
)

// An Option configures a Transport.
type Option func(*config)

type config struct {
	pool      *pool.Config // WithPool (pool.go); nil without a pool
	base      http.RoundTripper
	headroom  float64
	scopes    []Scope // in order of declaration; DefaultScope first
	workloads []namedWorkload
	routes    []Route
	store     store.Store
	clock     clock.Clock
	maxWait   time.Duration
	retry     retry.Policy
	retries   bool // false after WithoutRetry
	// defaultScopeDeclared: an option set DefaultScope (WithLimit,
	// WithConcurrency, WithFailFast, WithScope); else Stats lists it only
	// once something was charged to it.
	defaultScopeDeclared bool
	// idempotencyKey asks for an Idempotency-Key on POST and PATCH.
	idempotencyKey bool
	classifiers    []classify.Func
	observers      []observe.Observer
	log            *slog.Logger
	errs           []error
	// concurrencyZero records a WithConcurrency(0) not overridden since,
	// to say once what it means.
	concurrencyZero bool

	storePolicy store.Policy // WithStore's, checked; zero fields mean the defaults

	slotAgeAlert time.Duration                         // slots.go; 0: defaultSlotAgeAlert
	tenantOf     func(*http.Request) (string, float64) // tenant.go

	meter  *Meter       // meter.go
	prices prices.Table // WithPrices, over the meter's
}

type namedWorkload struct {
	name string
	Workload
}

func (c *config) scope(name string) *Scope {
	c.defaultScopeDeclared = c.defaultScopeDeclared || name == DefaultScope
	for i := range c.scopes {
		if c.scopes[i].Name == name {
			return &c.scopes[i]
		}
	}
	c.scopes = append(c.scopes, Scope{Name: name})
	return &c.scopes[len(c.scopes)-1]
}

// defaultHeadroom is WithHeadroom's default.
const defaultHeadroom = 0.9

// defaultMaxWait is WithMaxWait's default.
const defaultMaxWait = 10 * time.Minute

// WithLimit sets the provider's published limit for DefaultScope, counted
// in requests. Pacer paces at the headroom below it.
func WithLimit(l Limit) Option {
	return func(c *config) { c.scope(DefaultScope).Limit = l }
}

// WithHeadroom sets the share of every published limit that pacer uses, in
// (0, 1]. The default is 0.9: the last tenth absorbs what the client cannot
// see — a provider that counts in windows shorter than the one it
// publishes, a request that arrives later than it was sent and so lands in
// the next window, another client on the same key — and it makes room for
// the default burst, so that any window of the published length stays
// within the published count.
func WithHeadroom(f float64) Option {
	return func(c *config) {
		if !(f > 0 && f <= 1) {
			c.errs = append(c.errs, fmt.Errorf("WithHeadroom(%v): the headroom must be above 0 and at most 1", f))
			return
		}
		c.headroom = f
	}
}

// WithConcurrency caps the calls in flight on DefaultScope at n. A call
// holds its slot until its response body is closed or read to its end.
//
// WithConcurrency(0) means no cap, as the zero Scope.Concurrency does, not
// "admit nothing"; New says so once in the log, in case 0 was a count that
// came out empty. A negative n is a configuration error.
func WithConcurrency(n int) Option {
	return func(c *config) {
		if n < 0 {
			// Said in the option's words, not as the scope's field.
			c.errs = append(c.errs, fmt.Errorf("WithConcurrency(%d): the cap on calls in flight must be at least 0 (0 means no cap)", n))
			return
		}
		c.scope(DefaultScope).Concurrency = n
		c.concurrencyZero = n == 0
	}
}

// ReportError adds err, a bad argument to an option of a package beside the
// root (a provider preset), to the configuration's errors:
// internal/optionerr.Report's hook.
func (c *config) ReportError(err error) {
	if err != nil {
		c.errs = append(c.errs, err)
	}
}

// WithFailFast makes DefaultScope fail a call that cannot be admitted at once
// with a *ThrottledError, instead of waiting for it.
func WithFailFast() Option {
	return func(c *config) { c.scope(DefaultScope).FailFast = true }
}

// WithScope declares a scope, or replaces the one of the same name, so that
// routes can charge requests to it.
func WithScope(s Scope) Option {
	return func(c *config) { *c.scope(s.Name) = s }
}

// WithRoute adds a route. Routes run in the order they were added, each
// seeing what the earlier ones decided.
func WithRoute(r Route) Option {
	return func(c *config) {
		if r == nil {
			c.errs = append(c.errs, fmt.Errorf("WithRoute: the route must not be nil"))
			return
		}
		c.routes = append(c.routes, r)
	}
}

// WithWorkload declares a workload, or replaces the one of the same name.
func WithWorkload(name string, w Workload) Option {
	return func(c *config) {
		for i := range c.workloads {
			if c.workloads[i].name == name {
				c.workloads[i].Workload = w
				return
			}
		}
		c.workloads = append(c.workloads, namedWorkload{name, w})
	}
}

// WithStore keeps the buckets in s instead of this process's memory, so that
// a fleet can share them, and uses s as p says: what to do while s does not
// answer, how long to wait for it, whether to lease tokens and whether to
// share limits with the fleet (see store.Policy). The zero Policy is the
// default. A field of p out of range makes Err name it.
//
// Without a shared store, N instances of a service, each paced to the
// provider's limit, send N times that limit; with one they pace against one
// bucket:
//
//	t := pacer.New(nil, pacer.WithLimit(pacer.PerSecond(100)),
//		pacer.WithStore(redisstore.New(rdb), // or pgstore.New(pool)
//			store.Policy{Instances: 10, Lease: 16, AdaptiveLease: true}))
//
// Package storetest is the conformance suite every store passes, so all of
// them pace alike. A budget holds across an outage: this process keeps its
// own count of each. A provider's remaining count is measured against what
// the whole fleet took from the shared bucket (store.Decision.Taken), so a
// fleet paces at the edge of the limit as one process does; a lease takes
// in batches and reports no such total, and a fleet on one keeps its blind
// pace behind a remaining count. Flush waits for the writes nobody waits
// for (clamps, refunds, settlements), which go out in the background.
func WithStore(s store.Store, p store.Policy) Option {
	return func(c *config) {
		if s == nil {
			c.errs = append(c.errs, fmt.Errorf("WithStore: the store must not be nil"))
			return
		}
		if err := checkStorePolicy(p); err != nil {
			c.errs = append(c.errs, fmt.Errorf("WithStore: %w", err))
			return
		}
		c.store, c.storePolicy = s, p
	}
}

// checkStorePolicy returns an error naming the first field of p out of
// range.
func checkStorePolicy(p store.Policy) error {
	switch {
	case p.OnFailure < store.FallBackLocal || p.OnFailure > store.FailClosed:
		return fmt.Errorf("store.Policy.OnFailure is %v; use store.FallBackLocal, store.FailOpen or store.FailClosed", p.OnFailure)
	case p.Instances < 0:
		return fmt.Errorf("store.Policy.Instances is %d; it must be at least 1, or 0 for 1", p.Instances)
	case p.Instances > 0 && p.OnFailure != store.FallBackLocal:
		return fmt.Errorf("store.Policy.Instances is %d with OnFailure %v; Instances is FallBackLocal's share, so leave it 0", p.Instances, p.OnFailure)
	case p.Timeout < 0:
		return fmt.Errorf("store.Policy.Timeout is %v; it must be positive, or 0 for the default, one second", p.Timeout)
	case p.Lease < 0:
		return fmt.Errorf("store.Policy.Lease is %d; it must be at least 1, or 0 for no lease", p.Lease)
	case p.AdaptiveLease && p.Lease == 0:
		return fmt.Errorf("store.Policy.AdaptiveLease is set with Lease 0; set Lease to the largest lease, at least 1")
	case p.LimitSync < 0:
		return fmt.Errorf("store.Policy.LimitSync is %v; it must be positive, or 0 for no sync", p.LimitSync)
	}
	return nil
}

// SetClock makes the Transport tell time and wait by clk. It is how
// internal/clock.With sets a clock (tests, the simulator) without a clock
// option in the package's API; config is unexported, so callers never see it.
func (c *config) SetClock(clk clock.Clock) {
	if clk == nil {
		c.errs = append(c.errs, fmt.Errorf("clock.With: the clock must not be nil"))
		return
	}
	c.clock = clk
}

// WithMaxWait caps every wait a provider's headers can impose (Retry-After,
// a quota's reset) at d. The default is ten minutes: a server that answers
// "Retry-After: 999999999" must not park a goroutine for 31 years.
func WithMaxWait(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.errs = append(c.errs, fmt.Errorf("WithMaxWait(%v): the maximum wait must be positive", d))
			return
		}
		c.maxWait = d
	}
}

// WithLogger sets where pacer says what it changed on its own, such as a
// limit lowered to what the provider publishes. The default is slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			c.errs = append(c.errs, fmt.Errorf("WithLogger: the logger must not be nil"))
			return
		}
		c.log = l
	}
}

// Options bundles several options into one, applied in order. Provider
// presets return one; options given after it override what it set, since a
// later WithScope, WithLimit or WithWorkload replaces an earlier one.
func Options(opts ...Option) Option {
	return func(c *config) {
		for _, opt := range opts {
			if opt != nil {
				opt(c)
			}
		}
	}
}

// warnings returns what New says once in the log about a configuration that
// is valid but probably not what was meant. What is certainly wrong is an
// error instead.
func (c *config) warnings() []string {
	var out []string
	for _, s := range c.scopes {
		// A per-second count with a larger bucket is how token buckets are
		// published (Shopify's 2/s with 40 at once, Twilio's queue of ten);
		// over a longer period, a burst above the count lets one period
		// carry more than the count, which no window-counting provider
		// allows.
		if l := s.Limit; l.Count > 0 && l.Burst > l.Count && l.Per > time.Second { // a Count below 1 is an error
			rate, burst := l.shape(c.headroom)
			out = append(out, fmt.Sprintf("scope %q: Limit %v has Burst %d above Count %d: in one period of %v pacer may send %v at once and %v more as the bucket refills, above the %d the provider publishes; "+
				"keep Burst at most Count unless the provider keeps a bucket of %d", s.Name, l, l.Burst, l.Count, l.Per, burst, math.Floor(rate*l.Per.Seconds()), l.Count, l.Burst))
		}
	}
	for _, w := range c.workloads {
		if m := w.Budget.Spend.Micros(); m >= implausibleSpend.Micros() && m <= 1<<53 { // beyond, an error says it
			out = append(out, fmt.Sprintf("workload %q: Budget.Spend is %v %s, a figure most likely given in micro-dollars as dollars; "+
				"for micro-dollars, say prices.Micros(n)", w.name, w.Budget.Spend, w.Budget.per()))
		}
	}
	return out
}

// budgetUnit returns b's Unit as the Transport spells it, matched whatever
// its case, or an error if the Transport counts no such unit: no call would
// spend the budget, and a typo would be no cap at all.
func (c *config) budgetUnit(name string, b Budget) (string, error) {
	if !b.capped() || b.money() || b.Unit == "" {
		return b.Unit, nil
	}
	known := []string{UnitRequests}
	for _, s := range c.scopes {
		if s.Unit != "" && !slices.Contains(known, s.Unit) {
			known = append(known, s.Unit)
		}
	}
	for _, k := range known {
		if strings.EqualFold(k, b.Unit) {
			return k, nil
		}
	}
	for _, u := range []string{b.Unit, strings.ToLower(b.Unit)} {
		if c.meterCounts(u) {
			return u, nil
		}
	}
	if b.Stated {
		return b.Unit, nil
	}
	hint := ""
	singular := strings.TrimSuffix(strings.ToLower(b.Unit), "s")
	for _, k := range known {
		if strings.TrimSuffix(strings.ToLower(k), "s") == singular {
			hint = fmt.Sprintf(". Did you mean %q?", k)
		}
	}
	if c.meterCounts(singular + "s") {
		hint = fmt.Sprintf(". Did you mean %q?", singular+"s")
	}
	switch singular {
	case unitUSD, "dollar", "$", "micro-dollar", "micro", "money", "cent":
		hint = ". For money, set Spend: prices.Dollars(…) instead of Limit and Unit"
	}
	quoted := make([]string, len(known))
	for i, k := range known {
		quoted[i] = strconv.Quote(k)
	}
	meter := ""
	if c.meter != nil && c.meter.Tokens != nil {
		meter = " and the Meter's token units"
	}
	return "", fmt.Errorf("workload %q: Budget.Unit %q is not a unit this Transport counts, so no call would spend the budget; "+
		"it counts %s%s; for a unit callers state with ContextWithCost, set Budget.Stated%s",
		name, b.Unit, strings.Join(quoted, ", "), meter, hint)
}

// WithRetry sets the retry policy: see package retry. Retries are on by
// default, with the zero retry.Policy's defaults.
func WithRetry(p retry.Policy) Option {
	return func(c *config) { c.retry, c.retries = p, true }
}

// WithoutRetry turns retries off: every call is sent once.
func WithoutRetry() Option {
	return func(c *config) { c.retries = false }
}

// WithIdempotencyKey makes pacer add an Idempotency-Key to every POST and
// PATCH that carries none, for APIs that honour it (Stripe does, and many
// follow). The key is made once per call and stays the same on every
// attempt, so such calls can be retried safely.
func WithIdempotencyKey() Option {
	return func(c *config) { c.idempotencyKey = true }
}
