package pacer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/retry"
)

// Call.MaxWait refuses at once a wait known to be too long, and ends at the
// bound a wait whose length is unknown (a slot to be released).
func TestCallMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(nil, WithLimit(Limit{Count: 1, Per: time.Second, Burst: 1}), WithHeadroom(1))
		bg := context.Background()
		mustAcquire(t, tr, bg).Accept()
		start := time.Now()
		_, err := tr.Acquire(ContextWithCall(bg, Call{MaxWait: 500 * time.Millisecond}))
		var te *ThrottledError
		if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) || te.RetryAfter != time.Second || time.Since(start) != 0 {
			t.Fatalf("a 1s wait under a 500ms bound: err = %v after %v, want throttled, DeadlineExceeded, at once", err, time.Since(start))
		}
		// A longer bound lets it wait.
		mustAcquire(t, tr, ContextWithCall(bg, Call{MaxWait: 2 * time.Second})).Accept()
		if w := time.Since(start); w != time.Second {
			t.Errorf("under a 2s bound the call waited %v, want 1s", w)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		tr := New(nil, WithConcurrency(1), WithWorkload("x", Workload{}))
		bg := context.Background()
		holder := mustAcquire(t, tr, bg)
		start := time.Now()
		_, err := tr.Acquire(ContextWithCall(ContextWithWorkload(bg, "x"), Call{MaxWait: 2 * time.Second}))
		if !errors.Is(err, ErrThrottled) || !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 2*time.Second {
			t.Fatalf("waiting on a slot under a 2s bound: err = %v after %v, want DeadlineExceeded after 2s", err, time.Since(start))
		}
		if s := tr.scopes[DefaultScope].shared; s.waiting.Load() != 0 {
			t.Errorf("the call left %d waiters behind", s.waiting.Load())
		}
		holder.Accept()
	})
	// A negative bound allows no wait, as a negative timeout does: the
	// slot's wait fails at once, with the deadline's error.
	synctest.Test(t, func(t *testing.T) {
		tr := New(nil, WithConcurrency(1))
		bg := context.Background()
		holder := mustAcquire(t, tr, bg)
		start := time.Now()
		_, err := tr.Acquire(ContextWithCall(bg, Call{MaxWait: -time.Second}))
		if !errors.Is(err, ErrThrottled) || !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 0 {
			t.Fatalf("waiting on a slot under a negative bound: err = %v after %v, want DeadlineExceeded at once", err, time.Since(start))
		}
		holder.Accept()
	})
}

// A Call merges over its parent context's: what it leaves at zero keeps the
// parent's, the rest replaces it; the workload and costs survive, in
// either order.
func TestCallMerges(t *testing.T) {
	bg := context.Background()
	ctx := ContextWithCall(ContextWithCall(bg, Call{FailFast: true, MaxWait: time.Second, Tenant: "a", Weight: 4}), Call{Priority: 3})
	ctx = ContextWithCost(ContextWithWorkload(ctx, "w"), "tokens", 5)
	v := valuesFrom(ctx)
	if !v.failFast || v.maxWait != time.Second || v.priority != 3 || v.tenant != "a" || v.weight != 4 || v.workload != "w" || len(v.costs) != 1 {
		t.Errorf("values = %+v", v)
	}
	if p := valuesFrom(ContextWithCall(ctx, Call{Priority: 1000})).priority; p != maxRank {
		t.Errorf("priority 1000 became %d, want %d", p, maxRank)
	}
	if v := valuesFrom(ContextWithCall(ctx, Call{MaxWait: 2 * time.Second, Priority: -1})); v.maxWait != 2*time.Second || v.priority != -1 || !v.failFast {
		t.Errorf("a later Call's MaxWait and Priority: values = %+v", v)
	}
	// A new tenant comes with its own weight, zero meaning 1; a weight
	// alone re-weights the parent's tenant.
	if v := valuesFrom(ContextWithCall(ctx, Call{Tenant: "b"})); v.tenant != "b" || tenantWeight(v.weight) != 1 {
		t.Errorf("tenant b kept a's weight: values = %+v", v)
	}
	if v := valuesFrom(ContextWithCall(ctx, Call{Weight: 2})); v.tenant != "a" || v.weight != 2 {
		t.Errorf("re-weighting a: values = %+v", v)
	}
	// The parent's values are its own.
	if v := valuesFrom(ctx); v.priority != 3 || v.tenant != "a" || v.weight != 4 || v.maxWait != time.Second {
		t.Errorf("a child's Call changed its parent's: values = %+v", v)
	}
}

// Within a workload, a call of higher priority is served first; equal
// priorities go in arrival order.
func TestCallPriorityOrdersTheLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(nil, WithConcurrency(1))
		bg := context.Background()
		holder := mustAcquire(t, tr, bg)
		var order []string
		done := make(chan struct{})
		for _, c := range []struct {
			name string
			prio int
		}{{"low", -1}, {"mid1", 0}, {"high", 5}, {"mid2", 0}} {
			go func() {
				p := mustAcquire(t, tr, ContextWithCall(bg, Call{Priority: c.prio}))
				order = append(order, c.name) // one at a time: one slot
				p.Accept()
				done <- struct{}{}
			}()
			synctest.Wait()
		}
		holder.Accept()
		for range 4 {
			<-done
		}
		if got := strings.Join(order, " "); got != "high mid1 mid2 low" {
			t.Errorf("served %s, want high mid1 mid2 low", got)
		}
	})
}

// An attempt past retry.Policy.AttemptTimeout is cut off and retried while
// the call's own deadline is far.
func TestAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var attempts atomic.Int32
		api := &stubAPI{clock: clock.System, respond: func(req *http.Request) (*http.Response, error) {
			if attempts.Add(1) == 1 {
				<-req.Context().Done() // the first attempt hangs
				return nil, fmt.Errorf("hung up: %w", req.Context().Err())
			}
			return okResponse(req), nil
		}}
		tr := New(api, WithRetry(retry.Policy{AttemptTimeout: time.Second, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond}))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
		start := time.Now()
		resp, err := tr.RoundTrip(req)
		mustNotErr(t, err)
		// The attempt's context lives until the body is closed.
		if err := resp.Request.Context().Err(); err != nil {
			t.Errorf("the returned attempt's context ended before its body was closed: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Request.Context().Err() == nil {
			t.Error("the attempt's context outlived its body")
		}
		if n := attempts.Load(); n != 2 {
			t.Errorf("%d attempts, want 2", n)
		}
		if w := time.Since(start); w < time.Second || w > 2*time.Second {
			t.Errorf("the call took %v, want a second and a backoff", w)
		}
	})
	// With one attempt, the error says which bound ended it.
	synctest.Test(t, func(t *testing.T) {
		api := &stubAPI{clock: clock.System, respond: func(req *http.Request) (*http.Response, error) {
			<-req.Context().Done()
			return nil, req.Context().Err()
		}}
		tr := New(api, WithRetry(retry.Policy{MaxAttempts: 1, AttemptTimeout: time.Second}))
		err := get(tr, context.Background(), "http://api.test/")
		if !errors.Is(err, retry.ErrAttemptTimeout) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want retry.ErrAttemptTimeout and not the caller's DeadlineExceeded", err)
		}
	})
	if err := New(nil, WithRetry(retry.Policy{AttemptTimeout: -time.Second})).Err(); err == nil {
		t.Error("a negative AttemptTimeout is accepted")
	}
}
