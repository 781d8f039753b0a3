package pacer

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/store"
)

// A refusal whose retry-after-ms is three days (seen in the wild) is said
// at once: the call gets a *QuotaError with the reset, nothing is retried,
// the scope's next call is refused at once with the same reset and the
// time it checks again, and after the maximum wait it does check — a
// corrected server teaches it back.
func TestAWaitBeyondMaxWaitIsSaidAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const threeDays = 72 * time.Hour
		api := &scriptedAPI{steps: []scripted{{http.StatusTooManyRequests, map[string]string{"Retry-After-Ms": "259200000"}}}}
		tr := New(api, WithLimit(PerSecond(10)))
		start := time.Now()

		err := get(tr, context.Background(), "http://api.test/")
		var qe *QuotaError
		if !errors.As(err, &qe) {
			t.Fatalf("err = %v, want a *QuotaError", err)
		}
		if !qe.Reset.Equal(start.Add(threeDays)) || qe.Status != http.StatusTooManyRequests {
			t.Errorf("QuotaError{Status: %d, Reset: %v}, want 429 and the reset three days on, %v", qe.Status, qe.Reset, start.Add(threeDays))
		}
		if !errors.Is(err, ErrBudgetExhausted) || !strings.Contains(err.Error(), "WithMaxWait") {
			t.Errorf("err = %v: want it to match ErrBudgetExhausted and say what to do", err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("the call returned after %v, want at once", waited)
		}
		if n := len(api.sentTimes()); n != 1 {
			t.Errorf("%d attempts sent, want 1: no retry waits three days", n)
		}

		err = get(tr, context.Background(), "http://api.test/")
		te := asThrottled(t, err)
		if te.Reason != observe.ReasonCooldown || !te.Reset.Equal(start.Add(threeDays)) || te.RetryAfter != defaultMaxWait {
			t.Errorf("ThrottledError{Reason: %s, Reset: %v, RetryAfter: %v}, want cooldown, %v and the maximum wait %v",
				te.Reason, te.Reset, te.RetryAfter, start.Add(threeDays), defaultMaxWait)
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("the scope's next call was refused after %v, want at once", waited)
		}

		// After the maximum wait the scope probes; the server now accepts.
		time.Sleep(te.RetryAfter)
		probe := time.Now()
		mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		if waited := time.Since(probe); waited > 200*time.Millisecond {
			t.Errorf("the probe after the maximum wait waited %v more, want at most a token's time", waited)
		}
	})
}

// A success that spent the last of a quota whose reset is three days off
// is handed back; the calls after it are refused at once with that reset.
func TestAResetBeyondMaxWaitIsSaidAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &scriptedAPI{steps: []scripted{{http.StatusOK, map[string]string{
			"X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "259200"}}}}
		tr := New(api, WithLimit(PerSecond(10)))
		start := time.Now()
		mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		te := asThrottled(t, get(tr, context.Background(), "http://api.test/"))
		if !te.Reset.Equal(start.Add(72*time.Hour)) || time.Since(start) != 0 {
			t.Errorf("ThrottledError{Reset: %v} after %v, want the reset three days on, at once", te.Reset, time.Since(start))
		}
		if !strings.Contains(te.Error(), "beyond the maximum wait") {
			t.Errorf("err = %v: want it to say the wait is beyond the maximum", te)
		}
	})
}

// In a fleet, the process that hears a wait beyond the maximum says it at
// once; the others, sharing its bucket, cannot hear why they would wait.
// A debt of the whole maximum wait in the shared bucket parked their calls
// for ten silent minutes, the wait this rule forbids: the fleet's bucket
// now owes a second's pace, so another process sends within it, and its
// own answer tells it at once.
func TestAWaitBeyondMaxWaitIsSaidAtOnceAcrossAFleet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		far := scripted{http.StatusTooManyRequests, map[string]string{"Retry-After-Ms": "259200000"}}
		api := &scriptedAPI{steps: []scripted{far, far}}
		shared := fleetStore{store.NewMemory()} // a store the fleet shares, not this process's memory
		a := New(api, WithLimit(PerSecond(10)), WithStore(shared, store.Policy{}))
		b := New(api, WithLimit(PerSecond(10)), WithStore(shared, store.Policy{}))
		start := time.Now()
		var qe *QuotaError
		if err := get(a, context.Background(), "http://api.test/"); !errors.As(err, &qe) {
			t.Fatalf("the first process: err = %v, want a *QuotaError", err)
		}
		err := get(b, context.Background(), "http://api.test/")
		if !errors.As(err, &qe) || !qe.Reset.Equal(time.Now().Add(72*time.Hour)) {
			t.Fatalf("the other process: err = %v, want a *QuotaError with the reset three days on", err)
		}
		if waited := time.Since(start); waited > 2*time.Second {
			t.Errorf("the other process was told after %v, want within a second or two, not the maximum wait", waited)
		}
	})
}
