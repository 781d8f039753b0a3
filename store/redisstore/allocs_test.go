package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/store/redisstore"
	"github.com/pacer-go/pacer/storetest"
)

// A decision on one bucket allocates less on the client than redis_rate's
// Allow on the same client: on a machine where the client and Redis share
// the cores, the client's work is taken from Redis (see BENCHMARKS.md).
// What is left is go-redis's own (the command, its reply, the pool's
// connection check: 5) and the call's: the arguments, the key, the key in
// an interface, the demand's numbers.
func TestTakeAllocs(t *testing.T) {
	takeAllocs(t, client(t))
}

// The same on a Cluster, where a bucket's key is its own hash tag: the key
// is still one concatenation.
func TestClusterTakeAllocs(t *testing.T) {
	takeAllocs(t, clusterClient(t, 0))
}

func takeAllocs(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	s := redisstore.New(rdb, redisstore.WithPrefix("pacer-test"))
	d := []store.Demand{{Scope: storetest.Scope(t), Rate: 1e6, Burst: 1e6, Cost: 1}}
	now := time.Now()
	take := testing.AllocsPerRun(200, func() {
		if dec, err := s.Take(ctx, now, d); err != nil || !dec.OK {
			t.Fatalf("Take = %+v, %v; want granted", dec, err)
		}
	})
	limiter := redis_rate.NewLimiter(rdb)
	key := "pacer-test:" + storetest.Scope(t)
	allow := testing.AllocsPerRun(200, func() {
		if res, err := limiter.Allow(ctx, key, redis_rate.PerSecond(1e6)); err != nil || res.Allowed != 1 {
			t.Fatalf("Allow = %+v, %v; want allowed", res, err)
		}
	})
	t.Logf("allocations a decision: redisstore %v, redis_rate %v", take, allow)
	const most = 10
	if take > most || take >= allow {
		t.Errorf("Take allocates %v times a decision, redis_rate's Allow %v; want at most %v and fewer than redis_rate", take, allow, most)
	}
}
