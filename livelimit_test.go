package pacer

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/ratelimitheader"
)

// SetLimit halves the pace at once and keeps the tokens in hand.
func TestSetLimitHalvesPaceKeepsTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var events []observe.Event
		tr := New(nil, WithLimit(Limit{Count: 10, Per: time.Second, Burst: 10}), WithHeadroom(1),
			WithObserver(observe.Func(func(e observe.Event) {
				if e.Kind == observe.EventLimitChanged {
					events = append(events, e)
				}
			})))
		bg := context.Background()
		for range 4 {
			mustAcquire(t, tr, bg).Accept()
		}
		mustNotErr(t, tr.SetLimit(DefaultScope, Limit{Count: 5, Per: time.Second, Burst: 10}))
		start := time.Now()
		for i := range 6 { // the six left in hand
			p, err := tr.TryAcquire(bg)
			if err != nil {
				t.Fatalf("token %d of the 6 in hand: %v", i+1, err)
			}
			p.Accept()
		}
		var gaps []time.Duration
		last := start
		for range 3 {
			mustAcquire(t, tr, bg).Accept()
			gaps = append(gaps, time.Since(last))
			last = time.Now()
		}
		for _, g := range gaps {
			if g != 200*time.Millisecond {
				t.Errorf("gaps after SetLimit = %v, want 200ms each (5/s)", gaps)
				break
			}
		}
		if len(events) != 1 || events[0].Scope != DefaultScope || events[0].Limit.Count != 5 || events[0].Previous.Count != 10 || events[0].Origin != observe.OriginSetLimit {
			t.Errorf("events = %+v, want one limit_changed from 10 to 5 by set_limit", events)
		}
	})
}

// A call already waiting is paced by the new limit from the change on.
func TestSetLimitRepacesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(nil, WithLimit(Limit{Count: 1, Per: 10 * time.Second, Burst: 1}), WithHeadroom(1))
		bg := context.Background()
		mustAcquire(t, tr, bg).Accept()
		start := time.Now()
		done := make(chan time.Duration)
		go func() {
			mustAcquire(t, tr, bg).Accept()
			done <- time.Since(start)
		}()
		synctest.Wait()
		time.Sleep(time.Second) // virtual: the waiter has 9s to go at 1 per 10s
		mustNotErr(t, tr.SetLimit(DefaultScope, Limit{Count: 1, Per: 2 * time.Second, Burst: 1}))
		if w := <-done; w != 2*time.Second {
			t.Errorf("the waiter went after %v, want 2s (half a token at 1 per 10s, the other half at 1 per 2s)", w)
		}
	})
}

// A limit learned from the provider is forgotten by SetLimit, and the
// provider's next report combines with the new limit by the usual rules.
func TestSetLimitAndLearnedLimit(t *testing.T) {
	tr := New(nil, WithLimit(PerMinute(600)))
	s := tr.scopes[DefaultScope].shared
	s.learnLimit(ratelimitheader.Quota{Limit: 60, Window: time.Minute, Remaining: -1}, tr.headroom, tr.maxWait, tr.log)
	if s.published() == nil {
		t.Fatal("a lower published limit was not learned")
	}
	mustNotErr(t, tr.SetLimit(DefaultScope, PerMinute(30)))
	if s.published() != nil {
		t.Fatal("SetLimit kept the learned limit")
	}
	if rate, _ := s.pace(); rate != 30*0.9/60 {
		t.Errorf("rate = %v, want the new limit's", rate)
	}
	// 60 published is above the configured 30, which is not provisional.
	s.learnLimit(ratelimitheader.Quota{Limit: 60, Window: time.Minute, Remaining: -1}, tr.headroom, tr.maxWait, tr.log)
	if rate, _ := s.pace(); rate != 30*0.9/60 {
		t.Errorf("a higher published limit raised a configured one: rate = %v", rate)
	}
}

func TestSetLimitBadInput(t *testing.T) {
	tr := New(nil, WithLimit(PerSecond(10)))
	if err := tr.SetLimit("nope", PerSecond(1)); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("undeclared scope: %v", err)
	}
	if err := tr.SetLimit(DefaultScope, Limit{Count: -1, Per: time.Second}); err == nil {
		t.Error("a negative count was accepted")
	}
	if rate, _ := tr.scopes[DefaultScope].shared.pace(); rate != 9 {
		t.Errorf("a refused SetLimit changed the rate to %v", rate)
	}
}

// SetWorkload changes a workload's share and queue bound at once, keeping
// the calls in flight and those waiting.
func TestSetWorkload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var changed []string
		tr := New(nil, WithConcurrency(10), WithWorkload("batch", Workload{}), WithWorkload("interactive", Workload{}),
			WithObserver(observe.Func(func(e observe.Event) {
				if e.Kind == observe.EventWorkloadChanged {
					changed = append(changed, e.Workload+" by "+e.Origin)
				}
			})))
		batch := ContextWithWorkload(context.Background(), "batch")
		var held []*Permit
		for range 4 {
			held = append(held, mustAcquire(t, tr, batch))
		}
		mustNotErr(t, tr.SetWorkload("batch", Workload{Max: 0.3, MaxWaiting: 1}))
		if len(changed) != 1 || changed[0] != "batch by set_workload" {
			t.Errorf("events = %v", changed)
		}
		// Interactive is not capped; batch's 4 in flight stay, while it
		// may have 3 now: a new batch call waits, and a
		// second waiter is refused by the bound of 1.
		mustAcquire(t, tr, ContextWithWorkload(context.Background(), "interactive")).Accept()
		done := make(chan error)
		go func() {
			p, err := tr.Acquire(batch)
			if err == nil {
				p.Accept()
			}
			done <- err
		}()
		synctest.Wait()
		if _, err := tr.Acquire(batch); err == nil || !strings.Contains(err.Error(), "at most 1 waiting") {
			t.Fatalf("a second waiter under MaxWaiting 1: err = %v", err)
		}
		held[0].Accept()
		held[1].Accept()
		mustNotErr(t, <-done) // 2 in flight, under the cap of 3
		for _, p := range held[2:] {
			p.Accept()
		}
	})
}

func TestSetWorkloadBadInput(t *testing.T) {
	tr := New(nil, WithWorkload("a", Workload{Reserve: 0.6, Budget: Budget{Limit: 10, Per: time.Hour}}), WithWorkload("b", Workload{}))
	for _, tc := range []struct {
		name string
		w    Workload
		want string
	}{
		{"nope", Workload{}, "not declared"},
		{"a", Workload{Reserve: 0.6}, "Budget cannot change"},
		{"b", Workload{Reserve: 0.5}, "add up to"},
		{"b", Workload{Reserve: -1}, "between 0 and 1"},
	} {
		if err := tr.SetWorkload(tc.name, tc.w); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SetWorkload(%q, %+v) = %v, want an error saying %q", tc.name, tc.w, err, tc.want)
		}
	}
	if r := tr.scopes[DefaultScope].shares.Load().reserve[tr.workloads["b"].index]; r != 0 {
		t.Errorf("a refused SetWorkload changed b's reserve to %v", r)
	}
}

// A Max raised at runtime admits the calls it held back at once: nothing
// else would wake them while the calls in flight keep their slots.
func TestARaisedMaxAdmitsItsWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(nil, WithConcurrency(4), WithWorkload("batch", Workload{Max: 0.25}))
		batch := ContextWithWorkload(context.Background(), "batch")
		holder := mustAcquire(t, tr, batch)
		start := time.Now()
		admitted := make(chan time.Duration)
		go func() {
			p := mustAcquire(t, tr, batch)
			admitted <- time.Since(start)
			p.Accept()
		}()
		synctest.Wait()
		mustNotErr(t, tr.SetWorkload("batch", Workload{Max: 1}))
		go func() { time.Sleep(time.Hour); holder.Accept() }()
		if d := <-admitted; d != 0 {
			t.Errorf("the waiter was admitted %v after Max was raised, want at once", d)
		}
		time.Sleep(time.Hour)
	})
}
