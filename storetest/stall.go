package storetest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/store"
)

// LearnWhileHung checks, in wall time, that learning from a response never
// delays returning it. The server answers 429 with Retry-After, which
// lowers the shared bucket, after calling hang, which must make every call
// to s block; with a store timeout of 2 s and a request deadline of 200 ms,
// RoundTrip must return the 429 well before the deadline. It calls resume
// before it returns, and takes well under a second.
func LearnWhileHung(t *testing.T, s store.Store, hang, resume func()) {
	t.Helper()
	const deadline = 200 * time.Millisecond
	defer resume()
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		hang()
		return &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"1"}},
			Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
	})
	tr := pacer.New(base, pacer.WithLimit(pacer.PerSecond(100)), pacer.WithStore(s, store.Policy{Timeout: 2 * time.Second}),
		pacer.WithoutRetry())
	took, err := timedGet(tr, deadline)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	t.Logf("with the store hung, RoundTrip returned the 429 after %v (deadline %v, store timeout 2s)", took, deadline)
	if took >= deadline {
		t.Fatalf("with the store hung, RoundTrip returned the 429 after %v, its deadline %v; learning must not wait for the store", took, deadline)
	}
}

// ShortDeadlines checks, in wall time, that the store failure policy takes
// effect although every caller's deadline (50 ms) is shorter than the store
// timeout (300 ms). It calls hang, which must make every call to s block,
// sends requests one after another through a Transport that fails open, and
// checks that they are sent within about the store timeout, and at once
// after that. It calls resume before it returns, and takes about a second.
func ShortDeadlines(t *testing.T, s store.Store, hang, resume func()) {
	t.Helper()
	const storeTimeout, deadline = 300 * time.Millisecond, 50 * time.Millisecond
	var sent atomic.Int64
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		sent.Add(1)
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
	})
	tr := pacer.New(base, pacer.WithLimit(pacer.PerSecond(1000)), pacer.WithStore(s, store.Policy{OnFailure: store.FailOpen, Timeout: storeTimeout}),
		pacer.WithoutRetry())
	get := func() (time.Duration, error) { return timedGet(tr, deadline) }
	if _, err := get(); err != nil {
		t.Fatal(err)
	}
	hang()
	defer resume()
	start := time.Now()
	before := sent.Load()
	for sent.Load() == before && time.Since(start) < 3*time.Second {
		if _, err := get(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("with the store hung, a request returned %v; want its deadline's error or sent", err)
		}
	}
	applied := time.Since(start)
	t.Logf("with the store hung and %v deadlines, FailOpen sent the first request %v after the hang (store timeout %v)", deadline, applied, storeTimeout)
	if sent.Load() == before {
		t.Fatalf("with the store hung and %v deadlines, FailOpen sent nothing in %v", deadline, applied)
	}
	// The check gives up at the store timeout; the caller then waiting
	// ends at its deadline, and the next is sent. A second is slack for a
	// loaded machine.
	if applied > storeTimeout+2*deadline+time.Second {
		t.Errorf("FailOpen applied %v after the store hung; want about the store timeout, %v", applied, storeTimeout)
	}
	if took, err := get(); err != nil || took > deadline {
		t.Errorf("once the store was found down, a request returned %v after %v; want sent at once", err, took)
	}
}

// Budgets checks, in wall time, that a spent budget stays spent while the
// store's server is stopped, and after it starts again, whether or not it
// kept its data (a Redis without persistence loses it). newStore returns a
// store of its own for each Transport; stop and start stop and start the
// stores' server. It also checks what a workload that follows the store
// failure policy (Budget.FollowStoreFailure) may spend during the outage.
// It takes a few seconds: the stores are asked again only after a wait.
func Budgets(t *testing.T, newStore func(t *testing.T) store.Store, stop, start func()) {
	t.Helper()
	const limit = 50
	var sent atomic.Int64
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		sent.Add(1)
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
	})
	transport := func(p store.Policy, follow bool) *pacer.Transport {
		p.Timeout = 200 * time.Millisecond
		tr := pacer.New(base, pacer.WithLimit(pacer.PerSecond(1e6)), pacer.WithStore(newStore(t), p),
			pacer.WithoutRetry(),
			pacer.WithWorkload(pacer.DefaultWorkload, pacer.Workload{
				Budget: pacer.Budget{Limit: limit, Per: 24 * time.Hour, FollowStoreFailure: follow}}))
		if err := tr.Err(); err != nil {
			t.Fatal(err)
		}
		return tr
	}
	send := func(tr *pacer.Transport, n int) (int64, []error) {
		before := sent.Load()
		var errs []error
		for range n {
			req, _ := http.NewRequest(http.MethodGet, "http://api.example/", nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			resp.Body.Close()
		}
		return sent.Load() - before, errs
	}
	spent := transport(store.Policy{}, false) // the default policy
	open := transport(store.Policy{OnFailure: store.FailOpen}, false)
	followLocal := transport(store.Policy{Instances: 2}, true)
	if n, errs := send(spent, limit+1); n != limit || len(errs) != 1 || !errors.Is(errs[0], pacer.ErrBudgetExhausted) {
		t.Fatalf("with the store up sent %d of %d, errors %v; want the budget, %d, then ErrBudgetExhausted", n, limit+1, errs, limit)
	}
	if n, _ := send(open, 10); n != 10 {
		t.Fatalf("with the store up sent %d of 10", n)
	}
	if n, _ := send(followLocal, 10); n != 10 {
		t.Fatalf("with the store up sent %d of 10", n)
	}

	stop()
	stopped := true
	defer func() {
		if stopped {
			start()
		}
	}()
	if n, _ := send(spent, 200); n != 0 {
		t.Errorf("a spent budget sent %d while the store was down", n)
	}
	if n, errs := send(open, 200); n != 0 || len(errs) == 0 || !errors.Is(errs[0], store.ErrUnavailable) {
		t.Errorf("a budget under FailOpen sent %d while the store was down (errors %.1v); want none, ErrStoreUnavailable", n, errs)
	}
	// Half the budget for this process, of which it spent 10 already.
	if n, _ := send(followLocal, 200); n != limit/2-10 {
		t.Errorf("a budget following FallBackLocal with 2 instances sent %d while the store was down, want %d", n, limit/2-10)
	}

	start()
	stopped = false
	// Until the guard asks the store again, the budget is refused as
	// unavailable; after, it is refused as spent.
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, errs := send(spent, 1)
		if n != 0 {
			t.Fatalf("after the store's server restarted, a spent budget sent a request")
		}
		if errors.Is(errs[0], pacer.ErrBudgetExhausted) {
			break
		}
		if !errors.Is(errs[0], store.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("after the store's server restarted, a spent budget returned %v", errs[0])
		}
		time.Sleep(50 * time.Millisecond) // the guard waits before it asks again
	}
	if n, _ := send(spent, 200); n != 0 {
		t.Errorf("after the store's server restarted, a spent budget sent %d", n)
	}
}
