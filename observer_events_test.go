package pacer_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/store"
)

// events is an observe.Observer that keeps what it hears.
type events struct {
	mu   sync.Mutex
	list []observe.Event
}

func (e *events) Observe(ev observe.Event) {
	e.mu.Lock()
	e.list = append(e.list, ev)
	e.mu.Unlock()
}

func (e *events) of(kind observe.EventKind) []observe.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []observe.Event
	for _, ev := range e.list {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// Every call the store does not answer is heard once: from the caller when
// the policy fails it, from the store's guard when the policy answers for
// the store (FallBackLocal, FailOpen), which returns no error to report.
func TestStoreFailureIsObservedUnderEveryPolicy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy store.Policy
		failed bool // the request fails
	}{
		{"FallBackLocal", store.Policy{Instances: 2}, false},
		{"FailOpen", store.Policy{OnFailure: store.FailOpen}, false},
		{"FailClosed", store.Policy{OnFailure: store.FailClosed}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &events{}
			tr, flaky, _, _ := failureSetup(t, tc.policy, pacer.WithObserver(rec))
			flaky.down.Store(true)
			err := send(context.Background(), tr)
			if (err != nil) != tc.failed {
				t.Fatalf("err = %v, want failed = %v", err, tc.failed)
			}
			got := rec.of(observe.EventStoreFailure)
			if len(got) != 1 {
				t.Fatalf("heard %d store failures, want 1: %+v", len(got), got)
			}
			if !errors.Is(got[0].Err, store.ErrUnavailable) || !errors.Is(got[0].Err, errConnRefused) {
				t.Errorf("the event's error = %v, want the store's unavailability and its cause", got[0].Err)
			}
			if !tc.failed && got[0].Scope != pacer.DefaultScope {
				t.Errorf("the event's scope = %q, want %q", got[0].Scope, pacer.DefaultScope)
			}
			if n := len(rec.of(observe.EventAdmitted)); n != 1-btoi(tc.failed) {
				t.Errorf("heard %d admissions", n)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
