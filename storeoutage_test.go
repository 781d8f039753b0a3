package pacer_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/storetest"
)

// Both ways the Transport calls a store: on the request's goroutine (a store
// that honours its context) and in a goroutine of its own.
func eachCallMode(t *testing.T, f func(t *testing.T, flaky *flakyStore, s store.Store)) {
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprintf("honoursContext=%v", inline), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				flaky := newFlakyStore()
				var s store.Store = flaky
				if inline {
					s = honouringStore{flaky}
				}
				f(t, flaky, s)
				// A store write the Transport sent in the background may
				// still wait for the hung store, up to the store timeout:
				// let it end before the bubble does, or synctest takes it
				// for a deadlock.
				time.Sleep(time.Minute)
			})
		})
	}
}

// Learning from a response never delays returning it, and callers whose
// deadlines are all shorter than the store timeout still let the store
// failure policy apply: storetest's wall-time checks, in virtual time.
func TestLearningNeverWaitsForTheStore(t *testing.T) {
	eachCallMode(t, func(t *testing.T, flaky *flakyStore, s store.Store) {
		storetest.LearnWhileHung(t, s, func() { flaky.hang.Store(true) }, func() { flaky.hang.Store(false) })
	})
}

func TestStoreFailurePolicyAppliesWhateverTheDeadlines(t *testing.T) {
	eachCallMode(t, func(t *testing.T, flaky *flakyStore, s store.Store) {
		storetest.ShortDeadlines(t, s, func() { flaky.hang.Store(true) }, func() { flaky.hang.Store(false) })
	})
}

// pickyStore refuses the key "bad" as a store refuses a value it cannot
// hold: it answers, with an error matching store.ErrInvalidDemand.
type pickyStore struct{ *flakyStore }

func (p pickyStore) Take(ctx context.Context, now time.Time, ds []store.Demand) (store.Decision, error) {
	for _, d := range ds {
		if d.Key == "bad" {
			p.calls.Add(1)
			return store.Decision{}, fmt.Errorf("pgstore: take: %w: invalid byte sequence", store.ErrInvalidDemand)
		}
	}
	return p.flakyStore.Take(ctx, now, ds)
}

// One request's bad input is that request's error, not an outage: it is
// neither sent as the policy would send it nor does it keep the store from
// the next request.
func TestInvalidDemandIsTheRequestsError(t *testing.T) {
	picky := pickyStore{newFlakyStore()}
	base := &okTransport{}
	tr := pacer.New(base, pacer.WithStore(picky, store.Policy{OnFailure: store.FailOpen}), pacer.WithoutRetry(),
		pacer.WithScope(pacer.Scope{Name: "per-key", Limit: pacer.PerSecond(100)}),
		pacer.WithRoute(func(req *http.Request, cs []pacer.Charge) []pacer.Charge {
			return []pacer.Charge{{Scope: "per-key", Key: strings.TrimPrefix(req.URL.Path, "/")}}
		}))
	get := func(path string) error {
		req, _ := http.NewRequest(http.MethodGet, "http://api.example"+path, nil)
		resp, err := tr.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	for range 3 {
		if err := get("/bad"); !errors.Is(err, store.ErrInvalidDemand) {
			t.Fatalf("a request the store refused returned %v, want store.ErrInvalidDemand", err)
		}
	}
	if n := base.sent.Load(); n != 0 {
		t.Fatalf("%d refused requests were sent", n)
	}
	before := picky.calls.Load()
	if err := get("/good"); err != nil {
		t.Fatal(err)
	}
	if picky.calls.Load() != before+1 {
		t.Fatal("after a request the store refused, the next request did not go to the store: it was taken for down")
	}
}

// forgetfulStore is a store whose server can lose its data, as a Redis
// without persistence does when it restarts, or stop answering.
type forgetfulStore struct {
	mu   sync.Mutex
	m    *store.Memory
	down bool
}

func newForgetfulStore() *forgetfulStore { return &forgetfulStore{m: store.NewMemory()} }

func (f *forgetfulStore) forget() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m = store.NewMemory()
}

func (f *forgetfulStore) setDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

func (f *forgetfulStore) get() (*store.Memory, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return nil, errConnRefused
	}
	return f.m, nil
}

func (f *forgetfulStore) Take(ctx context.Context, now time.Time, ds []store.Demand) (store.Decision, error) {
	m, err := f.get()
	if err != nil {
		return store.Decision{}, err
	}
	return m.Take(ctx, now, ds)
}

func (f *forgetfulStore) Refund(ctx context.Context, now time.Time, ds []store.Demand) error {
	m, err := f.get()
	if err != nil {
		return err
	}
	return m.Refund(ctx, now, ds)
}

func (f *forgetfulStore) Clamp(ctx context.Context, now time.Time, d store.Demand, tokens float64) error {
	m, err := f.get()
	if err != nil {
		return err
	}
	return m.Clamp(ctx, now, d, tokens)
}

// A budget is a hard cap: with the store down it fails closed whatever the
// policy, unless the workload opts out with FollowStoreFailure; and however
// it follows the policy, this process never spends more than the budget by
// its own count.
func TestBudgetAcrossAStoreOutage(t *testing.T) {
	const limit = 50
	cases := []struct {
		policy    store.Policy
		follow    bool
		before    int // spent while the store was up
		want      int // sent of 200 while it is down
		wantCause error
	}{
		// What this process spent itself it knows without the store.
		{store.Policy{Instances: 1}, false, limit, 0, pacer.ErrBudgetExhausted},
		{store.Policy{OnFailure: store.FailOpen}, false, limit, 0, pacer.ErrBudgetExhausted},
		{store.Policy{Instances: 1}, false, 0, 0, store.ErrUnavailable},
		{store.Policy{OnFailure: store.FailOpen}, false, 10, 0, store.ErrUnavailable},
		{store.Policy{OnFailure: store.FailClosed}, true, 0, 0, store.ErrUnavailable},
		{store.Policy{OnFailure: store.FailOpen}, true, limit, 0, pacer.ErrBudgetExhausted},
		{store.Policy{OnFailure: store.FailOpen}, true, 10, limit - 10, pacer.ErrBudgetExhausted},
		{store.Policy{Instances: 1}, true, 10, limit - 10, pacer.ErrBudgetExhausted},
		{store.Policy{Instances: 2}, true, 10, limit/2 - 10, pacer.ErrBudgetExhausted},
		{store.Policy{Instances: 5}, true, 20, 0, pacer.ErrBudgetExhausted},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%+v/follow=%v/spent=%d", c.policy, c.follow, c.before), func(t *testing.T) {
			forgetful := newForgetfulStore()
			base := &okTransport{}
			tr := pacer.New(base, pacer.WithLimit(pacer.PerSecond(1e6)), pacer.WithStore(forgetful, c.policy),
				pacer.WithoutRetry(),
				pacer.WithWorkload(pacer.DefaultWorkload, pacer.Workload{
					Budget: pacer.Budget{Limit: limit, Per: 24 * time.Hour, FollowStoreFailure: c.follow}}))
			if sent, errs := sendN(t, tr, c.before); sent != c.before {
				t.Fatalf("with the store up sent %d of %d: %v", sent, c.before, errs)
			}
			forgetful.setDown(true)
			sent, errs := sendN(t, tr, 200)
			if sent != c.want {
				t.Errorf("with the store down sent %d of 200, want %d", sent, c.want)
			}
			for _, err := range errs {
				if !errors.Is(err, c.wantCause) {
					t.Fatalf("a refused call returned %v, want %v", err, c.wantCause)
				}
			}
		})
	}
}

// A store that forgets what was spent (a Redis restarted without
// persistence) does not hand this process its budget again.
func TestBudgetHoldsWhenTheStoreForgets(t *testing.T) {
	forgetful := newForgetfulStore()
	base := &okTransport{}
	tr := pacer.New(base, pacer.WithLimit(pacer.PerSecond(1e6)), pacer.WithStore(forgetful, store.Policy{}), pacer.WithoutRetry(),
		pacer.WithWorkload(pacer.DefaultWorkload, pacer.Workload{Budget: pacer.Budget{Limit: 50, Per: 24 * time.Hour}}))
	if sent, _ := sendN(t, tr, 60); sent != 50 {
		t.Fatalf("sent %d, want the budget of 50", sent)
	}
	forgetful.forget()
	sent, errs := sendN(t, tr, 200)
	if sent != 0 {
		t.Errorf("after the store forgot what was spent, sent %d more of a spent budget", sent)
	}
	if len(errs) == 0 || !errors.Is(errs[0], pacer.ErrBudgetExhausted) {
		t.Errorf("errors %v, want ErrBudgetExhausted", errs[:min(1, len(errs))])
	}
}
