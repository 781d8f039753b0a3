package pacer

import (
	"context"
	"fmt"
	"net/http"
	"sync"
)

// ContextWithTenant returns a context whose calls belong to the named
// tenant (a customer, an API key of yours) with the given weight; a weight
// of zero or less means 1. Within a workload, while calls of several
// tenants wait, they are served by weighted fair queuing: each tenant gets
// its weight's share of what the workload is given, so one tenant's flood
// waits behind itself and not in front of the others. A tenant alone takes
// everything. Priority (ContextWithPriority) and Reserve still come first.
//
// Once a workload has seen a tenant, its calls that name none share one
// tenant, "". Tenant keys stay inside pacer's queues: no Event, metric or
// log line carries them. What a workload remembers of its tenants is
// bounded by the calls waiting, not by how many tenants there are.
func ContextWithTenant(ctx context.Context, tenant string, weight float64) context.Context {
	v := derive(ctx)
	v.tenant, v.weight = tenant, weight
	return context.WithValue(ctx, callValuesKey{}, v)
}

// WithTenant names the tenant of a request whose context names none
// (ContextWithTenant), and its weight: by an API key header, a path
// segment, a query parameter. It runs once per attempt, on the request's
// goroutine, and must not modify the request; "" means no tenant.
func WithTenant(f func(req *http.Request) (tenant string, weight float64)) Option {
	return func(c *config) {
		if f == nil {
			c.errs = append(c.errs, fmt.Errorf("WithTenant: the function must not be nil"))
			return
		}
		c.tenantOf = f
	}
}

// fairQueue tags a workload's waiting calls for self-clocked fair queuing
// (Golestani's SCFQ): a call's tag is its virtual finish, cost/weight after
// the later of the workload's virtual time and its tenant's previous
// finish; the line serves the smallest tag first, and serving a call moves
// the virtual time to its tag. A tenant whose last finish is not after the
// virtual time is forgotten: its next call starts at the virtual time
// anyway. So what is remembered is the tenants with calls waiting, or
// served ahead of the others, whatever the number of tenants.
type fairQueue struct {
	mu     sync.Mutex
	active bool    // a call named a tenant
	v      float64 // the virtual time; starts at 1 so that 0 means untagged
	finish map[string]float64
	looks  int
}

const (
	fairSweepFloor = 1024 // tenants remembered without sweeping
	fairSweepEvery = 16
	fairSweepBatch = 64
)

// tag returns the tag of a call of the tenant, or 0 while the workload has
// seen no tenant.
func (f *fairQueue) tag(tenant string, weight, cost float64) float64 {
	named := tenant != ""
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.active {
		if !named {
			return 0
		}
		f.active, f.v, f.finish = true, 1, make(map[string]float64)
	}
	if !(weight > 0) {
		weight = 1
	}
	end := max(f.v, f.finish[tenant]) + max(cost, 1)/weight
	f.finish[tenant] = end
	if f.looks++; f.looks >= fairSweepEvery && len(f.finish) > fairSweepFloor {
		f.looks = 0
		looked := 0
		for k, end := range f.finish {
			if end <= f.v {
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
func (f *fairQueue) served(tag float64) {
	if tag == 0 {
		return
	}
	f.mu.Lock()
	f.v = max(f.v, tag)
	f.mu.Unlock()
}
