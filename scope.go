package pacer

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/internal/queue"
	"github.com/pacer-go/pacer/internal/slots"
)

// DefaultScope is the scope every request is charged to unless a route
// says otherwise. WithLimit, WithConcurrency and WithFailFast configure it.
const DefaultScope = "default"

// UnitRequests is the unit of a scope that counts calls.
const UnitRequests = "requests"

// A Scope is a kind of bucket that requests are charged to: a provider's
// account limit, a per-key limit, a tokens-per-minute limit.
//
// A charge may name a Key within the scope; each distinct key gets its own
// bucket and its own concurrency slots, all with the scope's limits. Buckets
// of keys not used for a while are forgotten.
type Scope struct {
	Name string
	// Limit is the provider's published limit for one bucket of this scope;
	// pacer paces at the Transport's headroom below it. The zero Limit paces
	// nothing (the scope may still cap concurrency).
	Limit Limit
	// Unit is what Limit counts: UnitRequests (the default), or a unit such
	// as "tokens" whose cost a route estimates or the caller states.
	Unit string
	// Concurrency caps the calls in flight on one bucket of this scope; zero
	// means no cap. A call holds its slot until its response body is closed
	// or read to the end. On a scope with no Limit, a 429 that teaches
	// nothing lowers the cap as it would lower a rate, and it climbs back
	// by time (the provider's real cap may be lower than the one set here).
	Concurrency int
	// FailFast makes a call that cannot be admitted at once fail with a
	// *ThrottledError instead of waiting.
	FailFast bool
	// Policy is the name of the provider's quota that reports on this scope
	// (a Quota's Name, as ratelimitheader.ParseQuotas gives it). Empty means: the quotas
	// counted in the scope's Unit.
	Policy string
	// Provisional marks Limit as a stand-in until the provider publishes a
	// limit of its own (in RateLimit-Policy, X-RateLimit-Limit and the
	// like): the published limit then replaces it, higher or lower. Without
	// it, a published limit only ever lowers the pace, since a configured
	// limit may be low on purpose (a key shared with another service).
	// Presets set it for the figures they take from the provider's docs,
	// which an organization's own limits may exceed. A published limit
	// whose reset is further off than its window (a day's count beside a
	// per-minute limit) only ever lowers the pace.
	Provisional bool
}

// A Charge says that a request is charged to a scope.
type Charge struct {
	Scope string // a scope's Name
	Key   string // the bucket within the scope; "" for its one shared bucket
	// Cost is the request's estimated cost in the scope's unit. A cost stated
	// with ContextWithCost wins over it. Zero means: one for a scope counted
	// in requests, nothing for any other unit.
	Cost int64
}

// A Route decides which scopes a request is charged to. It appends to
// charges, which holds what earlier routes decided (at first, a charge to
// DefaultScope), and returns the result; it may also drop earlier charges.
// A route must not modify the request.
//
// A request is admitted only when every scope it is charged to admits it, so
// charging an account scope and a per-key scope keeps a fan-out across keys
// within the account's limit.
type Route func(req *http.Request, charges []Charge) []Charge

// configuredScope is a configured Scope as the Transport uses it, with the
// buckets of its keys.
type configuredScope struct {
	Scope
	retryCredit atomic.Int64 // retries the scope may make, in retryUnits
	// configured is the Limit now, New's or SetLimit's, and its pace after
	// headroom; never nil (livelimit.go).
	configured     atomic.Pointer[configuredLimit]
	countsRequests bool // Unit is UnitRequests
	// shares is what the workloads reserve and may use of the scope, as of
	// New or the last SetWorkload; never nil (livelimit.go).
	shares atomic.Pointer[workloadShares]

	shared *bucket // the bucket for the key ""
	clock  clock.Clock

	mu    sync.Mutex
	keyed map[string]*bucket
	looks int
	// forgotten counts the calls admitted on keyed states since forgotten,
	// so that Stats counts every call, at no cost to the hot path.
	forgotten int64

	// For Stats: implicit, New made it as DefaultScope with no option
	// setting it (listed only once something was charged to it); rejected,
	// the answers that refused its calls for the provider's limits.
	implicit bool
	rejected atomic.Int64
}

func newConfiguredScope(s Scope, headroom float64, workloads []*workloadState, clock clock.Clock) *configuredScope {
	if s.Unit == "" {
		s.Unit = UnitRequests
	}
	c := &configuredScope{Scope: s, keyed: make(map[string]*bucket), clock: clock}
	c.countsRequests = s.Unit == UnitRequests // before setLimit, which reads it
	c.setLimit(s.Limit, headroom)
	ws := make([]namedWorkload, len(workloads))
	for i, w := range workloads {
		ws[i] = namedWorkload{w.name, w.Workload}
	}
	c.shares.Store(c.newShares(ws))
	c.shared = newBucket(c, "")
	return c
}

// reservedPrefix starts the names of the buckets pacer keeps for itself in
// a store — budgets, workload caps, alerts — so that no scope of the user's
// can share one.
const reservedPrefix = "pacer:"

func (c *configuredScope) validate() error {
	if c.Name == "" {
		return fmt.Errorf("WithScope: the scope's Name must not be empty")
	}
	if strings.HasPrefix(c.Name, reservedPrefix) {
		return fmt.Errorf("WithScope: scope names starting %q are pacer's own; rename %q", reservedPrefix, c.Name)
	}
	if err := c.Limit.validate(); err != nil {
		return fmt.Errorf("scope %q: %w", c.Name, err)
	}
	if c.Concurrency < 0 {
		return fmt.Errorf("scope %q: Concurrency %d must not be negative", c.Name, c.Concurrency)
	}
	if c.Concurrency > math.MaxInt32 {
		// Calls in flight are counted in 32 bits.
		return fmt.Errorf("scope %q: Concurrency %d is more than pacer counts (%d); use 0 for no cap", c.Name, c.Concurrency, math.MaxInt32)
	}
	return nil
}

// The registry of keyed buckets forgets a bucket no call holds, looking at
// a few every so often, as the memory store does.
const (
	registrySweepEvery = 16
	registrySweepBatch = 64
	// sweepFloor is how many keyed states are kept without sweeping: so few
	// cost little memory, and sweeping them would cost every call.
	sweepFloor = 1024
)

// bucketFor returns the scope's bucket for key, held for the caller until it
// calls release.
func (c *configuredScope) bucketFor(key string) *bucket {
	if key == "" {
		return c.shared
	}
	c.mu.Lock()
	s := c.keyed[key]
	if s == nil {
		s = newBucket(c, key)
		c.keyed[key] = s
	}
	s.holders.Add(1)
	if c.looks++; c.looks >= registrySweepEvery && len(c.keyed) > sweepFloor {
		c.looks = 0
		c.sweep()
	}
	c.mu.Unlock()
	return s
}

// sweep forgets keyed buckets that no call holds. A bucket is only ever
// taken hold of under c.mu, so one seen unheld here stays unheld.
func (c *configuredScope) sweep() {
	looked := 0
	for k, s := range c.keyed {
		// A cooldown outlives its calls: the store's bucket keeps the pause
		// for a fleet, but the reason is worth keeping here too.
		if s.holders.Load() == 0 && s.cooldown.Load() < c.clock.Now().UnixNano() {
			delete(c.keyed, k)
			c.forgotten += s.admitted.Load()
		}
		if looked++; looked == registrySweepBatch {
			return
		}
	}
}

// feedback is what a bucket has learned from the provider (adaptive.go,
// remaining.go, recovery.go). Every atomic field is read on the hot path
// without a lock. It is declared here, beside the bucket that embeds it.
type feedback struct {
	learned   atomic.Pointer[learnedLimit] // a limit the provider published; nil if none
	believed  atomic.Int64                 // UnixNano until which learned holds unless published again
	told      atomic.Pointer[toldPace]     // what a live remaining count allows; nil if none
	recov     atomic.Pointer[recovery]     // the climb back after a cut; nil at the full pace
	recovered atomic.Bool                  // a climb has just ended, not yet reported
	admitted  atomic.Int64                 // calls admitted, to tell which 429s are news
	spent     atomic.Int64                 // units admitted, to tell what was sent since a response
	taken     atomic.Int64                 // the fleet's units taken from a shared bucket, as a take last said (store.Decision.Taken); 0 if none
	cooldown  atomic.Int64                 // UnixNano until which nothing may be sent; 0 if none
	debtRate  atomic.Uint64                // Float64bits of the pace the pause's debt was set at; 0 if none
	owedUntil atomic.Int64                 // UnixNano by which the debts this process's settlements left are repaid (budget.go)
	accepted  acceptance                   // calls the provider accepted, for a cut to measure (recovery.go)

	// Under the bucket's mu:
	cutAt      int64 // the admitted count at the last cut
	quietUntil int64 // UnixNano before which a rejection does not cut again
	reports    remainingReports
}

// bucket is what this process knows of one bucket of a scope beyond its
// tokens: the calls waiting on it and the calls in flight.
type bucket struct {
	feedback
	scope   *configuredScope
	key     string
	holders atomic.Int32 // calls that hold this bucket (keyed buckets only)
	waiting atomic.Int32 // len(queue), readable without the lock

	inFlight   atomic.Int32
	inFlightBy []atomic.Int32 // by workload index

	mu    sync.Mutex
	queue queue.Queue

	ages slots.Ages // the slots in flight by when they were taken

	// A pause the provider asked for beyond the maximum wait (farreset.go).
	farReset atomic.Pointer[farReset]
	// Long windows and the pace that lasts to their reset (longwindow.go).
	long atomic.Pointer[longState]
}

func newBucket(c *configuredScope, key string) *bucket {
	return &bucket{scope: c, key: key, inFlightBy: make([]atomic.Int32, len(c.shares.Load().reserve))}
}

// release lets go of a bucket taken with configuredScope.bucketFor.
func (s *bucket) release() {
	if s.key != "" {
		s.holders.Add(-1)
	}
}
