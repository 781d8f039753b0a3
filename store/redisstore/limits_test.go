package redisstore_test

import (
	"context"
	"testing"

	"github.com/pacer-go/pacer/internal/testservers"
	"github.com/pacer-go/pacer/store/redisstore"
	"github.com/pacer-go/pacer/storetest"
	"github.com/redis/go-redis/v9"
)

// A fleet of four on Redis sees a SetLimit within the sync interval.
func TestLimitSync(t *testing.T) {
	rdb := client(t)
	prefix := "pacer-limits-" + t.Name()
	rdb.Del(context.Background(), "{"+prefix+"}:limits", "{"+prefix+"}:limits:version")
	storetest.LimitSync(t, redisstore.New(rdb, redisstore.WithPrefix(prefix), redisstore.WithCallerClock()))
}

// And on a Redis Cluster, where the limits live in one slot.
func TestLimitSyncCluster(t *testing.T) {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: testservers.RedisClusterAddrs(t)})
	t.Cleanup(func() { rdb.Close() })
	prefix := "pacer-limits-" + t.Name()
	rdb.Del(context.Background(), "{"+prefix+"}:limits", "{"+prefix+"}:limits:version")
	storetest.LimitSync(t, redisstore.New(rdb, redisstore.WithPrefix(prefix), redisstore.WithCallerClock()))
}

// A cut one instance takes on a refusal reaches the others at their next
// sync, once, and the store keeps pace records as given — on one Redis and
// on a Cluster, where the pace records share the limits' slot.
func TestCutSync(t *testing.T) {
	for _, name := range []string{"single", "cluster"} {
		t.Run(name, func(t *testing.T) {
			var rdb redis.UniversalClient
			if name == "single" {
				rdb = client(t)
			} else {
				rdb = clusterClient(t, 0)
			}
			prefix := "pacer-paces-" + t.Name()
			keys := []string{"{" + prefix + "}:limits", "{" + prefix + "}:limits:version", "{" + prefix + "}:paces"}
			ctx := context.Background()
			for _, k := range keys {
				rdb.Del(ctx, k) // one at a time: a Cluster client sends each to its slot's node
			}
			t.Cleanup(func() {
				for _, k := range keys {
					rdb.Del(ctx, k)
				}
			})
			s := redisstore.New(rdb, redisstore.WithPrefix(prefix), redisstore.WithCallerClock())
			storetest.PaceRecords(t, s)
			storetest.CutSync(t, s)
		})
	}
}
