package redisstore_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pacer-go/pacer/internal/testservers"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/store/redisstore"
)

// The same benchmarks on the three-primary cluster of scripts/test, and
// over 100,000 buckets, on one node and on the cluster. Run them with both
// servers:
//
//	PACER_REDIS_ADDR=... PACER_REDIS_CLUSTER_ADDRS=... go test -run '^$' -bench 'Cluster|Keys' ./store/redisstore

func benchCluster(b *testing.B) (*redis.ClusterClient, *roundTrips) {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: testservers.RedisClusterAddrs(b), PoolSize: callers})
	b.Cleanup(func() { cc.Close() })
	rt := &roundTrips{client: cc}
	cc.AddHook(rt)
	return cc, rt
}

func BenchmarkRedisstoreCluster(b *testing.B) {
	cc, rt := benchCluster(b)
	benchStoreOn(b, cc, rt, func(s store.Store) store.Store { return s })
}

// Two scopes in one decision, in two slots: an ordered take, two round
// trips one after the other.
func BenchmarkRedisstoreClusterTwoScopes(b *testing.B) {
	cc, rt := benchCluster(b)
	benchTwoScopes(b, cc, rt)
}

func BenchmarkRedisRateCluster(b *testing.B) {
	cc, rt := benchCluster(b)
	benchRedisRate(b, cc, rt, 1e9)
}

func BenchmarkRedisRateClusterWrites(b *testing.B) {
	cc, rt := benchCluster(b)
	benchRedisRate(b, cc, rt, 1e6)
}

// keys is how many buckets the spread benchmarks cycle through: a scope
// keyed per end user.
const keys = 100_000

// benchKeys takes from 100,000 buckets of one scope in turn.
func benchKeys(b *testing.B, rdb redis.UniversalClient, rt *roundTrips) *redisstore.Store {
	s := redisstore.New(rdb, redisstore.WithPrefix("pacer-bench-"+strconv.FormatInt(time.Now().UnixNano(), 36)))
	var next atomic.Int64
	run(b, rt, func(ctx context.Context) error {
		i := next.Add(1) % keys
		// Slow to refill: every bucket written stays until it is counted.
		d := []store.Demand{{Scope: "per-user", Key: strconv.FormatInt(i, 10), Rate: 0.001, Burst: 1e9, Cost: 1}}
		_, err := s.Take(ctx, time.Now(), d)
		return err
	})
	return s
}

func BenchmarkRedisstoreKeys(b *testing.B) {
	rdb, rt := benchClient(b)
	benchKeys(b, rdb, rt)
}

// On the cluster, it also reports how the buckets it wrote are spread over
// the primaries: the largest and smallest shard's share of an even split.
func BenchmarkRedisstoreClusterKeys(b *testing.B) {
	cc, rt := benchCluster(b)
	s := benchKeys(b, cc, rt)
	if b.N < keys {
		return // not every bucket was written
	}
	b.StopTimer()
	ctx := context.Background()
	var mu sync.Mutex
	var counts []int
	match := s.Key("per-user", "*")
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		n := 0
		iter := node.Scan(ctx, 0, match, 10000).Iterator()
		for iter.Next(ctx) {
			n++
		}
		mu.Lock()
		counts = append(counts, n)
		mu.Unlock()
		return iter.Err()
	})
	if err != nil {
		b.Fatal(err)
	}
	lo, hi, total := counts[0], counts[0], 0
	for _, n := range counts {
		lo, hi, total = min(lo, n), max(hi, n), total+n
	}
	even := float64(total) / float64(len(counts))
	b.ReportMetric(float64(len(counts)), "shards")
	b.ReportMetric(float64(total), "keys")
	b.ReportMetric(100*(float64(hi)/even-1), "%above-even")
	b.ReportMetric(100*(1-float64(lo)/even), "%below-even")
	b.Logf("keys per primary: %v", counts)
}
