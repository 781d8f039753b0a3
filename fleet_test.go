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

	"github.com/pacer-go/pacer/internal/pace"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/store"
)

// fleetStore is a store.Memory shared by the Transports of a fleet in one
// test: wrapped, so that each takes it for a shared store, as it would
// redisstore or pgstore, not for its own in-memory one.
type fleetStore struct{ *store.Memory }

func (fleetStore) HonoursContext() bool { return true }

// member is one process of a fleet: what it sent and what it learned.
type member struct {
	next               http.RoundTripper
	accepted, rejected atomic.Int64

	mu     sync.Mutex
	cuts   int             // pace changes of its own, after a refusal
	synced int             // pace changes it read from the store
	lowest float64         // the lowest pace a change left it at
	events []observe.Event // every pace change
}

func (m *member) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := m.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		m.rejected.Add(1)
	} else if err == nil {
		m.accepted.Add(1)
	}
	return resp, err
}

func (m *member) Observe(e observe.Event) {
	if e.Kind != observe.EventPaceChanged {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case e.Origin == observe.OriginStore:
		m.synced++
	case strings.Contains(e.Why, "refused"):
		m.cuts++
	}
	if m.lowest == 0 || e.Rate < m.lowest {
		m.lowest = e.Rate
	}
	m.events = append(m.events, e)
}

// fleetResult is what a fleet did behind one server.
type fleetResult struct {
	accepted, rejected int // from the server's view, over the whole run
	steady             int // accepted after the warm-up
	members            []*member
}

// runFleet runs n Transports, each with callers goroutines, configured at
// told a second and sharing one store (with limit sync every every, if
// positive), behind api for d, and returns what the server saw.
func runFleet(t *testing.T, api *limitedAPI, n, callers int, told int, every time.Duration, warmUp, d time.Duration) fleetResult {
	t.Helper()
	shared := fleetStore{store.NewMemory()}
	res := fleetResult{}
	var trs []*Transport
	for range n {
		m := &member{next: &wire{next: api}}
		opts := []Option{WithLimit(PerSecond(told)), WithoutRetry(), WithStore(shared, store.Policy{LimitSync: every}), WithObserver(m)}
		tr := New(m, opts...)
		if err := tr.Err(); err != nil {
			t.Fatal(err)
		}
		res.members = append(res.members, m)
		trs = append(trs, tr)
	}
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for _, tr := range trs {
		wg.Go(func() { hammer(tr, callers, end) })
	}
	wg.Wait()
	res.accepted, res.rejected = len(api.accepted), len(api.rejected)
	res.steady = between(api.accepted, start.Add(warmUp), end)
	return res
}

func (r fleetResult) log(t *testing.T, what string, ceiling float64) {
	t.Helper()
	t.Logf("%s: %d accepted (%.3f of the ceiling after warm-up), %d 429s", what, r.accepted, float64(r.steady)/ceiling, r.rejected)
	for i, m := range r.members {
		m.mu.Lock()
		t.Logf("  process %d: %d accepted, %d 429s, %d cuts of its own, %d from the store, lowest pace %.2f/s", i, m.accepted.Load(), m.rejected.Load(), m.cuts, m.synced, m.lowest)
		m.mu.Unlock()
	}
}

// A fleet of four sharing one bucket, told twice the server's limit,
// behind a limiter that answers bare 429s (nginx's limit_req): each
// process sends about a quarter of what the server accepts, so the calls
// it saw accepted measured a quarter of the capacity. Each cut four times
// too deep, down to 0.3 a second, and carried that pace into the shared
// bucket in its demands, which slowed the whole fleet: 0.80 to 0.98 of the
// ceiling over two minutes (0.94 typical). A cut measures the share of its calls the
// server accepted, at the bucket's pace.
func TestFleetCutMeasuresTheServersCapacity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		api := &limitedAPI{limit: 50, burst: 10, mode: "bare-429"}
		r := runFleet(t, api, 4, 8, 100, 0, 5*time.Second, 120*time.Second)
		r.log(t, "4 processes", 50*115)
		if got := float64(r.steady) / (50 * 115); got < 0.95 {
			t.Errorf("the fleet had %.3f of the ceiling after warm-up, want at least 0.95", got)
		}
		for i, m := range r.members {
			if m.lowest < 25 {
				t.Errorf("process %d cut its pace to %.2f a second, want at least half the server's 50", i, m.lowest)
			}
		}
	})
}

// Three processes sharing one bucket with limit sync, told twice the
// server's limit, behind bare 429s: a cut one takes is published, and the
// others apply it at their next sync and climb back on the same curve, so
// the fleet draws about the 429s one process alone draws (9 in two
// minutes; the fleet 10 to 19), not one process's each: without the
// publishing, 28 to 33.
func TestFleetLearnsARefusalOnce(t *testing.T) {
	var alone fleetResult
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		alone = runFleet(t, &limitedAPI{limit: 50, burst: 10, mode: "bare-429"}, 1, 8, 100, time.Second, 5*time.Second, 120*time.Second)
		alone.log(t, "one process", 50*115)
	})
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		r := runFleet(t, &limitedAPI{limit: 50, burst: 10, mode: "bare-429"}, 3, 8, 100, time.Second, 5*time.Second, 120*time.Second)
		r.log(t, "3 processes", 50*115)
		// Each of the others may be refused a call or two before its next
		// sync tells it of a cut.
		if bound := alone.rejected + 4*len(r.members); r.rejected > bound {
			t.Errorf("the fleet drew %d 429s, one process alone %d: want at most %d", r.rejected, alone.rejected, bound)
		}
		if got := float64(r.steady) / (50 * 115); got < 0.95 {
			t.Errorf("the fleet had %.3f of the ceiling after warm-up, want at least 0.95", got)
		}
		// The cuts reach the others through the store. Not every process
		// need apply one: one that was refused first each time has cut
		// already, and a cut read from the store within its own cut's
		// window is old news to it (1 run in 25: 9 cuts of its own, none
		// from the store, while the other two applied 13).
		synced := 0
		for _, m := range r.members {
			if m.synced > 0 {
				synced++
			}
		}
		if synced == 0 {
			t.Error("no process applied a cut from the store")
		}
	})
}

// A cut read from the store is applied once, with its curve, and says it
// came from the store; a process that reads it again applies nothing.
func TestACutFromTheStoreIsAppliedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		shared := fleetStore{store.NewMemory()}
		a, b := &member{next: &scriptedAPI{steps: []scripted{{status: http.StatusTooManyRequests}}}}, &member{next: &scriptedAPI{}}
		ta := New(a, WithLimit(PerSecond(100)), WithoutRetry(), WithStore(shared, store.Policy{LimitSync: time.Second}), WithObserver(a))
		tb := New(b, WithLimit(PerSecond(100)), WithoutRetry(), WithStore(shared, store.Policy{LimitSync: time.Second}), WithObserver(b))
		get(tb, context.Background(), "http://api.test/") // b reads now, and next in a second
		get(ta, context.Background(), "http://api.test/") // refused: a cuts
		time.Sleep(time.Second)
		get(tb, context.Background(), "http://api.test/")
		fa, fb := ta.Stats().Scopes[0].Factor, tb.Stats().Scopes[0].Factor
		if fa >= 1 || fb != fa {
			t.Errorf("after a sync: factor %v here, %v at the process refused; want the same cut", fb, fa)
		}
		time.Sleep(time.Second)
		get(tb, context.Background(), "http://api.test/")
		get(ta, context.Background(), "http://api.test/")
		for who, m := range map[string]*member{"the process refused": a, "the other": b} {
			m.mu.Lock()
			var fromStore []observe.Event
			for _, e := range m.events {
				if e.Origin == observe.OriginStore {
					fromStore = append(fromStore, e)
				}
			}
			m.mu.Unlock()
			if want := map[string]int{"the process refused": 0, "the other": 1}[who]; len(fromStore) != want {
				t.Errorf("%s: %d pace changes from the store (%+v), want %d", who, len(fromStore), fromStore, want)
			}
			for _, e := range fromStore {
				if e.Scope != DefaultScope || e.Rate <= 0 || e.Rate >= 90 || e.Why == "" {
					t.Errorf("%s: %+v, want the default scope's pace after the cut, and why", who, e)
				}
			}
		}
	})
}

// A cut from the store never lands over a deeper one taken here since; it
// lands over a shallower one, or an older one, and not once it is over.
func TestACutFromTheStoreKeepsADeeperOneTakenSince(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		tr := New(nil, WithLimit(PerSecond(100)))
		s := tr.defaultScope.shared
		at := time.Now()
		later := func(d time.Duration) time.Time { return at.Add(d) }
		local := pace.NewCurve(later(time.Second), 0.5, 0.45, pace.CheapRecovery, false)
		for _, tt := range []struct {
			what   string
			remote *pace.Curve
			want   bool
		}{
			{"older and shallower", pace.NewCurve(later(500*time.Millisecond), 0.9, 0.85, pace.CheapRecovery, false), false},
			{"older and deeper", pace.NewCurve(later(500*time.Millisecond), 0.3, 0.25, pace.CheapRecovery, false), true},
			{"newer and shallower", pace.NewCurve(later(2*time.Second), 0.9, 0.85, pace.CheapRecovery, false), true},
			{"over", pace.NewCurve(later(-time.Hour), 0.3, 0.25, pace.CheapRecovery, false), false},
		} {
			s.setClimb(local)
			got := s.adopt(tt.remote, later(3*time.Second), defaultMaxWait)
			if got != tt.want || (s.climb() == tt.remote) != tt.want {
				t.Errorf("%s: adopted %v, want %v", tt.what, got, tt.want)
			}
		}
	})
}

// A pace record goes through the store as it is, and nothing else reads
// as one.
func TestPaceRecordsRoundTrip(t *testing.T) {
	r := pace.NewCurve(time.Unix(1764547200, 123456789), 0.5123456789, 0.48671, pace.CostlyRecovery, true)
	rec := r.Record()
	if err := store.CheckPaceRecord(rec); err != nil {
		t.Fatalf("record %q: %v", rec, err)
	}
	back, ok := pace.ParseRecord(rec, pace.MaxRecordedRecovery)
	if !ok || *back != *r {
		t.Errorf("record %q reads back as %+v, want %+v", rec, back, r)
	}
	for _, bad := range []string{"", "cut1", "cut2 1 0.5 0.4 1000000000 1", "cut1 1 0.5 0.6 1000000000 1", "cut1 1 NaN 0.4 1000000000 1",
		"cut1 1 0.5 0.4 -1 1", "cut1 1 0.5 0.4 1000000000 4", "cut1 0 0.5 0.4 1000000000 1", "cut1 1 1.5 0.4 1000000000 0",
		"cut1 1 0.5 0 1000000000 0", "cut1 1 0.5 0.4 999999999999999 0"} {
		if r, ok := pace.ParseRecord(bad, pace.MaxRecordedRecovery); ok {
			t.Errorf("%q reads as %+v", bad, r)
		}
	}
}

// failingPaces is a shared store whose pace records cannot be published.
type failingPaces struct{ fleetStore }

func (failingPaces) PublishPace(context.Context, string, string) (int64, error) {
	return 0, errors.New("the store is down")
}

// A cut that cannot be published is reported, and the refused call
// returns as it would without limit sync.
func TestACutThatCannotBePublishedIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		var failures []observe.Event
		tr := New(&scriptedAPI{steps: []scripted{{status: http.StatusTooManyRequests}}}, WithLimit(PerSecond(100)), WithoutRetry(),
			WithStore(failingPaces{fleetStore{store.NewMemory()}}, store.Policy{LimitSync: time.Second}), WithObserver(observe.Func(func(e observe.Event) {
				if e.Kind == observe.EventStoreFailure {
					failures = append(failures, e)
				}
			})))
		req, _ := http.NewRequest(http.MethodGet, "http://api.test/", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("the refused call: %v, %v; want its 429", resp, err)
		}
		resp.Body.Close()
		if len(failures) != 1 || failures[0].Scope != DefaultScope || !strings.Contains(failures[0].Err.Error(), "the store is down") {
			t.Errorf("store failures %+v, want the publishing's", failures)
		}
		if f := tr.Stats().Scopes[0].Factor; f >= 1 {
			t.Errorf("factor %v, want the cut kept here", f)
		}
	})
}

// A pace record stamped a year ahead — a host whose clock is wrong, or a
// key written by something else — is taken as a cut made now: its climb
// starts now, and the scope is back at its full pace within the climb,
// not held at the record's deepest pace until the year has passed.
func TestACutFromTheFutureClimbsBackFromNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		tr := New(nil, WithLimit(PerSecond(100)))
		s := tr.defaultScope.shared
		now := time.Now()
		if !s.adopt(pace.NewCurve(now.AddDate(1, 0, 0), 0.5, 0.25, pace.CheapRecovery, true), now, defaultMaxWait) {
			t.Fatal("a cut from the store was not adopted")
		}
		// As long as the same cut made now takes to climb back.
		time.Sleep(time.Until(time.Unix(0, pace.NewCurve(now, 0.5, 0.25, pace.CheapRecovery, true).Full)))
		if f := s.rateFactor(); f != 1 {
			t.Errorf("factor %v a whole climb after adopting a cut stamped a year ahead, want 1", f)
		}
	})
}

// A cut read from the store is not a quiet window: a refusal of a call
// sent at its pace cuts again here (and is published), where a refusal
// answered by a cut of this process's own within its window does not.
func TestARefusalAfterAnAdoptedCutCuts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		tr := New(nil, WithLimit(PerSecond(100)))
		s := tr.defaultScope.shared
		now := time.Now()
		if !s.adopt(pace.NewCurve(now, 0.8, 0.76, pace.CheapRecovery, false), now, defaultMaxWait) {
			t.Fatal("a cut from the store was not adopted")
		}
		admitted := s.admitted.Add(1) // a call sent at the adopted pace
		if cut, _ := s.cut(admitted, now.Add(100*time.Millisecond), 0, defaultMaxWait, true, false); !cut {
			t.Error("a refusal after an adopted cut did not cut")
		}
		admitted = s.admitted.Add(1)
		if cut, _ := s.cut(admitted, now.Add(200*time.Millisecond), 0, defaultMaxWait, true, false); cut {
			t.Error("a refusal within the window of this process's own cut cut again")
		}
	})
}

// downStore is a shared store that answers nothing, and counts the pace
// records it is asked to publish.
type downStore struct {
	fleetStore
	published atomic.Int32
}

func (*downStore) Take(context.Context, time.Time, []store.Demand) (store.Decision, error) {
	return store.Decision{}, errors.New("the store is down")
}

func (s *downStore) PublishPace(context.Context, string, string) (int64, error) {
	s.published.Add(1)
	return 0, errors.New("the store is down")
}

// While the store is known to be down, a refused call does not wait on it
// to publish its cut: the failure is reported at once.
func TestACutIsNotPublishedToAStoreKnownToBeDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		s := &downStore{fleetStore: fleetStore{store.NewMemory()}}
		var mu sync.Mutex
		var failures []error
		tr := New(&scriptedAPI{steps: []scripted{{status: http.StatusTooManyRequests}}}, WithLimit(PerSecond(100)), WithoutRetry(),
			WithStore(s, store.Policy{LimitSync: time.Second}), WithObserver(observe.Func(func(e observe.Event) {
				if e.Kind == observe.EventStoreFailure {
					mu.Lock()
					failures = append(failures, e.Err)
					mu.Unlock()
				}
			})))
		start := time.Now()
		if err := get(tr, context.Background(), "http://api.test/"); err != nil {
			t.Fatal(err) // the local fallback admits it; the provider refuses it
		}
		if took := time.Since(start); took > 0 {
			t.Errorf("the refused call took %v, want no wait on the store", took)
		}
		if n := s.published.Load(); n != 0 {
			t.Errorf("%d pace records sent to a store known to be down, want none", n)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(failures) == 0 || !strings.Contains(failures[len(failures)-1].Error(), "publishing scope") {
			t.Errorf("store failures %v, want the publishing's last", failures)
		}
	})
}
