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
