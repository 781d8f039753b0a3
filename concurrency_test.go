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

	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/internal/pace"
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
				api := &stubAPI{clock: clock.System, respond: p.respond}
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
		api := &stubAPI{clock: clock.System}
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
	api := &stubAPI{clock: clock.System, respond: func(req *http.Request) (*http.Response, error) {
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
		api := &stubAPI{clock: clock.System}
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

// A reserve is work-conserving: while its owner has nothing waiting, other
// workloads borrow its slots, so a scope's slots never sit idle while calls
// wait for them. (They once did: with Concurrency 2 and a reserve of 0.3,
// batch never had more than one call in flight.)
func TestReservedSlotsAreLentWhileTheirOwnerIsIdle(t *testing.T) {
	for _, tc := range []struct {
		slots   int
		reserve float64
	}{{10, 0.3}, {2, 0.3}, {2, 0.5}, {1, 1}} {
		synctest.Test(t, func(t *testing.T) {
			tr := New(&stubAPI{clock: clock.System}, WithConcurrency(tc.slots), WithoutRetry(), WithFailFast(),
				WithWorkload("interactive", Workload{Reserve: tc.reserve}), WithWorkload("batch", Workload{}))
			mustNotErr(t, tr.Err())
			open := openCalls(t, tr, ContextWithWorkload(context.Background(), "batch"), tc.slots)
			if err := get(tr, context.Background(), "http://api.test/"); !errors.Is(err, ErrThrottled) {
				t.Errorf("%d slots, reserve %v: a call past the cap: err = %v, want throttled", tc.slots, tc.reserve, err)
			}
			closeAll(open)
		})
	}
}

// A lent slot comes back to its owner when the borrower's call ends: the
// owner is first in line, before a borrower that queued earlier.
func TestAnOwnerIsFirstInLineForItsLentSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &stubAPI{clock: clock.System}
		tr := New(api, WithConcurrency(10), WithoutRetry(), WithWorkload("interactive", Workload{Reserve: 0.3}), WithWorkload("batch", Workload{}))
		batch := ContextWithWorkload(context.Background(), "batch")
		open := openCalls(t, tr, batch, 10)
		batchCall := startCall(tr, batch)
		time.Sleep(time.Second)
		start := time.Now()
		interactiveCall := startCall(tr, ContextWithWorkload(context.Background(), "interactive"))
		time.Sleep(time.Second)
		open[0].Body.Close() // the borrower's call ends
		interactive := <-interactiveCall
		mustNotErr(t, interactive.err)
		if waited := time.Since(start); waited != time.Second {
			t.Errorf("interactive waited %v, want the second until a slot came back", waited)
		}
		synctest.Wait()
		select {
		case <-batchCall:
			t.Fatal("the batch call that queued first took the slot")
		default:
		}
		open[1].Body.Close() // now batch's turn
		b := <-batchCall
		mustNotErr(t, b.err)
		closeAll(append(open[2:], interactive.resp, b.resp))
	})
}

type callResult struct {
	resp *http.Response
	err  error
}

// startCall sends a GET in the background; its result, body open, comes on
// the channel returned.
func startCall(tr *Transport, ctx context.Context) <-chan callResult {
	done := make(chan callResult, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
		resp, err := tr.RoundTrip(req)
		done <- callResult{resp, err}
	}()
	return done
}

// With two reserving workloads, the one with the larger Reserve — served
// first in general — does not keep the other's lent slots: a workload using
// fewer slots than it reserves comes first.
func TestALargerReserveDoesNotKeepALentSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &stubAPI{clock: clock.System}
		tr := New(api, WithConcurrency(10), WithoutRetry(),
			WithWorkload("a", Workload{Reserve: 0.5}), WithWorkload("b", Workload{Reserve: 0.3}))
		a, b := ContextWithWorkload(context.Background(), "a"), ContextWithWorkload(context.Background(), "b")
		open := openCalls(t, tr, a, 10) // b is idle: a borrows its 3 slots and the 2 free
		var as, bs []<-chan callResult
		for range 5 {
			as = append(as, startCall(tr, a))
		}
		synctest.Wait()
		for range 4 {
			bs = append(bs, startCall(tr, b))
			synctest.Wait()
		}
		for i := range 4 { // four slots come back: b's three reserved, then a's turn
			open[i].Body.Close()
			synctest.Wait()
		}
		var got []*http.Response
		served := func(calls []<-chan callResult) (n int) {
			for _, c := range calls {
				select {
				case r := <-c:
					mustNotErr(t, r.err)
					got = append(got, r.resp)
					n++
				default:
				}
			}
			return n
		}
		if na, nb := served(as), served(bs); na != 1 || nb != 3 {
			t.Errorf("four slots came back: a was served %d, b %d; want b its 3 reserved, then a 1", na, nb)
		}
		closeAll(append(open[4:], got...))
		synctest.Wait()
		served(as) // the other four of a, and the last of b
		served(bs)
		closeAll(got)
	})
}

// Reserves of 0.5 and 0.5 on one slot once each rounded to the one slot, and
// no call was ever admitted. Reserves round down: here they hold none, and
// every workload is admitted in turn.
func TestReservesRoundDownAndNeverDeadlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(&stubAPI{clock: clock.System}, WithConcurrency(1),
			WithWorkload("a", Workload{Reserve: 0.5}), WithWorkload("b", Workload{Reserve: 0.5}))
		mustNotErr(t, tr.Err())
		for _, w := range []string{"a", "b", DefaultWorkload} {
			ctx, cancel := context.WithTimeout(ContextWithWorkload(context.Background(), w), time.Minute)
			if err := get(tr, ctx, "http://api.test/"); err != nil {
				t.Errorf("workload %s: %v", w, err)
			}
			cancel()
		}
		for _, tc := range []struct {
			reserve float64
			slots   int
			want    int
		}{{0.5, 1, 0}, {0.3, 2, 0}, {0.5, 2, 1}, {0.3, 10, 3}, {0.25, 10, 2}, {0.7, 10, 7}, {1, 3, 3}} {
			if got := reservedSlots(tc.reserve, tc.slots); got != tc.want {
				t.Errorf("a reserve of %v of %d slots holds %d, want %d", tc.reserve, tc.slots, got, tc.want)
			}
		}
	})
}

// TestWaitingForTokensWithASlotFreeDoesNotSpin: a call at the head of the
// queue takes a slot, finds no token, and gives the slot back. Giving it back
// must not wake the call itself, or it would try again at once, forever, and
// time would never move on.
func TestWaitingForTokensWithASlotFreeDoesNotSpin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &stubAPI{clock: clock.System}
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
		{WithConcurrency(2), WithWorkload("interactive", Workload{})},
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
// the configured one (Twilio and Stripe publish none) — to what the scope
// held when it was refused, but by half at most in one refusal: a call
// refused alone halves a cap of 10 to 5. The slots come back by time, not
// by successes.
func TestA429LowersAConcurrencyCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &scriptedAPI{steps: []scripted{{status: http.StatusTooManyRequests}}}
		tr := New(api, slotsOnly(10)...)
		roundTrip(t, tr).Body.Close() // the 429
		open := openCalls(t, tr, context.Background(), 5)
		if err := get(tr, context.Background(), "http://api.test/"); !errors.Is(err, ErrThrottled) {
			t.Fatalf("a sixth call: err = %v, want throttled: a refusal halves 10 slots at most, to 5", err)
		}
		closeAll(open)
		time.Sleep(pace.CheapRecovery)
		closeAll(openCalls(t, tr, context.Background(), 10))
	})
}

// A refusal of a call sent while others were in flight says the server
// held no more than those: the cap drops to them at once, not by a factor
// per refusal, and the refusals of one burst cut to the least of them. A
// refusal answered after the cut, of a call sent with more in flight,
// lowers it no further. Calls may reach the server in another order than
// they took their slots in (reordered, the first sent arrives last): what
// is in flight when the refusal is read bounds the cap as well.
func TestARefusalLowersTheCapToWhatWasHeld(t *testing.T) {
	for _, reordered := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			// The server holds 3 at once, each for a second; beyond them
			// it answers 503 at once, as nginx's limit_conn does.
			srv := &heldCalls{cap: 3, hold: time.Second}
			tr := New(srv, slotsOnly(8)...)
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() {
					ctx := context.Background()
					if reordered {
						ctx = context.WithValue(ctx, lateBy{}, time.Duration(8-i)*2*time.Millisecond)
					}
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
					if resp, err := tr.RoundTrip(req); err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				})
				time.Sleep(time.Millisecond) // one after the other: each sent with those before it in flight
			}
			wg.Wait()
			if st := tr.Stats().Scopes[0]; st.ConcurrencyNow != 3 {
				t.Fatalf("reordered %v: after a burst of 8 at a server that holds 3: cap %d of %d, want 3 (why %q)", reordered, st.ConcurrencyNow, st.Concurrency, st.Why)
			}
		})
	}
}

// lateBy is a context key: how long heldCalls' request takes to arrive.
type lateBy struct{}

// heldCalls is a server that holds at most cap calls at once, each for
// hold, and answers 503 at once beyond them; a request whose context says
// lateBy reaches it that late.
type heldCalls struct {
	cap  int32
	hold time.Duration
	held atomic.Int32
}

func (h *heldCalls) RoundTrip(req *http.Request) (*http.Response, error) {
	if d, ok := req.Context().Value(lateBy{}).(time.Duration); ok {
		time.Sleep(d)
	}
	if h.held.Add(1) > h.cap {
		h.held.Add(-1)
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
	}
	time.Sleep(h.hold)
	h.held.Add(-1)
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
}

// A lowered cap lowers the reserved slots in proportion; a workload without
// a reserve borrows the idle ones, up to the lowered cap.
func TestALoweredCapLowersTheReserves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &scriptedAPI{steps: []scripted{{status: http.StatusTooManyRequests}}}
		tr := New(api, append(slotsOnly(4), WithWorkload("interactive", Workload{Reserve: 0.5}))...)
		roundTrip(t, tr).Body.Close() // a call refused alone: 4 slots halved to 2, of which 1 reserved
		time.Sleep(time.Second)
		open := openCalls(t, tr, context.Background(), 2)
		if err := get(tr, context.Background(), "http://api.test/"); !errors.Is(err, ErrThrottled) {
			t.Fatalf("a third call: err = %v, want throttled at the lowered cap", err)
		}
		closeAll(open[1:])
		interactive := openCalls(t, tr, ContextWithWorkload(context.Background(), "interactive"), 1)
		if err := get(tr, context.Background(), "http://api.test/"); !errors.Is(err, ErrThrottled) {
			t.Fatalf("a call past the lowered cap: err = %v, want throttled", err)
		}
		closeAll(append(open[:1], interactive...))
	})
}
