package pacer

import (
	"context"
	"time"
)

// ContextWithFailFast returns a context whose calls are never made to wait:
// a call that cannot be admitted at once fails with a *ThrottledError that
// says how long to wait (RetryAfter), as on a scope with FailFast.
func ContextWithFailFast(ctx context.Context) context.Context {
	v := derive(ctx)
	v.failFast = true
	return context.WithValue(ctx, callValuesKey{}, v)
}

// ContextWithMaxWait returns a context whose calls wait at most d for
// admission, each attempt on its own; a wait that cannot end within d fails
// at once, as one past the context's deadline does, with a *ThrottledError
// matching context.DeadlineExceeded. It bounds only pacer's wait, not the
// call: the context's own deadline still bounds everything. A d of zero or
// less removes a bound set by a parent context.
func ContextWithMaxWait(ctx context.Context, d time.Duration) context.Context {
	v := derive(ctx)
	v.maxWait = max(d, 0)
	return context.WithValue(ctx, callValuesKey{}, v)
}

// ContextWithPriority returns a context whose calls are served before the
// calls of their workload with a lower priority, and, in a bounded queue
// (Workload.MaxWaiting), shed after them. The default priority is 0;
// priorities are clamped to [-127, 127]. Priority orders calls within a
// workload only: between workloads, Workload.Reserve decides.
func ContextWithPriority(ctx context.Context, p int) context.Context {
	v := derive(ctx)
	v.priority = max(-maxRank, min(maxRank, p))
	return context.WithValue(ctx, callValuesKey{}, v)
}

// overrides reads the call's overrides from its context's values.
func (c *call) overrides(vals *callValues) {
	if vals == nil {
		c.failFast, c.maxWait, c.priority = false, 0, 0
		if c.tenant != "" {
			c.tenant = ""
		}
		return
	}
	c.failFast, c.maxWait, c.priority = vals.failFast, vals.maxWait, vals.priority
	if c.tenant != vals.tenant {
		c.tenant = vals.tenant
	}
	c.weight = vals.weight
}
