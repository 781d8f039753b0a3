package fleettest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/internal/testservers"
	"github.com/pacer-go/pacer/pool"
	"github.com/pacer-go/pacer/store"
)

// A pool behind a fleet: every process sends through the same three keys,
// each configured at its key's full limit, on one shared store.
const (
	envPool    = "PACER_FLEET_POOL"
	poolRunFor = 8 * time.Second
	// When key b's quota is spent: one call, the first at or after it,
	// meets a 402 whose Retry-After says it returns parkFor later. Only the
	// process that sent that call learns it from an answer; every other
	// must learn it from the store.
	spendAt = 2 * time.Second
	parkFor = 3 * time.Second
	// How soon every process must have stopped sending through b.
	learnWithin = time.Second
)

// poolLimits are the keys' limits, in calls a second: each member's own
// scope, which every process configures in full.
var poolLimits = map[string]int{"sk-a": 30, "sk-b": 50, "sk-c": 70}

// poolChild is one process of the fleet: pacer with the pool, at every
// key's full limit, on the shared store, syncing limits (and so members)
// every 100 ms, sending until the deadline.
func poolChild(kind string) (int64, error) {
	ctx := context.Background()
	shared, until, closeStore, err := childStore(ctx, kind, senders)
	if err != nil {
		return 0, err
	}
	defer closeStore()
	opts := []pacer.Option{pacer.WithoutRetry(),
		pacer.WithStore(shared, store.Policy{OnFailure: store.FailClosed, LimitSync: 100 * time.Millisecond, Timeout: storeTimeout})}
	var members []pool.Member
	for _, name := range []string{"a", "b", "c"} {
		key := "sk-" + name
		opts = append(opts, pacer.WithScope(pacer.Scope{Name: "key-" + name, Limit: pacer.PerSecond(poolLimits[key])}))
		members = append(members, pool.Member{Name: name, Apply: pool.Bearer(key), Scopes: []string{"key-" + name}})
	}
	tr := pacer.New(nil, append(opts, pacer.WithPool(pool.Config{Members: members}))...)
	if err := tr.Err(); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	var sent int64
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, os.Getenv(envTarget), nil)
				resp, err := tr.RoundTrip(req)
				mu.Lock()
				switch {
				case err == nil:
					resp.Body.Close()
					sent++
				case ctx.Err() == nil && !errors.Is(err, pacer.ErrThrottled) && firstErr == nil:
					firstErr = err // near the end, a wait past the deadline fails at once: pacing, not an error
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return sent, firstErr
}

// poolServer counts what each key was sent, and spends key b's quota once.
type poolServer struct {
	start time.Time
	mu    sync.Mutex
	ok    map[string][]time.Time // accepted, by key
	spent []time.Time            // b's answers of 402
}

func (s *poolServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if key == "sk-b" && len(s.spent) == 0 && now.Sub(s.start) >= spendAt {
		s.spent = append(s.spent, now)
		w.Header().Set("Retry-After", fmt.Sprint(int(parkFor.Seconds())))
		w.WriteHeader(http.StatusPaymentRequired)
		return
	}
	if _, known := poolLimits[key]; !known {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	s.ok[key] = append(s.ok[key], now)
}

func TestPoolFleetRedis(t *testing.T) {
	t.Parallel()
	runPoolFleet(t, "redis", testservers.RedisAddr(t), "pool-"+randomName())
}

func TestPoolFleetRedisCluster(t *testing.T) {
	t.Parallel()
	runPoolFleet(t, "redis-cluster", strings.Join(testservers.RedisClusterAddrs(t), ","), "pool-"+randomName())
}

// runPoolFleet runs the pool's processes against one server: together they
// stay within each key's limit, and the key one of them finds spent is
// parked on every one of them until its reset, then used again.
func runPoolFleet(t *testing.T, kind, server, name string) {
	// The processes start together; the server's clock starts with them.
	until := time.Now().Add(poolRunFor + time.Second) // a second to start
	srv := &poolServer{start: until.Add(-poolRunFor), ok: map[string][]time.Time{}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	spawn(t, kind, server, name, ts.URL, until, []string{envPool + "=1"}, func(string) error { return nil })

	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.spent) != 1 {
		t.Fatalf("key b's quota was never spent: the fleet sent it nothing after %v", spendAt)
	}
	spentAt := srv.spent[0]
	for key, limit := range poolLimits {
		arrivals := srv.ok[key]
		slices.SortFunc(arrivals, func(a, b time.Time) int { return a.Compare(b) })
		most, j := 0, 0
		for i := range arrivals {
			for j < len(arrivals) && arrivals[j].Sub(arrivals[i]) < time.Second {
				j++
			}
			most = max(most, j-i)
		}
		burst := int(float64(limit) * 0.1) // the default headroom's burst
		t.Logf("%s (%d/s): %d accepted; the busiest second saw %d", key, limit, len(arrivals), most)
		if most > limit+burst {
			t.Errorf("%s: a one-second window saw %d calls; the key allows %d, plus a burst of %d", key, most, limit, burst)
		}
		if n := len(arrivals); float64(n) < 0.6*float64(limit)*(poolRunFor-parkFor).Seconds() {
			t.Errorf("%s: the fleet sent it %d calls, well under its limit", key, n)
		}
	}
	var parked, after int
	for _, at := range srv.ok["sk-b"] {
		switch {
		case at.After(spentAt.Add(learnWithin)) && at.Before(spentAt.Add(parkFor)):
			parked++
		case at.After(spentAt.Add(parkFor)):
			after++
		}
	}
	t.Logf("key b: spent at %v; %d calls from %v to its reset, %d after", spentAt.Sub(srv.start).Round(time.Millisecond), parked, learnWithin, after)
	if parked != 0 {
		t.Errorf("the fleet sent %d calls through key b between %v after one process found it spent and its reset: it was not parked on every process", parked, learnWithin)
	}
	if after == 0 {
		t.Errorf("key b took no call after its reset: it stayed parked")
	}
}
