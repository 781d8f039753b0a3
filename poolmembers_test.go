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

	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/pool"
	"github.com/pacer-go/pacer/store"
)

// memberEvents records a Transport's member events.
type memberEvents struct {
	mu  sync.Mutex
	got []observe.Event
}

func (e *memberEvents) Observe(ev observe.Event) {
	switch ev.Kind {
	case observe.EventMemberOut, observe.EventMemberParked, observe.EventMemberUnparked, observe.EventStoreFailure:
		e.mu.Lock()
		e.got = append(e.got, ev)
		e.mu.Unlock()
	}
}

// count is how many events of kind about member came from origin.
func (e *memberEvents) count(kind observe.EventKind, member, origin string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.got {
		if ev.Kind == kind && ev.Member == member && ev.Origin == origin {
			n++
		}
	}
	return n
}

// fleetOfPools returns n Transports of one pool, a, b and c, sharing st
// with LimitSync, each with its events.
func fleetOfPools(t *testing.T, api *poolAPI, st store.Store, n int) ([]*Transport, []*memberEvents) {
	t.Helper()
	var trs []*Transport
	var evs []*memberEvents
	for range n {
		ev := &memberEvents{}
		tr := New(api, WithoutRetry(), WithObserver(ev),
			WithStore(st, store.Policy{LimitSync: 100 * time.Millisecond}),
			WithScope(Scope{Name: "key", Limit: PerSecond(20)}),
			WithPool(pool.Config{Scopes: []string{"key"}, Members: []pool.Member{
				bearerMember("a", "sk-aaa"), bearerMember("b", "sk-bbb"), bearerMember("c", "sk-ccc")}}))
		if err := tr.Err(); err != nil {
			t.Fatal(err)
		}
		trs, evs = append(trs, tr), append(evs, ev)
	}
	return trs, evs
}

// A member one instance of the fleet parks, or takes out on a 401, is
// parked or out on every instance, including one that had not called yet:
// it sends the member nothing, and says why, once.
func TestPoolMemberStateIsTheFleets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		api := newPoolAPI(map[string]int{"sk-aaa": 20, "sk-bbb": 20, "sk-ccc": 20})
		start := time.Now()
		api.revokedAt["sk-aaa"] = start.Add(time.Second)
		api.spentTill["sk-bbb"] = start.Add(8 * time.Second) // a 402, with a Retry-After to 8 s
		trs, evs := fleetOfPools(t, api, store.NewMemory(), 2)

		// The first instance meets the 401 and the 402; the second is idle.
		hammer(trs[0], 4, start.Add(3*time.Second))
		for _, m := range trs[0].Stats().Members[:2] {
			if m.State == pool.Ready {
				t.Fatalf("the first instance's %s is ready after its 401 or 402: %+v", m.Name, m)
			}
		}
		api.mu.Lock()
		met401, met402 := api.other["sk-aaa"], api.other["sk-bbb"]
		api.mu.Unlock()

		// The second begins: it reads the fleet's record at its first call.
		hammer(trs[1], 4, start.Add(6*time.Second))
		api.mu.Lock()
		if n := api.other["sk-aaa"] - met401; n != 0 {
			t.Errorf("the second instance drew %d 401s from a member the fleet had taken out", n)
		}
		if n := api.other["sk-bbb"] - met402; n != 0 {
			t.Errorf("the second instance drew %d 402s from a member the fleet had parked", n)
		}
		api.mu.Unlock()
		st := trs[1].Stats().Members
		if st[0].State != pool.Out || !strings.Contains(st[0].Why, "another instance") {
			t.Errorf("the second instance's a = %+v, want out, saying another instance saw it refused", st[0])
		}
		if st[1].State != pool.Parked || !st[1].Until.Equal(trs[0].Stats().Members[1].Until) {
			t.Errorf("the second instance's b = %+v, want parked until the first's %v", st[1], trs[0].Stats().Members[1].Until)
		}
		if a, b := evs[1].count(observe.EventMemberOut, "a", observe.OriginStore), evs[1].count(observe.EventMemberParked, "b", observe.OriginStore); a != 1 || b != 1 {
			t.Errorf("the second instance said a was out %d times and b parked %d times, from the store; want once each", a, b)
		}
		if n := evs[0].count(observe.EventMemberOut, "a", observe.OriginStore); n != 0 {
			t.Errorf("the first instance read its own record back %d times", n)
		}

		// A put back on the second instance is the first's too.
		if err := trs[1].PutBack("a"); err != nil {
			t.Fatal(err)
		}
		api.mu.Lock()
		delete(api.revokedAt, "sk-aaa") // its credential fixed
		api.mu.Unlock()
		from := time.Now()
		hammer(trs[0], 4, from.Add(time.Second))
		if st := trs[0].Stats().Members[0]; st.State != pool.Ready || api.sentTo("sk-aaa", from, time.Now()) == 0 {
			t.Errorf("after a PutBack on another instance, the first's a is %+v and took %d calls; want it ready, taking calls",
				st, api.sentTo("sk-aaa", from, time.Now()))
		}
		if n := evs[0].count(observe.EventMemberUnparked, "a", observe.OriginStore); n != 1 {
			t.Errorf("the first instance said a was back %d times from the store, want once", n)
		}
	})
}

// A park one instance lengthens, as a later 402 tells a later reset, is
// lengthened on the fleet: another instance that reads the record after
// the first park was published holds the member to the later end, and
// sends it nothing before then.
func TestALengthenedParkIsTheFleets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		api := newPoolAPI(map[string]int{"sk-aaa": 20, "sk-bbb": 20, "sk-ccc": 20})
		trs, _ := fleetOfPools(t, api, store.NewMemory(), 2)
		start := time.Now()
		for _, until := range []time.Time{start.Add(2 * time.Second), start.Add(5 * time.Second)} {
			if err := trs[0].ParkMember("b", until); err != nil {
				t.Fatal(err)
			}
		}
		hammer(trs[1], 4, start.Add(4*time.Second))
		if st := trs[1].Stats().Members[1]; st.State != pool.Parked || !st.Until.Equal(start.Add(5*time.Second)) {
			t.Errorf("the second instance's b = %+v, want parked until the lengthened end %v", st, start.Add(5*time.Second))
		}
		if n := api.sentTo("sk-bbb", start, time.Now()); n != 0 {
			t.Errorf("the second instance sent %d calls through b before its lengthened park ended", n)
		}
	})
}

// A member removed on one instance takes no calls on any; an AddMember of
// it on another puts it back for the fleet. ParkMember parks it fleet-wide.
func TestPoolMembersChangeAtRuntimeForTheFleet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		api := newPoolAPI(map[string]int{"sk-aaa": 20, "sk-bbb": 20, "sk-ccc": 20, "sk-ddd": 20})
		trs, evs := fleetOfPools(t, api, store.NewMemory(), 2)
		if err := trs[0].RemoveMember("c"); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		hammer(trs[1], 4, start.Add(2*time.Second))
		if n := api.sentTo("sk-ccc", start, time.Now()); n != 0 {
			t.Errorf("another instance sent %d calls through a member the fleet removed", n)
		}
		if st := trs[1].Stats().Members[2]; st.State != pool.Removed || evs[1].count(observe.EventMemberOut, "c", observe.OriginStore) != 1 {
			t.Errorf("the other instance's c = %+v, want removed, said once", st)
		}
		if len(trs[0].Stats().Members) != 2 {
			t.Errorf("the instance that removed c still lists %d members", len(trs[0].Stats().Members))
		}

		// An added member takes calls at once, here; adding c back on the
		// first instance puts it back on the second.
		if err := trs[0].AddMember(bearerMember("d", "sk-ddd")); err != nil {
			t.Fatal(err)
		}
		if err := trs[0].AddMember(bearerMember("c", "sk-ccc")); err != nil {
			t.Fatal(err)
		}
		from := time.Now()
		hammer(trs[0], 4, from.Add(2*time.Second))
		hammer(trs[1], 4, from.Add(4*time.Second))
		if d, c := api.sentTo("sk-ddd", from, from.Add(2*time.Second)), api.sentTo("sk-ccc", from.Add(2*time.Second), time.Now()); d < 20 || c < 20 {
			t.Errorf("the added member d took %d calls in 2 s, and c, added back, %d on the other instance; want about 40 each", d, c)
		}

		// ParkMember on the second instance parks c on the first.
		until := time.Now().Add(3 * time.Second)
		if err := trs[1].ParkMember("c", until); err != nil {
			t.Fatal(err)
		}
		from = time.Now()
		hammer(trs[0], 4, until.Add(-time.Second))
		if n := api.sentTo("sk-ccc", from.Add(200*time.Millisecond), time.Now()); n != 0 {
			t.Errorf("the first instance sent %d calls through a member another instance parked", n)
		}
		if st := trs[0].Stats().Members[3]; st.Name != "c" || st.State != pool.Parked || !st.Until.Equal(until) {
			t.Errorf("the first instance's c = %+v, want parked until %v", st, until)
		}
	})
}

// Runtime changes refuse what they cannot do, and change nothing then.
func TestPoolMemberChangesRefuseMistakes(t *testing.T) {
	tr := New(roundTripFunc(nil), WithScope(Scope{Name: "key", Limit: PerSecond(20)}),
		WithPool(pool.Config{Scopes: []string{"key"}, Members: []pool.Member{bearerMember("a", "sk-aaa")}}))
	plain := New(roundTripFunc(nil))
	for _, tt := range []struct {
		what string
		err  error
		want string
	}{
		{"AddMember without a pool", plain.AddMember(bearerMember("a", "x")), "no pool"},
		{"RemoveMember without a pool", plain.RemoveMember("a"), "no pool"},
		{"ParkMember without a pool", plain.ParkMember("a", time.Now().Add(time.Hour)), "no pool"},
		{"a name taken", tr.AddMember(bearerMember("a", "sk-other")), "already"},
		{"no Apply", tr.AddMember(pool.Member{Name: "b"}), "no Apply"},
		{"an undeclared scope", tr.AddMember(pool.Member{Name: "b", Apply: pool.Bearer("x"), Scopes: []string{"nope"}}), `"nope"`},
		{"a control character", tr.AddMember(pool.Member{Name: "b\n", Apply: pool.Bearer("x")}), "control character"},
		{"removing a stranger", tr.RemoveMember("z"), `no member named "z"`},
		{"parking a stranger", tr.ParkMember("z", time.Now().Add(time.Hour)), `no member named "z"`},
		{"parking into the past", tr.ParkMember("a", time.Now().Add(-time.Second)), "not after now"},
	} {
		if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want one saying %q", tt.what, tt.err, tt.want)
		}
	}
	if st := tr.Stats().Members; len(st) != 1 || st[0].State != pool.Ready {
		t.Errorf("after the refused changes, Stats().Members = %+v, want a alone, ready", st)
	}
}

// failingPublish is a shared store whose pace records cannot be written.
type failingPublish struct{ *store.Memory }

func (failingPublish) PublishPace(context.Context, string, string) (int64, error) {
	return 0, errors.New("the store is read-only")
}

// A store that cannot take a member's record is reported; the member's
// state here stands.
func TestPoolMemberStateWhenTheStoreFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		api := newPoolAPI(map[string]int{"sk-aaa": 20, "sk-bbb": 20, "sk-ccc": 20})
		start := time.Now()
		api.revokedAt["sk-aaa"] = start
		trs, evs := fleetOfPools(t, api, failingPublish{store.NewMemory()}, 1)
		hammer(trs[0], 2, start.Add(time.Second))
		if st := trs[0].Stats().Members[0]; st.State != pool.Out {
			t.Errorf("a = %+v, want out though the fleet could not be told", st)
		}
		if n := evs[0].count(observe.EventStoreFailure, "a", ""); n != 1 {
			t.Errorf("%d store failures reported for a's record, want 1", n)
		}
		if err := trs[0].PutBack("a"); err == nil || !strings.Contains(err.Error(), "read-only") {
			t.Errorf("PutBack: err = %v, want the store's refusal", err)
		}
		if st := trs[0].Stats().Members[0]; st.State != pool.Ready {
			t.Errorf("a = %+v after PutBack, want ready here all the same", st)
		}
	})
}

func TestMemberRecords(t *testing.T) {
	for _, r := range []memberRecord{
		{state: pool.Ready}, {state: pool.Out, status: 401}, {state: pool.Removed},
		{state: pool.Parked, until: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC).UnixNano(), status: 402},
	} {
		got, ok := parseMemberRecord(r.String())
		if !ok || got != r {
			t.Errorf("parseMemberRecord(%q) = %+v, %v; want %+v", r.String(), got, ok, r)
		}
		if err := store.CheckPaceRecord(r.String()); err != nil {
			t.Errorf("%q is not a record every store keeps: %v", r.String(), err)
		}
	}
	for _, s := range []string{"", "member", "member ready 0", "member sleeping 0 0", "member parked 0 402",
		"member out -1 0", "member out 0 -401", "member out x 0", "cut 1 2 3", "member ready 0 0 extra"} {
		if r, ok := parseMemberRecord(s); ok {
			t.Errorf("parseMemberRecord(%q) = %+v; want it refused", s, r)
		}
	}
}

// An answer to a call sent before a member was parked is no probe: the
// member stays parked until its reset.
func TestPoolParkIsNotUndoneByACallSentBefore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		var n atomic.Int32
		api := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if n.Add(1) == 1 {
				time.Sleep(50 * time.Millisecond) // sent first, answered last, and fine
				return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
			}
			h := http.Header{"Retry-After": {"60"}}
			return &http.Response{StatusCode: http.StatusPaymentRequired, Header: h, Body: http.NoBody, Request: req}, nil
		})
		tr := New(api, WithoutRetry(), WithPool(pool.Config{Members: []pool.Member{bearerMember("b", "sk-bbb")}}))
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * time.Millisecond)
				get(tr, context.Background(), "http://api.test/")
			})
		}
		wg.Wait()
		if st := tr.Stats().Members[0]; st.State != pool.Parked {
			t.Errorf("b = %+v after the answer to a call sent before its 402; want it parked still", st)
		}
	})
}

// A member added at runtime cannot take a scope another member has, nor
// the shared one: those buckets' Group (a Cluster's hash tag) would
// change under them. A removed member's buckets keep theirs, so that it
// is added back onto the same buckets.
func TestPoolRuntimeMembersKeepTheirBucketsGroups(t *testing.T) {
	tr := New(nil, WithScope(Scope{Name: "own-a", Limit: PerSecond(10)}), WithScope(Scope{Name: "shared", Limit: PerSecond(10)}),
		WithPool(pool.Config{SharedQuota: []string{"shared"}, Members: []pool.Member{{Name: "a", Apply: pool.Bearer("x"), Scopes: []string{"own-a"}}}}))
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	if err := tr.AddMember(pool.Member{Name: "b", Apply: pool.Bearer("y"), Scopes: []string{"own-a"}}); err == nil || !strings.Contains(err.Error(), "another member's") {
		t.Errorf("adding b on a's scope: err = %v, want one saying it is another member's", err)
	}
	if err := tr.AddMember(pool.Member{Name: "b", Apply: pool.Bearer("y"), Scopes: []string{"shared"}}); err == nil || !strings.Contains(err.Error(), "SharedQuota") {
		t.Errorf("adding b on the shared scope: err = %v, want one naming SharedQuota", err)
	}
	own := tr.scopes["own-a"].shared
	if g := tr.pool.groupOf(own); g != "a" {
		t.Fatalf("a's own bucket has Group %q, want a", g)
	}
	if err := tr.RemoveMember("a"); err != nil {
		t.Fatal(err)
	}
	if g := tr.pool.groupOf(own); g != "a" {
		t.Errorf("after a was removed, its bucket has Group %q, want a still", g)
	}
	if err := tr.AddMember(pool.Member{Name: "a", Apply: pool.Bearer("x"), Scopes: []string{"own-a"}}); err != nil {
		t.Errorf("adding a back on its own scope: %v", err)
	}
	if g := tr.pool.groupOf(own); g != "a" {
		t.Errorf("after a was added back, its bucket has Group %q, want a", g)
	}
}

// A member's own scope in tokens is charged what the routes charged the
// call in tokens: no route can name the member, so without it a
// deployment's tokens a minute would count nothing.
func TestPoolMemberScopesInOtherUnitsAreCharged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ok := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
		})
		tr := New(ok, WithoutRetry(),
			WithScope(Scope{Name: "model", Unit: "tokens", Limit: PerMinute(1_000_000)}),
			WithScope(Scope{Name: "deployment-a", Unit: "tokens", Limit: Limit{Count: 300, Per: time.Minute, Burst: 300}}),
			WithRoute(func(req *http.Request, charges []Charge) []Charge {
				return append(charges, Charge{Scope: "model", Cost: 100})
			}),
			WithPool(pool.Config{Members: []pool.Member{{Name: "a", Apply: pool.Header("api-key", "k"), Scopes: []string{"deployment-a"}}}}))
		if err := tr.Err(); err != nil {
			t.Fatal(err)
		}
		admitted := 0
		for range 5 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			if get(tr, ctx, "http://api.test/") == nil {
				admitted++
			}
			cancel()
		}
		// 300 tokens a minute, at the default headroom's burst of 270: two
		// calls of 100 at once, the third a minute's tenth later.
		if admitted > 3 {
			t.Errorf("%d calls of 100 tokens admitted within seconds on a deployment of 300 tokens a minute", admitted)
		}
	})
}

// slowLimits is a shared store whose first read of the published limits
// hangs, whatever its context, until released.
type slowLimits struct {
	*store.Memory
	release chan struct{}
	once    sync.Once
}

func (s *slowLimits) PublishedLimits(ctx context.Context) (map[string]store.PublishedLimit, error) {
	first := false
	s.once.Do(func() { first = true })
	if first {
		<-s.release
	}
	return s.Memory.PublishedLimits(ctx)
}

// A new instance's calls wait for its first read of the fleet's records,
// but no longer than the store's timeout, even when the read hangs.
func TestFirstReadWaitsNoLongerThanTheStoreTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ok := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
		})
		st := &slowLimits{Memory: store.NewMemory(), release: make(chan struct{})}
		tr := New(ok, WithStore(st, store.Policy{LimitSync: time.Second, Timeout: 100 * time.Millisecond}))
		if err := tr.Err(); err != nil {
			t.Fatal(err)
		}
		first := make(chan error, 1)
		go func() { first <- get(tr, context.Background(), "http://api.test/") }()
		time.Sleep(time.Millisecond) // the first call is reading
		start := time.Now()
		if err := get(tr, context.Background(), "http://api.test/"); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited < 99*time.Millisecond || waited > 110*time.Millisecond {
			t.Errorf("the second call waited %v for the first read, want the store timeout, 100ms", waited)
		}
		close(st.release)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
	})
}

// A member with no scopes of its own says nothing of its headroom: it
// shares the calls with the others in turn rather than take them all.
func TestPoolMemberWithoutScopesDoesNotTakeEveryCall(t *testing.T) {
	var mu sync.Mutex
	byKey := map[string]int{}
	ok := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		mu.Lock()
		byKey[req.Header.Get("Authorization")]++
		mu.Unlock()
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
	})
	tr := New(ok, WithScope(Scope{Name: "own-a", Limit: PerSecond(1000)}), WithScope(Scope{Name: "own-b", Limit: PerSecond(1000)}),
		WithPool(pool.Config{Members: []pool.Member{
			{Name: "a", Apply: pool.Bearer("a"), Scopes: []string{"own-a"}},
			{Name: "b", Apply: pool.Bearer("b"), Scopes: []string{"own-b"}},
			{Name: "free", Apply: pool.Bearer("free")},
		}}))
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	for range 30 {
		if err := get(tr, context.Background(), "http://api.test/"); err != nil {
			t.Fatal(err)
		}
	}
	if byKey["Bearer free"] > 20 || byKey["Bearer a"]+byKey["Bearer b"] < 10 {
		t.Errorf("calls by key %v: the member without scopes took nearly all", byKey)
	}
}
