package pacer

import (
	"fmt"
	"net/http"
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

// The range of tenant weights, as Call.Weight states it: 1/1000 to 1000.
const (
	minTenantWeight = 1.0 / 1000
	maxTenantWeight = 1000.0
)

// tenantWeight returns the weight a call of weight w is served by, as
// Call.Weight says.
func tenantWeight(w float64) float64 {
	switch {
	case !(w > 0): // NaN too
		return 1
	case w < minTenantWeight:
		return minTenantWeight
	case w > maxTenantWeight:
		return maxTenantWeight
	}
	return w
}
