package pacer

import (
	"fmt"
	"math/bits"
	"net/http"
	"sync"
)

// WithTenant names the tenant of a request whose context names none
// (Call.Tenant), and its weight: by an API key header, a path
// segment, a query parameter. It runs once per attempt, on the request's
// goroutine, and must not modify the request; "" means no tenant. The
// weight is taken as Call.Weight says.
func WithTenant(f func(req *http.Request) (tenant string, weight float64)) Option {
	return func(c *config) {
		if f == nil {
			c.errs = append(c.errs, fmt.Errorf("WithTenant: the function must not be nil"))
			return
		}
		c.tenantOf = f
	}
}

// The range of tenant weights (Call.Weight).
const (
	MinTenantWeight = 1.0 / 1000
	MaxTenantWeight = 1000.0
)

// tenantWeight returns the weight a call of weight w is served by, as
// Call.Weight says.
func tenantWeight(w float64) float64 {
	switch {
	case !(w > 0): // NaN too
		return 1
	case w < MinTenantWeight:
		return MinTenantWeight
	case w > MaxTenantWeight:
		return MaxTenantWeight
	}
	return w
}

// fairQueue tags a workload's waiting calls for self-clocked fair queuing
// (Golestani's SCFQ): a call's tag is its virtual finish, cost/weight after
// the later of the workload's virtual time and its tenant's previous
// finish; the line serves the smallest tag first, and serving a call moves
// the virtual time to its tag. A tenant whose last finish is not after the
// virtual time is forgotten: its next call starts at the virtual time
// anyway. So what is remembered is the tenants with calls waiting, or
// served ahead of the others, whatever the number of tenants.
//
// Virtual times are exact (vtime): however long the process runs, two
// tags differ by what the calls between them cost.
type fairQueue struct {
	mu     sync.Mutex
	active bool  // a call named a tenant
	v      vtime // the virtual time; starts at 1 so that 0 means untagged
	finish map[string]vtime
	looks  int
}

const (
	fairSweepFloor = 1024 // tenants remembered without sweeping
	fairSweepEvery = 16
	fairSweepBatch = 64
)

// A vtime is a virtual time of fair queuing: a count of vtimeUnit, in 128
// bits. Its sums neither round nor overflow: a float64 virtual time stops
// telling a light call's finish from the time it starts at once it has
// grown a few billion times larger than that call, which a long-running
// process's traffic reaches, while a vtime adding the largest step
// (vtimeStep) a billion times a second lasts a thousand years.
type vtime struct{ hi, lo uint64 }

// vtimeUnit is the resolution of a vtime, in units of cost at weight 1:
// the lightest step, one unit at MaxTenantWeight, is about a thousand of
// them, so that weights are told apart to a thousandth.
const vtimeUnit = 1.0 / (1 << 20)

// vtimeStep returns the virtual duration of a call of the cost at the
// weight (within the range): at least one unit, and at most 2^63 units
// (a cost of about 8.8 billion at MinTenantWeight; costs beyond it tie).
func vtimeStep(cost, weight float64) uint64 {
	d := max(cost, 1) / weight / vtimeUnit
	if !(d < 1<<63) { // NaN too, from a NaN cost
		return 1 << 63
	}
	return uint64(d)
}

func (a vtime) add(d uint64) vtime {
	lo, carry := bits.Add64(a.lo, d, 0)
	return vtime{a.hi + carry, lo}
}

func (a vtime) before(b vtime) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }

func (a vtime) isZero() bool { return a == vtime{} }

func laterOf(a, b vtime) vtime {
	if a.before(b) {
		return b
	}
	return a
}

// tag returns the tag of a call of the tenant, or 0 while the workload has
// seen no tenant.
func (f *fairQueue) tag(tenant string, weight, cost float64) vtime {
	named := tenant != ""
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.active {
		if !named {
			return vtime{}
		}
		f.active, f.v, f.finish = true, vtime{lo: 1}, make(map[string]vtime)
	}
	end := laterOf(f.v, f.finish[tenant]).add(vtimeStep(cost, tenantWeight(weight)))
	f.finish[tenant] = end
	if f.looks++; f.looks >= fairSweepEvery && len(f.finish) > fairSweepFloor {
		f.looks = 0
		looked := 0
		for k, end := range f.finish {
			if !f.v.before(end) {
				delete(f.finish, k)
			}
			if looked++; looked == fairSweepBatch {
				break
			}
		}
	}
	return end
}

// served moves the virtual time to the tag of a call admitted from the
// queue.
func (f *fairQueue) served(tag vtime) {
	if tag.isZero() {
		return
	}
	f.mu.Lock()
	f.v = laterOf(f.v, tag)
	f.mu.Unlock()
}
