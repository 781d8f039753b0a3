// Package pooltest checks a pool (pacer.WithPool) on a Redis Cluster: each
// member's buckets are hash-tagged together (store.Demand.Group), so the
// take on the chosen member is one script in one slot, one round trip, and
// the pool still gets each member's limit.
package pooltest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/internal/fakeclock"
	"github.com/pacer-go/pacer/internal/testservers"
	"github.com/pacer-go/pacer/pool"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/store/redisstore"
)

// api accepts every call, counting them by credential.
type api struct {
	mu    sync.Mutex
	byKey map[string]int
}

func (a *api) RoundTrip(req *http.Request) (*http.Response, error) {
	a.mu.Lock()
	a.byKey[strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")]++
	a.mu.Unlock()
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
}

// countingStore counts the Takes a Transport asks of its store, and passes every
// call on.
type countingStore struct {
	*redisstore.Store
	n atomic.Int64
}

func (s *countingStore) Take(ctx context.Context, now time.Time, demands []store.Demand) (store.Decision, error) {
	s.n.Add(1)
	return s.Store.Take(ctx, now, demands)
}

// scriptHook records the keys of every take script a client sends.
type scriptHook struct {
	mu   sync.Mutex
	keys [][]string
}

func (h *scriptHook) record(cmd redis.Cmder) {
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		// A node that had not seen the script yet: the client sends it
		// again with EVAL, which is the one that ran.
		return
	}
	// EVALSHA sha numkeys key... mode ...
	a := cmd.Args()
	if name := cmd.Name(); name != "evalsha" && name != "eval" || len(a) < 4 {
		return
	}
	n, ok := a[2].(int)
	if !ok || len(a) < 4+n || a[3+n] != "take" {
		return
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i], _ = a[3+i].(string)
	}
	h.mu.Lock()
	h.keys = append(h.keys, keys)
	h.mu.Unlock()
}

func (h *scriptHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *scriptHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.record(cmd)
		return err
	}
}
func (h *scriptHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			h.record(c)
		}
		return err
	}
}

var limits = map[string]int{"a": 10, "b": 20, "c": 30} // each member's own limit, a second

// run drives a pool of three members, each with a bucket of the pool's
// scope "key" and a scope of its own at its limit, and optionally a shared
// "project" scope, for ten seconds of virtual time: at each step of 2 ms,
// calls that fail fast until one is refused. It returns what each member
// sent, and the keys of every take script the store ran.
func run(t *testing.T, project int) (sent map[string]int, takes, scripts int64, keys [][]string) {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: testservers.RedisClusterAddrs(t)})
	t.Cleanup(func() { cc.Close() })
	hook := &scriptHook{}
	cc.AddHook(hook)
	prefix := "pool-" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + time.Now().Format("150405.000000000")
	st := &countingStore{Store: redisstore.New(cc, redisstore.WithPrefix(prefix), redisstore.WithCallerClock())}
	clk := fakeclock.New(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	a := &api{byKey: map[string]int{}}
	// Headroom 1: each member is paced at its full limit, which the
	// counts below check.
	opts := []pacer.Option{pacer.WithoutRetry(), pacer.WithHeadroom(1), clock.With[pacer.Option](clk.AsClock()),
		pacer.WithScope(pacer.Scope{Name: "key", Limit: pacer.PerSecond(1000)})}
	cfg := pool.Config{Scopes: []string{"key"}}
	for _, name := range []string{"a", "b", "c"} {
		opts = append(opts, pacer.WithScope(pacer.Scope{Name: "own-" + name, Limit: pacer.PerSecond(limits[name])}))
		cfg.Members = append(cfg.Members, pool.Member{Name: name, Apply: pool.Bearer("sk-" + name), Scopes: []string{"own-" + name}})
	}
	if project > 0 {
		opts = append(opts, pacer.WithScope(pacer.Scope{Name: "project", Limit: pacer.PerSecond(project)}))
		cfg.SharedQuota = []string{"project"}
	}
	opts = append(opts, pacer.WithStore(st, store.Policy{}))
	tr := pacer.New(a, append(opts, pacer.WithPool(cfg))...)
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := pacer.ContextWithCall(context.Background(), pacer.Call{FailFast: true})
	for range 5000 { // 10 s
		for range 200 {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				var te *pacer.ThrottledError
				if !errors.As(err, &te) {
					t.Fatal(err)
				}
				break
			}
			resp.Body.Close()
		}
		clk.Advance(2 * time.Millisecond)
	}
	sent = map[string]int{}
	a.mu.Lock()
	for k, n := range a.byKey {
		sent[strings.TrimPrefix(k, "sk-")] = n
	}
	a.mu.Unlock()
	hook.mu.Lock()
	defer hook.mu.Unlock()
	return sent, st.n.Load(), int64(len(hook.keys)), hook.keys
}

// slotter says which slot each key is in, asking the cluster once a key.
type slotter struct {
	t     *testing.T
	cc    *redis.ClusterClient
	known map[string]int64
}

func newSlotter(t *testing.T) *slotter {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: testservers.RedisClusterAddrs(t)})
	t.Cleanup(func() { cc.Close() })
	return &slotter{t: t, cc: cc, known: map[string]int64{}}
}

// of returns the slots of keys.
func (s *slotter) of(keys []string) map[int64]bool {
	s.t.Helper()
	slots := map[int64]bool{}
	for _, k := range keys {
		slot, ok := s.known[k]
		if !ok {
			var err error
			if slot, err = s.cc.ClusterKeySlot(context.Background(), k).Result(); err != nil {
				s.t.Fatal(err)
			}
			s.known[k] = slot
		}
		slots[slot] = true
	}
	return slots
}

// Three members, each its own limit: every take is one script over the
// member's two buckets, in one slot (where each bucket its own tag made
// it two, one after the other), and each member gets its limit.
func TestPoolOnClusterTakesAMemberInOneRoundTrip(t *testing.T) {
	sent, takes, scripts, keys := run(t, 0)
	t.Logf("in 10 s of virtual time: sent %v; %d takes, %d take scripts", sent, takes, scripts)
	for name, limit := range limits {
		// A call admitted at the first step after its token, 2 ms apart:
		// a member of 30 a second sends one each 34 ms, 294 in 10 s (the
		// same on the Memory store).
		if want := 10 * limit; float64(sent[name]) < 0.97*float64(want) || sent[name] > want+limit+1 {
			t.Errorf("member %s sent %d in 10 s, want its limit, %d a second: %d less 3 %%, and at most a burst more", name, sent[name], limit, want)
		}
	}
	if takes == 0 || scripts != takes {
		t.Errorf("the Transport asked %d takes of the store, which ran %d take scripts; want one script a take", takes, scripts)
	}
	slots := newSlotter(t)
	perMember := map[string]map[int64]bool{}
	for _, ks := range keys {
		if len(ks) != 2 {
			t.Fatalf("a take script named keys %q; want a member's two buckets", ks)
		}
		in := slots.of(ks)
		if len(in) != 1 {
			t.Fatalf("a take script named keys %q in %d slots; want one", ks, len(in))
		}
		m := ks[0] // {<prefix>:g:1:<member>}:...
		name := m[strings.Index(m, ":g:")+5 : strings.IndexByte(m, '}')]
		if perMember[name] == nil {
			perMember[name] = map[int64]bool{}
		}
		for slot := range in {
			perMember[name][slot] = true
		}
	}
	for name := range limits {
		if len(perMember[name]) != 1 {
			t.Errorf("member %s's buckets were in slots %v; want one", name, perMember[name])
		}
	}
}

// With a shared quota above the members, the shared bucket is every
// member's, in no member's slot: a take is the member's slot and the
// shared one's, and the pool gets the project's limit, not the sum.
func TestPoolOnClusterSharedQuotaHolds(t *testing.T) {
	const project = 40
	sent, takes, scripts, keys := run(t, project)
	t.Logf("in 10 s of virtual time: sent %v; %d takes, %d take scripts", sent, takes, scripts)
	total := 0
	for _, n := range sent {
		total += n
	}
	// One call each 25 ms, admitted at the first 2 ms step after: 26 ms,
	// 385 in 10 s (the same on the Memory store).
	if want := 10 * project; float64(total) < 0.95*float64(want) || total > want+project+1 {
		t.Errorf("the pool sent %d in 10 s, want the project's limit, %d a second: %d less 5 %%, and at most a burst more", total, project, want)
	}
	slots := newSlotter(t)
	for _, ks := range keys {
		if len(slots.of(ks)) != 1 {
			t.Fatalf("a take script named keys %q in several slots", ks)
		}
		if len(ks) != 1 && len(ks) != 2 {
			t.Fatalf("a take script named keys %q; want a member's two buckets, or the shared one", ks)
		}
	}
}
