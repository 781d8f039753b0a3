package pacer

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// inFlight returns the calls in flight on the default scope.
func inFlight(tr *Transport) int {
	s := tr.scopes[DefaultScope].shared
	s.mu.Lock()
	defer s.mu.Unlock()
	return int(s.inFlight.Load())
}

func TestSlotIsReleasedExactlyOnceOnEveryPath(t *testing.T) {
	boom := errors.New("connection reset")
	paths := []struct {
		name    string
		respond func(*http.Request) (*http.Response, error)
		use     func(t *testing.T, tr *Transport)
	}{
		{"base transport error", func(*http.Request) (*http.Response, error) { return nil, boom }, func(t *testing.T, tr *Transport) {
			if err := get(tr, context.Background(), "http://api.test/"); !errors.Is(err, boom) {
				t.Fatalf("err = %v, want the base transport's", err)
			}
		}},
		{"panic in base transport", func(*http.Request) (*http.Response, error) { panic("base transport bug") }, func(t *testing.T, tr *Transport) {
			defer func() {
				if recover() == nil {
					t.Fatal("the panic did not reach the caller")
				}
			}()
			get(tr, context.Background(), "http://api.test/")
		}},
		{"body closed before reading", nil, func(t *testing.T, tr *Transport) {
			resp := roundTrip(t, tr)
			if inFlight(tr) != 1 {
				t.Fatal("the slot was released before the body was closed")
			}
			resp.Body.Close()
		}},
		{"body read to EOF, never closed", nil, func(t *testing.T, tr *Transport) {
			resp := roundTrip(t, tr)
			io.Copy(io.Discard, resp.Body)
		}},
		{"body read to EOF then closed twice", nil, func(t *testing.T, tr *Transport) {
			resp := roundTrip(t, tr)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			resp.Body.Close()
		}},
		{"context cancelled while waiting for the slot", nil, func(t *testing.T, tr *Transport) {
			holder := roundTrip(t, tr)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error)
			go func() { done <- get(tr, ctx, "http://api.test/") }()
			synctest.Wait()
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
			if inFlight(tr) != 1 {
				t.Errorf("in flight = %d, want only the holder", inFlight(tr))
			}
			holder.Body.Close()
		}},
		{"deadline that cannot be met", nil, func(t *testing.T, tr *Transport) {
			holder := roundTrip(t, tr)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := get(tr, ctx, "http://api.test/"); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err = %v, want context.DeadlineExceeded", err)
			}
			holder.Body.Close()
		}},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := &stubAPI{clock: SystemClock, respond: p.respond}
				tr := New(api, WithConcurrency(1))
				p.use(t, tr)
				if n := inFlight(tr); n != 0 {
					t.Fatalf("in flight after the call = %d, want 0", n)
				}
				// The slot is usable again.
				api.respond = nil
				mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
			})
		})
	}
}

func roundTrip(t *testing.T, tr *Transport) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://api.test/", nil)
	resp, err := tr.RoundTrip(req)
	mustNotErr(t, err)
	return resp
}

func TestStreamedBodyHoldsItsSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &stubAPI{clock: SystemClock}
		tr := New(api, WithConcurrency(2))
		a, b := roundTrip(t, tr), roundTrip(t, tr)
		admitted := make(chan struct{})
		go func() {
			mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
			close(admitted)
		}()
		time.Sleep(time.Hour)
		select {
		case <-admitted:
			t.Fatal("a third call was admitted while two bodies were open")
		default:
		}
		io.Copy(io.Discard, a.Body) // EOF releases the slot
		<-admitted
		b.Body.Close()
	})
}

func TestUpgradedBodyStaysWritable(t *testing.T) {
	api := &stubAPI{clock: SystemClock, respond: func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusSwitchingProtocols, Body: &readWriteCloser{}, Request: req}, nil
	}}
	tr := New(api, WithConcurrency(1))
	resp := roundTrip(t, tr)
	if _, ok := resp.Body.(io.ReadWriteCloser); !ok {
		t.Fatalf("the body of a 101 response lost its Write: %T", resp.Body)
	}
	resp.Body.Close()
	if inFlight(tr) != 0 {
		t.Error("closing the upgraded body did not release the slot")
	}
}

type readWriteCloser struct{ strings.Builder }

func (*readWriteCloser) Read([]byte) (int, error) { return 0, io.EOF }
func (*readWriteCloser) Close() error             { return nil }

func TestWaitersAreServedByReserveThenArrival(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &stubAPI{clock: SystemClock}
		tr := New(api, WithConcurrency(1),
			WithWorkload("interactive", Workload{Reserve: 0.2}),
			WithWorkload("batch", Workload{}))
		holder := roundTrip(t, tr)
		for _, w := range []string{"batch", "batch", "interactive", "batch", "interactive"} {
			go get(tr, ContextWithWorkload(context.Background(), w), "http://api.test/")
			synctest.Wait() // queued in this order
		}
		holder.Body.Close()
		synctest.Wait()
		var order []string
		for _, r := range api.requests()[1:] {
			order = append(order, r.workload)
		}
		if got, want := strings.Join(order, " "), "interactive interactive batch batch batch"; got != want {
			t.Errorf("served %s, want %s", got, want)
		}
	})
}

func TestReservedSlotsStayFreeForTheirWorkload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &stubAPI{clock: SystemClock}
		tr := New(api, WithConcurrency(10), WithWorkload("interactive", Workload{Reserve: 0.3}))
		batch := ContextWithWorkload(context.Background(), "batch") // unknown: the default workload
		var open []*http.Response
		for range 7 {
			req, _ := http.NewRequestWithContext(batch, http.MethodGet, "http://api.test/", nil)
			resp, err := tr.RoundTrip(req)
			mustNotErr(t, err)
			open = append(open, resp)
		}
		ctx, cancel := context.WithTimeout(batch, time.Minute)
		defer cancel()
		if err := get(tr, ctx, "http://api.test/"); !errors.Is(err, ErrThrottled) {
			t.Fatalf("an eighth batch call: err = %v, want throttled (3 slots are reserved)", err)
		}
		interactive := ContextWithWorkload(context.Background(), "interactive")
		start := time.Now()
		for range 3 {
			req, _ := http.NewRequestWithContext(interactive, http.MethodGet, "http://api.test/", nil)
			resp, err := tr.RoundTrip(req)
			mustNotErr(t, err)
			open = append(open, resp)
		}
		if time.Since(start) != 0 {
			t.Errorf("interactive waited %v for its reserved slots", time.Since(start))
		}
		for _, r := range open {
			r.Body.Close()
		}
	})
}

// TestWaitingForTokensWithASlotFreeDoesNotSpin: a call at the head of the
// queue takes a slot, finds no token, and gives the slot back. Giving it back
// must not wake the call itself, or it would try again at once, forever, and
// time would never move on.
func TestWaitingForTokensWithASlotFreeDoesNotSpin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &stubAPI{clock: SystemClock}
		tr := New(api, WithLimit(Limit{Count: 1, Per: time.Second, Burst: 1}), WithHeadroom(1), WithConcurrency(4))
		start := time.Now()
		for range 3 {
			mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		}
		if waited := time.Since(start); waited != 2*time.Second {
			t.Errorf("three calls at 1/s took %v, want 2 s", waited)
		}
	})
}

// TestSlotsUnderContention hammers a scope of two slots from many
// goroutines, with and without reserved slots: the base transport never sees
// more than two calls at once, and no call is left waiting for a release it
// missed (each call's deadline turns a lost wake-up into a failure).
func TestSlotsUnderContention(t *testing.T) {
	for _, opts := range [][]Option{
		{WithConcurrency(2)},
		{WithConcurrency(2), WithWorkload("interactive", Workload{Reserve: 0.5})},
	} {
		var now, most atomic.Int32
		api := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			n := now.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			return &http.Response{StatusCode: 200, Body: &onClose{f: func() { now.Add(-1) }}, Request: req}, nil
		})
		tr := New(api, opts...)
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				ctx := context.Background()
				if g%2 == 0 {
					ctx = ContextWithWorkload(ctx, "interactive")
				}
				for range 250 {
					ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
					err := get(tr, ctx, "http://api.test/")
					cancel()
					if err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if m := most.Load(); m > 2 {
			t.Errorf("%d calls in flight at once, want at most 2", m)
		}
		if inFlight(tr) != 0 {
			t.Errorf("%d slots still held", inFlight(tr))
		}
	}
}

// onClose is an empty response body that runs f once, when it is read to
// its end or closed, whichever comes first: when pacer releases the slot.
type onClose struct {
	once sync.Once
	f    func()
}

func (b *onClose) Read([]byte) (int, error) { b.once.Do(b.f); return 0, io.EOF }
func (b *onClose) Close() error             { b.once.Do(b.f); return nil }

// slotsOnly charges every call to one scope that caps concurrency and has
// no rate, and fails fast when it is full.
func slotsOnly(n int) []Option {
	return []Option{WithoutRetry(), WithScope(Scope{Name: "slots", Concurrency: n, FailFast: true}),
		WithRoute(func(*http.Request, []Charge) []Charge { return []Charge{{Scope: "slots"}} })}
}

// openCalls sends n calls and keeps their bodies open.
func openCalls(t *testing.T, tr *Transport, ctx context.Context, n int) []*http.Response {
	t.Helper()
	var open []*http.Response
	for range n {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
		resp, err := tr.RoundTrip(req)
		mustNotErr(t, err)
		open = append(open, resp)
	}
	return open
}

func closeAll(open []*http.Response) {
	for _, r := range open {
		r.Body.Close()
	}
}

// A 429 that teaches nothing lowers the cap of a scope that limits only
// concurrency, as it lowers a rate — the provider's real cap may be below
// the configured one (Twilio and Stripe publish none) — and the slots come
// back by time, not by successes.
func TestA429LowersAConcurrencyCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &scriptedAPI{steps: []scripted{{status: http.StatusTooManyRequests}}}
		tr := New(api, slotsOnly(10)...)
		roundTrip(t, tr).Body.Close() // the 429
		open := openCalls(t, tr, context.Background(), 8)
		if err := get(tr, context.Background(), "http://api.test/"); !errors.Is(err, ErrThrottled) {
			t.Fatalf("a ninth call: err = %v, want throttled: 85%% of 10 slots is 8", err)
		}
		closeAll(open)
		time.Sleep(cheapRecovery)
		closeAll(openCalls(t, tr, context.Background(), 10))
	})
}

// A lowered cap lowers the reserved slots in proportion, so a workload
// without a reserve is never left with none.
func TestALoweredCapLeavesRoomForEveryWorkload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &scriptedAPI{steps: []scripted{{status: http.StatusTooManyRequests}, {status: http.StatusTooManyRequests}, {status: http.StatusTooManyRequests}}}
		tr := New(api, append(slotsOnly(4), WithWorkload("interactive", Workload{Reserve: 0.5}))...)
		for range 3 { // three cuts, a second apart: 4 slots at about 0.85³ is 2, of which 1 reserved
			roundTrip(t, tr).Body.Close()
			time.Sleep(time.Second)
		}
		open := openCalls(t, tr, context.Background(), 1)
		if err := get(tr, context.Background(), "http://api.test/"); !errors.Is(err, ErrThrottled) {
			t.Fatalf("a second call of the default workload: err = %v, want throttled", err)
		}
		closeAll(append(open, openCalls(t, tr, ContextWithWorkload(context.Background(), "interactive"), 1)...))
	})
}
