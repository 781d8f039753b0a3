package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pacer-go/pacer/internal/testservers"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/store/redisstore"
	"github.com/pacer-go/pacer/storetest"
)

// 32 writers, 500 decisions each, one bucket of 8000 that does not refill:
// exactly 8000 are granted, counted, and the bucket is left empty.
func TestNoLostUpdates(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: testservers.RedisAddr(t), PoolSize: writers})
	t.Cleanup(func() { rdb.Close() })
	noLostUpdates(t, rdb)
}

const writers, perWriter = 32, 500

func noLostUpdates(t *testing.T, rdb redis.UniversalClient) {
	const burst = writers * perWriter / 2
	ctx := context.Background()
	s := redisstore.New(rdb, redisstore.WithPrefix("pacer-test"))
	d := []store.Demand{{Scope: storetest.Scope(t), Burst: burst, Cost: 1}}

	got := storetest.Count(t, writers, perWriter, func() (bool, error) {
		dec, err := s.Take(ctx, time.Now(), d)
		return dec.OK, err
	})
	if got != burst {
		t.Fatalf("%d decisions on a bucket of %d granted %d", writers*perWriter, burst, got)
	}
	tokens, err := rdb.HGet(ctx, s.Key(d[0].Scope, ""), "t").Float64()
	if err != nil {
		t.Fatal(err)
	}
	if tokens != 0 {
		t.Fatalf("after granting the whole bucket it holds %v tokens, want 0", tokens)
	}
}
