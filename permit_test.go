package pacer

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/internal/pace"
	"github.com/pacer-go/pacer/observe"
)

func mustAcquire(t *testing.T, tr *Transport, ctx context.Context, charges ...Charge) *Permit {
	t.Helper()
	p, err := tr.Acquire(ctx, charges...)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	return p
}

// A permit rejected with a wait pauses its scope as a 429 with that
// Retry-After does: the next call of either kind goes when the pause ends.
func TestPermitRejectedPausesLikeRetryAfter(t *testing.T) {
	pauseAfter := func(t *testing.T, reject func(tr *Transport)) time.Duration {
		var d time.Duration
		synctest.Test(t, func(t *testing.T) {
			api := &stubAPI{clock: clock.System, respond: func(req *http.Request) (*http.Response, error) {
				resp := okResponse(req)
				resp.StatusCode = http.StatusTooManyRequests
				resp.Header.Set("Retry-After", "2")
				return resp, nil
			}}
			tr := New(api, WithLimit(PerSecond(100)), WithoutRetry())
			reject(tr)
			start := time.Now()
			mustAcquire(t, tr, context.Background()).Accept()
			d = time.Since(start)
		})
		return d
	}
	byPermit := pauseAfter(t, func(tr *Transport) {
		mustAcquire(t, tr, context.Background()).Reject(2 * time.Second)
	})
	byResponse := pauseAfter(t, func(tr *Transport) {
		resp := roundTrip(t, tr)
		resp.Body.Close()
	})
	// The permit's pause does not cut the pace (Rejected's doc): its
	// restart waits one token at the full pace. The response's 429 cuts
	// it too, with no history to measure on (pace.ShortHistoryCut): its
	// restart waits one token at the cut's pace, from an empty bucket.
	token := time.Second / 90
	cutToken := time.Duration(float64(token) / pace.ShortHistoryCut)
	if byPermit < 2*time.Second || byPermit > 2*time.Second+token+time.Millisecond {
		t.Errorf("after Reject(2s) the next call waited %v, want 2s and a token at the full pace (%v)", byPermit, token)
	}
	if byResponse < 2*time.Second || byResponse > 2*time.Second+cutToken+time.Millisecond {
		t.Errorf("after a 429 with Retry-After: 2 the next call waited %v, want 2s and a token at the cut's pace (%v)", byResponse, cutToken)
	}
}

// A bare rejection cuts the rate as a bare 429 does, an acceptance counts
// as a 200 does, and a dropped call teaches nothing.
func TestPermitRejectedWithoutWaitCutsRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		byPermit := New(nil, WithLimit(PerSecond(100)))
		api := &scriptedAPI{steps: []scripted{{status: http.StatusTooManyRequests}, {status: http.StatusOK}}}
		byResponse := New(api, WithLimit(PerSecond(100)), WithoutRetry())
		p, r := byPermit.scopes[DefaultScope].shared, byResponse.scopes[DefaultScope].shared

		mustAcquire(t, byPermit, context.Background()).Reject(0)
		roundTrip(t, byResponse).Body.Close()
		if fp, fr := p.rateFactor(), r.rateFactor(); fp >= 1 || fp != fr {
			t.Fatalf("rate factor after a bare rejection = %v, after a bare 429 %v; want them equal and below 1", fp, fr)
		}
		time.Sleep(time.Second)
		mustAcquire(t, byPermit, context.Background()).Accept()
		roundTrip(t, byResponse).Body.Close()
		if fp, fr := p.rateFactor(), r.rateFactor(); fp != fr {
			t.Errorf("rate factor after an acceptance = %v, after a 200 %v; want them equal", fp, fr)
		}
		before := p.rateFactor()
		mustAcquire(t, byPermit, context.Background()).Drop()
		if p.rateFactor() != before {
			t.Errorf("a dropped call changed the rate factor")
		}
	})
}

// An end releases the slot once, however often it is called; a permit never
// ended keeps its slot.
func TestPermitDoneReleasesOnce(t *testing.T) {
	tr := New(nil, WithConcurrency(1))
	ctx := context.Background()
	p := mustAcquire(t, tr, ctx)
	p.Accept()
	// The pooled call p held most likely serves q now (sync.Pool hands back
	// what was put last, but under the race detector): a second end of p
	// must not touch it.
	q := mustAcquire(t, tr, ctx)
	p.Accept()
	p.Reject(time.Second) // ignored: no pause either
	var nilPermit *Permit
	nilPermit.Accept()
	if n := inFlight(tr); n != 1 {
		t.Fatalf("in flight after a double end and a new permit = %d, want 1", n)
	}
	if _, err := tr.TryAcquire(ctx); !errors.Is(err, ErrThrottled) {
		t.Fatalf("a second end released a slot twice: a second permit was granted (err = %v)", err)
	}
	// Never ended: the slot stays held.
	var te *ThrottledError
	if _, err := tr.TryAcquire(ctx); !errors.As(err, &te) || te.Reason != observe.ReasonConcurrency {
		t.Fatalf("err = %v, want a concurrency refusal", err)
	}
	q.Accept()
	if n := inFlight(tr); n != 0 {
		t.Errorf("in flight at the end = %d, want 0", n)
	}
}

// Concurrent TryAcquires never get more than the bucket holds.
func TestTryAcquireGrantsNoTokenTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(nil, WithLimit(Limit{Count: 50, Per: time.Hour, Burst: 50}), WithHeadroom(1))
		var granted atomic.Int32
		var wg sync.WaitGroup
		for range 500 {
			wg.Go(func() {
				if p, err := tr.TryAcquire(context.Background()); err == nil {
					granted.Add(1)
					p.Accept()
				} else if !errors.Is(err, ErrThrottled) {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if g := granted.Load(); g != 50 {
			t.Errorf("granted %d permits from a bucket of 50", g)
		}
	})
}

// A permit and a request draw on the same scopes through the same
// admission: what one takes, the other waits for.
func TestPermitAndRequestShareAdmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &stubAPI{clock: clock.System}
		tr := New(api, WithLimit(Limit{Count: 1, Per: time.Second, Burst: 1}), WithHeadroom(1))
		p := mustAcquire(t, tr, context.Background())
		err := get(tr, ContextWithCall(context.Background(), Call{FailFast: true}), "http://api.test/")
		var te *ThrottledError
		if !errors.As(err, &te) || te.Reason != observe.ReasonRate || te.RetryAfter != time.Second {
			t.Fatalf("a request after the permit took the token: err = %v, want throttled on rate, retry after 1s", err)
		}
		p.Accept()
		start := time.Now()
		mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		if _, err := tr.TryAcquire(context.Background()); !errors.Is(err, ErrThrottled) {
			t.Fatalf("a permit after the request took the token: err = %v", err)
		}
		if w := time.Since(start); w != time.Second {
			t.Errorf("the request waited %v, want 1s", w)
		}
	})
}

// TryAcquire never jumps the queue: with a call waiting, it is refused even
// when the waiter's turn has come but it has not run yet.
func TestTryAcquireDoesNotQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(nil, WithConcurrency(1))
		holder := mustAcquire(t, tr, context.Background())
		done := make(chan *Permit)
		go func() { done <- mustAcquire(t, tr, context.Background()) }()
		synctest.Wait()
		// What holds the queue is the cap, not a rate the scope has not got:
		// the reason says so whether or not a call waits.
		if _, err := tr.TryAcquire(context.Background()); asThrottled(t, err).Reason != observe.ReasonConcurrency {
			t.Errorf("with a call waiting: err = %v, want a concurrency refusal", err)
		}
		holder.Accept()
		(<-done).Accept()
		if s := tr.scopes[DefaultScope].shared; s.waiting.Load() != 0 {
			t.Errorf("TryAcquire left %d calls queued", s.waiting.Load())
		}
	})
}

func TestAcquireBadInput(t *testing.T) {
	tr := New(nil)
	if _, err := tr.Acquire(context.Background(), Charge{Scope: "nope"}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("undeclared scope: err = %v", err)
	}
	//lint:ignore SA1012 a nil context is the bad input under test
	if _, err := tr.Acquire(nil); err == nil { //nolint:staticcheck
		t.Error("nil context: no error")
	}
	bad := New(nil, WithHeadroom(2))
	if _, err := bad.TryAcquire(context.Background()); err == nil || err != bad.Err() {
		t.Errorf("configuration error: err = %v, want %v", err, bad.Err())
	}
}

// A permit carries its scope, key, workload and cost, and a cost settled
// after the fact is what the bucket keeps.
func TestPermitCarriesChargeAndSettles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tokens := Scope{Name: "tpm", Unit: "tokens", Limit: Limit{Count: 1000, Per: time.Second, Burst: 1000}}
		tr := New(nil, WithScope(tokens), WithHeadroom(1), WithWorkload("batch", Workload{}))
		ctx := ContextWithWorkload(context.Background(), "batch")
		p := mustAcquire(t, tr, ctx, Charge{Scope: "tpm", Key: "k1", Cost: 100})
		if p.Scope != "tpm" || p.Key != "k1" || p.Workload != "batch" || p.Cost != 100 {
			t.Fatalf("permit = %+v", p)
		}
		// It cost 900: the bucket holds 100, and a call of 200 waits 100ms.
		p.Settle("tokens", 900).Accept()
		start := time.Now()
		mustAcquire(t, tr, ctx, Charge{Scope: "tpm", Key: "k1", Cost: 200}).Accept()
		if w := time.Since(start); w != 100*time.Millisecond {
			t.Errorf("after settling at 900, a call of 200 waited %v, want 100ms", w)
		}
		// It cost 50: 150 comes back, and a call of 150 goes at once.
		q := mustAcquire(t, tr, ctx, Charge{Scope: "tpm", Key: "k1", Cost: 200})
		q.Settle("tokens", 50).Accept()
		if _, err := tr.TryAcquire(ctx, Charge{Scope: "tpm", Key: "k1", Cost: 150}); err != nil {
			t.Errorf("after settling at 50, a call of 150: %v", err)
		}
	})
}

// A reservation says how long until its call may go; cancelled, it gives
// back what it took, so the next reservation is not pushed back by it.
func TestReservationDelayAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(nil, WithLimit(Limit{Count: 1, Per: time.Second, Burst: 1}), WithHeadroom(1))
		ctx := context.Background()
		r1, err := tr.Reserve(ctx)
		mustNotErr(t, err)
		r2, err := tr.Reserve(ctx)
		mustNotErr(t, err)
		if r1.Delay() != 0 || r2.Delay() != time.Second {
			t.Fatalf("delays = %v, %v; want 0, 1s", r1.Delay(), r2.Delay())
		}
		r2.Cancel()
		r2.Cancel() // once only
		if r2.OK() {
			t.Error("a cancelled reservation is OK")
		}
		r3, err := tr.Reserve(ctx)
		mustNotErr(t, err)
		if r3.Delay() != time.Second {
			t.Fatalf("after a cancel the next reservation waits %v, want 1s (the cancelled one gave back its token)", r3.Delay())
		}
		if _, err := r2.Wait(ctx); err == nil {
			t.Error("Wait on a cancelled reservation succeeded")
		}
		start := time.Now()
		p, err := r3.Wait(ctx)
		mustNotErr(t, err)
		if w := time.Since(start); w != time.Second {
			t.Errorf("Wait took %v, want 1s", w)
		}
		p.Accept()
		r1.Cancel()
		// r1's token is back, r3's was spent: the bucket holds one token.
		q, err := tr.TryAcquire(ctx)
		mustNotErr(t, err)
		q.Accept()
		if _, err := tr.TryAcquire(ctx); !errors.Is(err, ErrThrottled) {
			t.Errorf("a second token appeared: err = %v", err)
		}
	})
}

// A reservation whose delay outlasts the deadline fails at once and gives
// its token back; the bucket owes at most one burst.
func TestReservationDeadlineAndDebt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(nil, WithLimit(Limit{Count: 2, Per: time.Second, Burst: 2}), WithHeadroom(1))
		bg := context.Background()
		var rs []*Reservation
		for range 4 { // two in hand, two owed: one burst
			r, err := tr.Reserve(bg)
			mustNotErr(t, err)
			rs = append(rs, r)
		}
		if d := rs[3].Delay(); d != time.Second {
			t.Fatalf("fourth reservation's delay = %v, want 1s", d)
		}
		if _, err := tr.Reserve(bg); !errors.Is(err, ErrThrottled) {
			t.Fatalf("a reservation beyond one burst owed: err = %v, want ErrThrottled", err)
		}
		ctx, cancel := context.WithTimeout(bg, 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		if _, err := rs[3].Wait(ctx); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 0 {
			t.Fatalf("Wait past the deadline: err = %v after %v, want DeadlineExceeded at once", err, time.Since(start))
		}
		// Its token came back: a new reservation waits as the fourth did.
		r, err := tr.Reserve(bg)
		mustNotErr(t, err)
		if d := r.Delay(); d != time.Second {
			t.Errorf("after the failed Wait a reservation waits %v, want 1s", d)
		}
		for _, r := range append(rs[:3], r) {
			r.Cancel()
		}
	})
}

// A permit never ended keeps its slot, and the slot-age alert reports it, as
// it reports an unclosed body.
func TestPermitNeverDoneIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var held []observe.Event
		tr := New(nil, WithConcurrency(2), WithSlotAgeAlert(time.Second), WithObserver(observe.Func(func(e observe.Event) {
			if e.Kind == observe.EventSlotHeld {
				held = append(held, e)
			}
		})))
		mustAcquire(t, tr, context.Background()) // never ended
		time.Sleep(3 * time.Second)
		tr.Stats()
		if len(held) != 1 || held[0].Scope != DefaultScope {
			t.Errorf("slot-held events = %+v, want one on %q", held, DefaultScope)
		}
		if n := inFlight(tr); n != 1 {
			t.Errorf("in flight = %d, want the forgotten permit's slot still held", n)
		}
	})
}

// A reserved call is counted once, when it takes its tokens, not again when
// Wait admits it: learn measures the provider's remaining count against it.
func TestReservationIsCountedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(nil, WithLimit(PerSecond(10)), WithConcurrency(1))
		s := tr.scopes[DefaultScope].shared
		r, err := tr.Reserve(context.Background())
		mustNotErr(t, err)
		p, err := r.Wait(context.Background())
		mustNotErr(t, err)
		p.Accept()
		if admitted, spent := s.admitted.Load(), s.spent.Load(); admitted != 1 || spent != 1 {
			t.Errorf("after one reserved call, admitted %d and spent %d; want 1 and 1", admitted, spent)
		}
	})
}

// The first app's permit loop: a cap of 4, 80 calls, one in 16 rejected
// with a Retry-After of 200ms. Reject(d > 0) is a pause, as the README
// says: it leaves the cap whole, so four calls are admitted at once after
// the loop, none waiting.
func TestPermitRejectedWithWaitPausesAndKeepsTheCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(nil, WithConcurrency(4))
		var wg sync.WaitGroup
		var n atomic.Int64
		for range 8 {
			wg.Go(func() {
				for range 10 {
					p := mustAcquire(t, tr, context.Background())
					time.Sleep(50 * time.Millisecond)
					if n.Add(1)%16 == 0 {
						p.Reject(200 * time.Millisecond)
					} else {
						p.Accept()
					}
				}
			})
		}
		wg.Wait()
		time.Sleep(time.Second) // the last call's pause
		st := tr.Stats().Scopes[0]
		if st.Factor != 1 || st.ConcurrencyNow != 4 || st.Concurrency != 4 {
			t.Fatalf("after five Reject(200ms): factor %v, cap %d of %d; want 1, 4 of 4: a pause must not cut the cap", st.Factor, st.ConcurrencyNow, st.Concurrency)
		}
		var held []*Permit
		for range 4 {
			p, err := tr.TryAcquire(context.Background())
			if err != nil {
				t.Fatalf("four calls at once after the loop: %v", err)
			}
			held = append(held, p)
		}
		for _, p := range held {
			p.Drop()
		}
		// The pause itself holds every caller, for as long as it said.
		mustAcquire(t, tr, context.Background()).Reject(200 * time.Millisecond)
		if _, err := tr.TryAcquire(context.Background()); asThrottled(t, err).Reason != observe.ReasonCooldown {
			t.Fatalf("right after Reject(200ms): %v, want a cooldown", err)
		}
		time.Sleep(200 * time.Millisecond)
		p, err := tr.TryAcquire(context.Background())
		mustNotErr(t, err)
		p.Accept()
	})
}

// A bare rejection lowers the cap of a scope that limits only concurrency,
// and the cap climbs back by time: calls that wait under it are admitted
// as it climbs, though the calls in flight hold their slots for ten
// minutes. Stats shows the lowered cap and why.
func TestALoweredCapAdmitsItsWaitersByTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(nil, WithConcurrency(4))
		// A call refused alone: 4 slots halved to 2.
		mustAcquire(t, tr, context.Background()).Reject(0)
		st := tr.Stats().Scopes[0]
		if st.ConcurrencyNow != 2 || st.Concurrency != 4 || st.RecoveredIn <= 0 || !strings.Contains(st.Why, "lowered the cap") {
			t.Fatalf("Stats after two bare rejections: cap %d of %d, recovered in %v, why %q; want 2 of 4, a time, and the refusal named",
				st.ConcurrencyNow, st.Concurrency, st.RecoveredIn, st.Why)
		}
		holders := []*Permit{mustAcquire(t, tr, context.Background()), mustAcquire(t, tr, context.Background())}
		go func() {
			time.Sleep(10 * time.Minute)
			for _, p := range holders {
				p.Accept()
			}
		}()
		// Two waiters, which keep their slots too: all four are in flight
		// once the whole cap is back.
		start := time.Now()
		var wg sync.WaitGroup
		var admitted [2]time.Duration
		var waiters [2]*Permit
		for i := range admitted {
			wg.Go(func() {
				waiters[i] = mustAcquire(t, tr, context.Background())
				admitted[i] = time.Since(start)
			})
		}
		wg.Wait()
		for i, d := range admitted {
			if d > 2*pace.CheapRecovery {
				t.Errorf("waiter %d was admitted after %v, want within %v: the cap climbs back by time", i, d, 2*pace.CheapRecovery)
			}
		}
		if st := tr.Stats().Scopes[0]; st.ConcurrencyNow != 4 || st.InFlight != 4 {
			t.Errorf("Stats once the waiters were admitted: cap %d, %d in flight; want 4 and 4", st.ConcurrencyNow, st.InFlight)
		}
		time.Sleep(tr.Stats().Scopes[0].RecoveredIn)
		if st := tr.Stats().Scopes[0]; st.ConcurrencyNow != 4 || st.RecoveredIn != 0 || st.Factor != 1 {
			t.Errorf("Stats once recovered: cap %d, recovered in %v, factor %v; want 4, 0, 1", st.ConcurrencyNow, st.RecoveredIn, st.Factor)
		}
		for _, p := range waiters {
			p.Accept()
		}
		time.Sleep(10 * time.Minute) // the holders finish
	})
}

// A call refused because calls wait ahead of it names what holds them: the
// cap, the rate or the provider's pause, as it would with none waiting.
func TestAQueuedRefusalNamesWhatHoldsTheQueue(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []Option
		hold func(*testing.T, *Transport) *Permit // leaves the next call waiting
		want observe.Reason
	}{
		{"rate", []Option{WithLimit(Limit{Count: 1, Per: time.Second, Burst: 1})}, func(t *testing.T, tr *Transport) *Permit {
			mustAcquire(t, tr, context.Background()).Accept()
			return nil
		}, observe.ReasonRate},
		{"cap of a paced scope", []Option{WithLimit(PerSecond(100)), WithConcurrency(1)}, func(t *testing.T, tr *Transport) *Permit {
			return mustAcquire(t, tr, context.Background())
		}, observe.ReasonConcurrency},
		{"pause", []Option{WithLimit(PerSecond(100))}, func(t *testing.T, tr *Transport) *Permit {
			mustAcquire(t, tr, context.Background()).Reject(time.Second)
			return nil
		}, observe.ReasonCooldown},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tr := New(nil, tt.opts...)
				holder := tt.hold(t, tr)
				done := make(chan *Permit)
				go func() { done <- mustAcquire(t, tr, context.Background()) }()
				synctest.Wait()
				if _, err := tr.TryAcquire(context.Background()); asThrottled(t, err).Reason != tt.want {
					t.Errorf("with a call waiting: err = %v, want reason %q", err, tt.want)
				}
				holder.Accept()
				(<-done).Accept()
			})
		})
	}
}
