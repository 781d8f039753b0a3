package pacer_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/internal/fakeclock"
	"github.com/pacer-go/pacer/store"
)

// flakyStore is a memory store that can be made to fail, or to hang until
// its caller gives up, as a remote store does when its server goes away.
type flakyStore struct {
	store.Memory
	down, hang atomic.Bool
	calls      atomic.Int64
}

var errConnRefused = errors.New("dial tcp 127.0.0.1:6379: connection refused")

func newFlakyStore() *flakyStore { return &flakyStore{Memory: *store.NewMemory()} }

func (f *flakyStore) fail(ctx context.Context) error {
	f.calls.Add(1)
	if f.hang.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	if f.down.Load() {
		return errConnRefused
	}
	return nil
}

func (f *flakyStore) Take(ctx context.Context, now time.Time, ds []store.Demand) (store.Decision, error) {
	if err := f.fail(ctx); err != nil {
		return store.Decision{}, err
	}
	return f.Memory.Take(ctx, now, ds)
}

func (f *flakyStore) Refund(ctx context.Context, now time.Time, ds []store.Demand) error {
	if err := f.fail(ctx); err != nil {
		return err
	}
	return f.Memory.Refund(ctx, now, ds)
}

func (f *flakyStore) Clamp(ctx context.Context, now time.Time, d store.Demand, tokens float64) error {
	if err := f.fail(ctx); err != nil {
		return err
	}
	return f.Memory.Clamp(ctx, now, d, tokens)
}

// virtualClock adapts fakeclock to clock.Clock.
type virtualClock struct{ *fakeclock.Clock }

func (v virtualClock) NewTimer(d time.Duration) clock.Timer { return v.Clock.NewTimer(d) }

type okTransport struct{ sent atomic.Int64 }

func (o *okTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	o.sent.Add(1)
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("ok")), Request: req}, nil
}

// failureSetup is a transport over a flaky store with a bucket of 8 that
// hardly refills, failing fast so that a denial is an error, not a wait.
func failureSetup(t *testing.T, p store.Policy, opts ...pacer.Option) (*pacer.Transport, *flakyStore, *okTransport, *fakeclock.Clock) {
	store := newFlakyStore()
	base := &okTransport{}
	clk := fakeclock.New(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	tr := pacer.New(base, append([]pacer.Option{
		pacer.WithLimit(pacer.Limit{Count: 8, Per: time.Hour, Burst: 8}), pacer.WithHeadroom(1),
		pacer.WithFailFast(), pacer.WithStore(store, p), clock.With[pacer.Option](virtualClock{clk}),
	}, opts...)...)
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	return tr, store, base, clk
}

func send(ctx context.Context, tr *pacer.Transport) error {
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://api.example/x", nil)
	resp, err := tr.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
	}
	return err
}

// sendN sends n requests and returns how many were sent.
func sendN(t *testing.T, tr *pacer.Transport, n int) (sent int, errs []error) {
	for range n {
		if err := send(context.Background(), tr); err != nil {
			errs = append(errs, err)
		} else {
			sent++
		}
	}
	return sent, errs
}

func TestStoreFailureFallBackLocal(t *testing.T) {
	tr, store, _, clk := failureSetup(t, store.Policy{Instances: 4})
	if sent, _ := sendN(t, tr, 3); sent != 3 {
		t.Fatalf("with the store up sent %d of 3", sent)
	}
	store.down.Store(true)
	// The local bucket has a quarter of the limit: 2 of 8.
	sent, errs := sendN(t, tr, 5)
	if sent != 2 {
		t.Fatalf("with the store down and 4 instances sent %d, want a quarter of the burst, 2", sent)
	}
	for _, err := range errs {
		if !errors.Is(err, pacer.ErrThrottled) {
			t.Fatalf("a request beyond the local share failed with %v, want ErrThrottled", err)
		}
	}
	// The store is back: after the retry wait, requests use it again; it
	// has the 5 of 8 it had.
	store.down.Store(false)
	clk.Advance(time.Second)
	if sent, _ := sendN(t, tr, 6); sent != 5 {
		t.Fatalf("after the store recovered sent %d, want the 5 it holds", sent)
	}
}

func TestStoreFailureFailOpen(t *testing.T) {
	tr, store, _, _ := failureSetup(t, store.Policy{OnFailure: store.FailOpen})
	store.down.Store(true)
	if sent, errs := sendN(t, tr, 20); sent != 20 {
		t.Fatalf("failing open sent %d of 20: %v", sent, errs)
	}
}

func TestStoreFailureFailClosed(t *testing.T) {
	tr, flaky, base, _ := failureSetup(t, store.Policy{OnFailure: store.FailClosed})
	flaky.down.Store(true)
	sent, errs := sendN(t, tr, 3)
	if sent != 0 || base.sent.Load() != 0 {
		t.Fatalf("failing closed sent %d", sent)
	}
	for _, err := range errs {
		if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("failing closed returned %v; want store.ErrUnavailable with the store's error", err)
		}
	}
}

// A failed store is asked again after a short wait, by one request, not by
// every request in the meantime.
func TestStoreFailureBacksOff(t *testing.T) {
	tr, store, _, clk := failureSetup(t, store.Policy{OnFailure: store.FailOpen})
	store.down.Store(true)
	sendN(t, tr, 10)
	if n := store.calls.Load(); n != 1 {
		t.Fatalf("10 requests while the store is down called it %d times, want 1", n)
	}
	clk.Advance(100 * time.Millisecond)
	sendN(t, tr, 10)
	if n := store.calls.Load(); n != 2 {
		t.Fatalf("after the retry wait the store was called %d times in all, want 2", n)
	}
	clk.Advance(100 * time.Millisecond) // the wait has doubled: not yet
	sendN(t, tr, 1)
	if n := store.calls.Load(); n != 2 {
		t.Fatalf("the retry wait did not grow: %d calls", n)
	}
}

// A store that hangs holds a request no longer than the store timeout, and
// never past the request's own context.
func TestStoreFailureHangingStore(t *testing.T) {
	// In virtual time: the store timeout and the deadlines are timers.
	synctest.Test(t, func(t *testing.T) {
		tr, store, _, _ := failureSetup(t, store.Policy{OnFailure: store.FailOpen, Timeout: 50 * time.Millisecond})
		store.hang.Store(true)

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := send(ctx, tr)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a request whose context ended during the store call returned %v, want DeadlineExceeded", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("the request returned %v after its 10 ms deadline", d)
		}

		start = time.Now()
		if err := send(context.Background(), tr); err != nil {
			t.Fatalf("failing open after a store timeout returned %v", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("the store timeout is 50 ms, the request took %v", d)
		}
	})
}

// A store.Policy field out of range is an error from Err that names the
// field, never corrected in silence.
func TestStorePolicyInvalid(t *testing.T) {
	for _, c := range []struct {
		p     store.Policy
		field string
	}{
		{store.Policy{OnFailure: store.FailClosed + 1}, "OnFailure"},
		{store.Policy{OnFailure: -1}, "OnFailure"},
		{store.Policy{Instances: -1}, "Instances"},
		{store.Policy{OnFailure: store.FailOpen, Instances: 2}, "Instances"},
		{store.Policy{Timeout: -time.Second}, "Timeout"},
		{store.Policy{Lease: -1}, "Lease"},
		{store.Policy{AdaptiveLease: true}, "AdaptiveLease"},
		{store.Policy{LimitSync: -time.Second}, "LimitSync"},
	} {
		err := pacer.New(nil, pacer.WithStore(newFlakyStore(), c.p)).Err()
		if err == nil || !strings.Contains(err.Error(), "store.Policy."+c.field) {
			t.Errorf("WithStore(%+v): Err() = %v, want an error naming store.Policy.%s", c.p, err, c.field)
		}
	}
	if err := pacer.New(nil, pacer.WithStore(nil, store.Policy{})).Err(); err == nil {
		t.Error("WithStore(nil) was accepted")
	}
	// The zero Policy is the default, and valid.
	if err := pacer.New(nil, pacer.WithStore(newFlakyStore(), store.Policy{})).Err(); err != nil {
		t.Errorf("WithStore with the zero Policy: %v", err)
	}
}

// honouringStore is a flaky store that says its calls return once their
// context ends, as pgx's do.
type honouringStore struct{ *flakyStore }

func (honouringStore) HonoursContext() bool { return true }

// A store that honours its context is called on the request's goroutine,
// bounded by the context alone: the store timeout still holds, and the
// goroutine, channel and copies the guard needs for any other store are
// spared.
func TestStoreThatHonoursItsContextIsCalledInline(t *testing.T) {
	// In virtual time: the store timeout and the deadlines are timers.
	synctest.Test(t, func(t *testing.T) {
		honouring := honouringStore{newFlakyStore()}
		tr := pacer.New(&okTransport{}, pacer.WithLimit(pacer.PerSecond(1000)), pacer.WithStore(honouring, store.Policy{OnFailure: store.FailOpen, Timeout: 50 * time.Millisecond}),
			pacer.WithoutRetry())
		honouring.hang.Store(true)
		start := time.Now()
		if err := send(context.Background(), tr); err != nil {
			t.Fatalf("failing open after a store timeout returned %v", err)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("the store timeout is 50 ms, the request took %v", d)
		}

		allocs := func(s store.Store) float64 {
			tr := pacer.New(&okTransport{}, pacer.WithLimit(pacer.PerSecond(1e9)), pacer.WithStore(s, store.Policy{}), pacer.WithoutRetry())
			return testing.AllocsPerRun(100, func() {
				if err := send(context.Background(), tr); err != nil {
					t.Fatal(err)
				}
			})
		}
		if inline, spawned := allocs(honouringStore{newFlakyStore()}), allocs(newFlakyStore()); inline >= spawned {
			t.Errorf("a call to a store that honours its context allocates %v times, to one that does not %v", inline, spawned)
		}
	})
}

// lateContext's deadline has passed, but its timer has not yet fired: Err
// is still nil, as it is for a moment after any deadline.
type lateContext struct{ context.Context }

func (lateContext) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// deadlineStore fails as a client that honours its context does once the
// deadline has passed: at once, with its own timeout error.
type deadlineStore struct{ *store.Memory }

func (deadlineStore) HonoursContext() bool { return true }
func (deadlineStore) Take(ctx context.Context, _ time.Time, _ []store.Demand) (store.Decision, error) {
	return store.Decision{}, errors.New("read tcp 127.0.0.1:6379: i/o timeout")
}

// A store that fails because the request's deadline passed says nothing
// about the store: the request gets its deadline's error, and is not sent
// as the store failure policy would send it, even when the context has not
// marked itself done yet.
func TestStoreFailureAtTheRequestsDeadlineIsTheRequests(t *testing.T) {
	base := &okTransport{}
	tr := pacer.New(base, pacer.WithLimit(pacer.PerSecond(100)), pacer.WithStore(deadlineStore{store.NewMemory()}, store.Policy{OnFailure: store.FailOpen}),
		pacer.WithoutRetry())
	if err := send(lateContext{context.Background()}, tr); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the request's deadline", err)
	}
	if n := base.sent.Load(); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
}
