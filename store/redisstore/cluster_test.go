package redisstore_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pacer-go/pacer/internal/testservers"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/store/redisstore"
	"github.com/pacer-go/pacer/storetest"
)

// clusterClient returns a client of the shared test cluster, closed when t
// ends.
func clusterClient(t testing.TB, poolSize int) *redis.ClusterClient {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: testservers.RedisClusterAddrs(t), PoolSize: poolSize})
	t.Cleanup(func() { cc.Close() })
	return cc
}

func TestClusterConformance(t *testing.T) {
	conformance(t, clusterClient(t, 0))
}

func TestClusterNoLostUpdates(t *testing.T) {
	noLostUpdates(t, clusterClient(t, writers))
}

// On a Cluster each bucket is its own hash tag, so a scope's keyed buckets
// spread over every shard: 6000 keys of one scope, each primary within
// ±10 % of a third. Elsewhere every bucket shares the prefix's tag.
func TestClusterKeysSpread(t *testing.T) {
	cc := clusterClient(t, 32)
	ctx := context.Background()
	prefix := "spread-" + strings.ReplaceAll(storetest.Scope(t), "/", "-")
	s := redisstore.New(cc, redisstore.WithPrefix(prefix))
	const keys = 6000
	var next atomic.Int64
	storetest.Count(t, 32, keys/32+1, func() (bool, error) {
		i := next.Add(1)
		if i > keys {
			return false, nil
		}
		// Slow to refill, so that no bucket expires before it is counted.
		d := store.Demand{Scope: "per-user", Key: "user-" + strconv.FormatInt(i, 10), Rate: 0.01, Burst: 10, Cost: 1}
		dec, err := s.Take(ctx, time.Now(), []store.Demand{d})
		return dec.OK, err
	})
	perShard := keysPerPrimary(t, ctx, cc, "{"+prefix+":*")
	t.Logf("%d keys of one scope per primary: %v", keys, perShard)
	if len(perShard) != 3 {
		t.Fatalf("the cluster has %d primaries, want 3", len(perShard))
	}
	total := 0
	for addr, n := range perShard {
		total += n
		if even := keys / 3.0; float64(n) < 0.9*even || float64(n) > 1.1*even {
			t.Errorf("primary %s holds %d of %d keys; want within 10%% of %.0f", addr, n, keys, even)
		}
	}
	if total != keys {
		t.Errorf("the primaries hold %d keys, want %d", total, keys)
	}

	single := redisstore.New(nil, redisstore.WithPrefix("svc"))
	if k := single.Key("a", "b"); k != "{svc}:1:a:b" {
		t.Errorf("off a Cluster, Key = %q; want the prefix as the hash tag, {svc}:1:a:b", k)
	}
	pinned := redisstore.New(cc, redisstore.WithPrefix("svc"), redisstore.WithSingleSlot())
	if k := pinned.Key("a", "b"); k != "{svc}:1:a:b" {
		t.Errorf("WithSingleSlot, Key = %q; want {svc}:1:a:b", k)
	}
}

// A name with a '}' would cut the hash tag short, and every key of that
// scope would share a slot: such a bucket's tag is its name's hash.
func TestClusterKeyTags(t *testing.T) {
	s := redisstore.New(redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}), redisstore.WithPrefix("p"))
	tag := func(k string) string {
		open := strings.IndexByte(k, '{')
		end := strings.IndexByte(k[open+1:], '}')
		if open != 0 || end <= 0 {
			t.Fatalf("key %q does not start with a hash tag", k)
		}
		return k[1 : 1+end]
	}
	if got := tag(s.Key("users", "42")); got != "p:5:users:42" {
		t.Errorf("the tag of a plain name is %q, want the whole name, p:5:users:42", got)
	}
	a, b := tag(s.Key("a}", "1")), tag(s.Key("a}", "2"))
	if a == b || strings.HasPrefix(a, "p:") {
		t.Errorf("names with a '}' got tags %q and %q; want each its own hash", a, b)
	}
	seen := map[string]bool{}
	for _, k := range []string{s.Key("a:b", "c"), s.Key("a", "b:c"), s.Key("a}", "1"), s.Key("a}", "2"), s.Key("{x}", "")} {
		if seen[k] {
			t.Errorf("two buckets share the key %q", k)
		}
		seen[k] = true
	}
}

// keysPerPrimary counts the keys matching pattern on each primary of cc,
// by its address.
func keysPerPrimary(t *testing.T, ctx context.Context, cc *redis.ClusterClient, pattern string) map[string]int {
	t.Helper()
	perShard := map[string]int{}
	var mu sync.Mutex
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		n := 0
		iter := node.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			n++
		}
		mu.Lock()
		perShard[node.Options().Addr] = n
		mu.Unlock()
		return iter.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return perShard
}

// cmdHook is a go-redis hook that shows each command it sends, pipelined
// or not, to a function, once answered (cmd.Err is its error).
type cmdHook func(redis.Cmder)

func (h cmdHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h cmdHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h(cmd)
		return err
	}
}
func (h cmdHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			h(cmd)
		}
		return err
	}
}
