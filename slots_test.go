package pacer

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/observe"
)

// A body never closed holds its slot for ever: that is the caller's to fix,
// as with net/http, but pacer makes it visible. Stats shows the age of the
// oldest slot, and one event per slot says when one has been held longer
// than the alert's age — heard from Stats, from a call that finds the scope
// full, and from any admission at most every half of the age.
func TestASlotHeldTooLongIsReportedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		held := &recorder{}
		tr := New(&stubAPI{clock: clock.System}, WithConcurrency(2), WithoutRetry(), WithObserver(held))
		leaked := roundTrip(t, tr) // never closed
		time.Sleep(5 * time.Minute)
		mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		if d := tr.Stats().Scopes[0]; d.OldestSlot != 5*time.Minute || d.InFlight != 1 {
			t.Errorf("after 5 minutes: oldest slot %v with %d in flight, want 5m0s and 1", d.OldestSlot, d.InFlight)
		}
		if len(held.of(observe.EventSlotHeld)) != 0 {
			t.Fatalf("%d slots reported held too long after 5 minutes", len(held.of(observe.EventSlotHeld)))
		}
		time.Sleep(5*time.Minute + time.Second)
		if d := tr.Stats().Scopes[0]; d.OldestSlot != 10*time.Minute+time.Second {
			t.Errorf("oldest slot %v, want 10m1s", d.OldestSlot)
		}
		tr.Stats()
		if len(held.of(observe.EventSlotHeld)) != 1 || held.of(observe.EventSlotHeld)[0].Scope != DefaultScope || held.of(observe.EventSlotHeld)[0].Wait < defaultSlotAgeAlert {
			t.Fatalf("events %+v, want one for the default scope, held 10 minutes or more", held.of(observe.EventSlotHeld))
		}

		// A second leak is heard by a call that finds the scope full.
		leaked2 := roundTrip(t, tr)
		time.Sleep(defaultSlotAgeAlert + time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := get(tr, ctx, "http://api.test/"); !errors.Is(err, ErrThrottled) {
			t.Fatalf("a third call with two slots held: err = %v, want throttled", err)
		}
		if len(held.of(observe.EventSlotHeld)) != 2 {
			t.Errorf("%d events after the second slot was held too long, want 2", len(held.of(observe.EventSlotHeld)))
		}
		leaked.Body.Close()
		leaked2.Body.Close()
		if d := tr.Stats().Scopes[0]; d.OldestSlot != 0 || len(held.of(observe.EventSlotHeld)) != 2 {
			t.Errorf("after both were closed: oldest slot %v, %d events; want none and still 2", d.OldestSlot, len(held.of(observe.EventSlotHeld)))
		}
	})
}

// A leak on a scope that is never full is heard from admissions, with no
// Stats: at most every half of the alert's age, at the cost of one atomic
// load a call.
func TestASlotHeldTooLongIsHeardWithoutStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		held := &recorder{}
		tr := New(&stubAPI{clock: clock.System}, WithConcurrency(100), WithSlotAgeAlert(time.Minute), WithObserver(held),
			WithScope(Scope{Name: "per-user", Concurrency: 5}),
			WithRoute(func(req *http.Request, c []Charge) []Charge {
				return append(c, Charge{Scope: "per-user", Key: req.URL.Query().Get("user")})
			}))
		mustNotErr(t, tr.Err())
		req, _ := http.NewRequest(http.MethodGet, "http://api.test/?user=ann", nil)
		leaked, err := tr.RoundTrip(req)
		mustNotErr(t, err)
		for range 4 * 60 { // a call a second for 4 minutes
			time.Sleep(time.Second)
			mustNotErr(t, get(tr, context.Background(), "http://api.test/?user=bob"))
		}
		// Held for 4 minutes: reported once on each scope, the keyed one too.
		if len(held.of(observe.EventSlotHeld)) != 2 {
			t.Errorf("events %+v, want one for each of the two scopes", held.of(observe.EventSlotHeld))
		}
		leaked.Body.Close()
	})
}

func TestSlotAgeAlertValidation(t *testing.T) {
	if err := New(nil, WithSlotAgeAlert(time.Millisecond)).Err(); err == nil {
		t.Error("an alert of a millisecond: no configuration error; ages are counted in seconds")
	}
	if err := New(nil, WithSlotAgeAlert(time.Minute)).Err(); err != nil {
		t.Error(err)
	}
}
