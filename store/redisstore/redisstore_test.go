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

// client returns a client of the shared test Redis, closed when t ends.
func client(t testing.TB) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: testservers.RedisAddr(t)})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func TestConformance(t *testing.T) {
	conformance(t, client(t))
}

func conformance(t *testing.T, rdb redis.UniversalClient) {
	s := redisstore.New(rdb, redisstore.WithPrefix("pacer-test"), redisstore.WithCallerClock())
	storetest.Run(t, func(*testing.T) store.Store { return s },
		storetest.WithEviction(func(t *testing.T, _ store.Store, d store.Demand, took, now time.Time) bool {
			// Redis expires keys on its own clock: the bucket is held at
			// virtual time now if its TTL, set at took, reaches that far.
			ttl, err := rdb.PTTL(context.Background(), s.Key(d.Scope, d.Key)).Result()
			if err != nil {
				t.Fatal(err)
			}
			return ttl > now.Sub(took)
		}))
}

// The default clock is Redis's TIME: the now a caller passes, however far
// off, changes nothing.
func TestServerClock(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	s := redisstore.New(rdb, redisstore.WithPrefix("pacer-test"))
	d := store.Demand{Scope: storetest.Scope(t), Rate: 1, Burst: 1, Cost: 1}
	if dec, err := s.Take(ctx, time.Now(), []store.Demand{d}); err != nil || !dec.OK {
		t.Fatalf("first Take = %+v, %v; want granted", dec, err)
	}
	// A caller an hour ahead would have refilled the bucket by its clock.
	dec, err := s.Take(ctx, time.Now().Add(time.Hour), []store.Demand{d})
	if err != nil {
		t.Fatal(err)
	}
	if dec.OK || dec.Wait <= 500*time.Millisecond || dec.Wait > time.Second {
		t.Fatalf("Take by a clock an hour ahead = %+v; want denied, waiting most of a second by Redis's clock", dec)
	}
	// The stamp is Redis's time, in microseconds.
	stamp, err := rdb.HGet(ctx, s.Key(d.Scope, d.Key), "s").Int64()
	if err != nil {
		t.Fatal(err)
	}
	server, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if diff := server.Sub(time.UnixMicro(stamp)); diff < 0 || diff > 5*time.Second {
		t.Fatalf("the bucket's stamp is %v from Redis's TIME; want it written by that clock", diff)
	}
}

// After SCRIPT FLUSH (or a restart) EVALSHA answers NOSCRIPT; the store
// sends the script again and carries on.
func TestScriptReloaded(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	s := redisstore.New(rdb, redisstore.WithPrefix("pacer-test"))
	d := []store.Demand{{Scope: storetest.Scope(t), Rate: 1, Burst: 5, Cost: 1}}
	if _, err := s.Take(ctx, time.Now(), d); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if dec, err := s.Take(ctx, time.Now(), d); err != nil || !dec.OK {
		t.Fatalf("Take after SCRIPT FLUSH = %+v, %v; want granted", dec, err)
	}
}

// Every bucket written has a TTL: until it would be full again, at least a
// second. A bucket that is full again is deleted.
func TestKeysExpire(t *testing.T) {
	rdb := client(t)
	ctx := context.Background()
	s := redisstore.New(rdb, redisstore.WithPrefix("pacer-test"))
	d := store.Demand{Scope: storetest.Scope(t), Key: "k", Rate: 100, Burst: 1000, Cost: 300}
	if _, err := s.Take(ctx, time.Now(), []store.Demand{d}); err != nil {
		t.Fatal(err)
	}
	ttl, err := rdb.PTTL(ctx, s.Key(d.Scope, d.Key)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= 2*time.Second || ttl > 3*time.Second {
		t.Fatalf("TTL after taking 300 of 1000 at 100/s = %v; want 3 s", ttl)
	}
	fast := store.Demand{Scope: d.Scope, Key: "fast", Rate: 1e6, Burst: 10, Cost: 1}
	if _, err := s.Take(ctx, time.Now(), []store.Demand{fast}); err != nil {
		t.Fatal(err)
	}
	if ttl, _ := rdb.PTTL(ctx, s.Key(fast.Scope, fast.Key)).Result(); ttl <= 900*time.Millisecond || ttl > time.Second {
		t.Fatalf("TTL of a bucket full again in a microsecond = %v; want the 1 s minimum", ttl)
	}
	if err := s.Refund(ctx, time.Now(), []store.Demand{d}); err != nil {
		t.Fatal(err)
	}
	d.Cost = 1000
	if err := s.Refund(ctx, time.Now(), []store.Demand{d}); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.Exists(ctx, s.Key(d.Scope, d.Key)).Result(); n != 0 {
		t.Fatal("a bucket refunded to full is still stored")
	}
}

// Every key of one store shares one hash tag, so a multi-scope Take is a
// single-slot script in Redis Cluster.
func TestKeysShareHashTag(t *testing.T) {
	s := redisstore.New(nil, redisstore.WithPrefix("svc"))
	for _, k := range []string{s.Key("a", ""), s.Key("b:{x}", "y"), s.Key("", "z")} {
		if got := k[:len("{svc}")]; got != "{svc}" {
			t.Errorf("key %q does not start with the hash tag {svc}", k)
		}
	}
	if s.Key("a:b", "c") == s.Key("a", "b:c") {
		t.Error(`scope "a:b" key "c" and scope "a" key "b:c" share a key`)
	}
}
