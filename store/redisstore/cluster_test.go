package redisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/pacer-go/pacer/internal/testservers"
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
