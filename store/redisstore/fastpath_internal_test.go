package redisstore

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pacer-go/pacer/internal/testservers"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/storetest"
)

// The fast path of take.lua (a take of one bucket) decides as the general
// path does, and leaves a bucket that every other operation (refund,
// adjust, clamp, a take of several buckets, and earlier versions' script)
// reads as the general path's. Two buckets go through the same random
// sequence of operations, one taking by the fast path, the other by the
// general one (a take of it and of a second bucket that costs nothing,
// which the general path skips); after every step their decisions, levels
// and TTLs must be equal. The times are multiples of 1/64 s and the numbers
// small integers, so that every level is exact in binary and the two may be
// compared with ==: a difference is a bug, not a rounding.
func TestFastPathAgrees(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: testservers.RedisAddr(t)})
	t.Cleanup(func() { rdb.Close() })
	for _, window := range []time.Duration{0, 2 * time.Second} {
		for seed := range uint64(6) {
			t.Run("window="+window.String()+"/seed="+strconv.FormatUint(seed, 10), func(t *testing.T) {
				fastPathAgrees(t, rdb, window, seed)
			})
		}
	}
}

func fastPathAgrees(t *testing.T, rdb *redis.Client, window time.Duration, seed uint64) {
	ctx := context.Background()
	s := New(rdb, WithPrefix("pacer-test"), WithCallerClock())
	scope := storetest.Scope(t)
	fast := store.Demand{Scope: scope, Key: "fast", Rate: 4, Burst: 8, Window: window}
	general := fast
	general.Key = "general"
	free := store.Demand{Scope: scope, Key: "free"} // costs nothing: the general path skips it
	rng := rand.New(rand.NewPCG(seed, 18))
	const tick = 15625 * time.Microsecond // 1/64 s: exact in binary
	now := storetest.Start
	for step := range 400 {
		switch r := rng.IntN(100); {
		case r < 8: // the clock stands still
		case r < 12: // it goes back a little
			now = now.Add(-time.Duration(1+rng.IntN(8)) * tick)
		case r < 15: // a long pause: the bucket is full again
			now = now.Add(time.Duration(64*3+rng.IntN(64*3)) * tick)
		default:
			now = now.Add(time.Duration(1+rng.IntN(24)) * tick)
		}
		if rng.IntN(30) == 0 { // a live limit change
			fast.Rate, fast.Burst = float64(1+rng.IntN(8)), float64(2+rng.IntN(12))
			general.Rate, general.Burst = fast.Rate, fast.Burst
		}
		cost := float64(rng.IntN(6)) // 0 costs nothing: the fast path's early return
		var op string
		var errF, errG error
		switch r := rng.IntN(100); {
		case r < 70:
			op = "take"
			fast.Cost, fast.Floor = cost, float64(rng.IntN(3)*rng.IntN(2))
			general.Cost, general.Floor = fast.Cost, fast.Floor
			df, err1 := s.Take(ctx, now, []store.Demand{fast})
			dg, err2 := s.Take(ctx, now, []store.Demand{general, free})
			errF, errG = err1, err2
			if df != dg {
				t.Fatalf("step %d at %v: take of %v (floor %v): fast path %+v, general %+v",
					step, now.Sub(storetest.Start), cost, fast.Floor, df, dg)
			}
		case r < 80:
			op = "refund"
			fast.Cost, general.Cost = cost, cost
			errF = s.Refund(ctx, now, []store.Demand{fast})
			errG = s.Refund(ctx, now, []store.Demand{general})
		case r < 90:
			op = "adjust"
			fast.Cost = cost - 2
			general.Cost = fast.Cost
			errF = s.Adjust(ctx, now, []store.Demand{fast})
			errG = s.Adjust(ctx, now, []store.Demand{general})
		default:
			op = "clamp"
			level := float64(rng.IntN(6))
			errF = s.Clamp(ctx, now, fast, level)
			errG = s.Clamp(ctx, now, general, level)
		}
		if errF != nil || errG != nil {
			t.Fatalf("step %d: %s: %v, %v", step, op, errF, errG)
		}
		lf, ttlF := bucketAt(t, rdb, s.Key(scope, fast.Key), fast, now)
		lg, ttlG := bucketAt(t, rdb, s.Key(scope, general.Key), general, now)
		if lf != lg || (ttlF < 0) != (ttlG < 0) || (ttlF-ttlG).Abs() > 100*time.Millisecond {
			t.Fatalf("step %d at %v, after %s: fast path's bucket holds %v (TTL %v), general path's %v (TTL %v)",
				step, now.Sub(storetest.Start), op, lf, ttlF, lg, ttlG)
		}
	}
}

// bucketAt returns the level of the bucket at key at now, as take.lua's
// level computes it, and its TTL (negative: no key).
func bucketAt(t *testing.T, rdb *redis.Client, key string, d store.Demand, now time.Time) (float64, time.Duration) {
	t.Helper()
	ctx := context.Background()
	v, err := rdb.HMGet(ctx, key, "t", "s").Result()
	if err != nil {
		t.Fatal(err)
	}
	ttl, err := rdb.PTTL(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if v[0] == nil || v[1] == nil {
		return d.Burst, -1
	}
	tok, err1 := strconv.ParseFloat(v[0].(string), 64)
	st, err2 := strconv.ParseFloat(v[1].(string), 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("bucket %s = %v", key, v)
	}
	us := float64(now.UnixMicro())
	if d.Window > 0 {
		if us-st >= float64(d.Window.Microseconds()) {
			tok = d.Burst
		}
	} else if us > st {
		tok += (us - st) / 1e6 * d.Rate
	}
	return math.Min(tok, d.Burst), ttl
}

// On Redis's clock the fast path leaves a bucket's TTL alone while the key
// outlives the bucket's refill, and sets it when a take pushes the refill
// past it. After every take the key must outlive the time until the bucket
// is full again, or Redis would forget a bucket that is not full: a take
// that skipped a PEXPIRE it needed fails here.
func TestFastPathKeepsTheTTL(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: testservers.RedisAddr(t)})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	s := New(rdb, WithPrefix("pacer-test"))
	// 5 ms of refill a take: the first TTL, the one-second minimum, is
	// outlived after about 200 takes.
	d := store.Demand{Scope: storetest.Scope(t), Rate: 1000, Burst: 2000, Cost: 5}
	key := s.Key(d.Scope, d.Key)
	var kept, set int // takes that left the TTL alone, that set it again
	last := time.Duration(-1)
	for i := range 300 {
		if dec, err := s.Take(ctx, time.Now(), []store.Demand{d}); err != nil || !dec.OK {
			t.Fatalf("take %d = %+v, %v; want granted", i, dec, err)
		}
		pttl := outlivesRefill(t, rdb, key, d, i)
		if last >= 0 && pttl <= last {
			kept++
		} else if last >= 0 {
			set++
		}
		last = pttl
	}
	if kept == 0 || set == 0 {
		t.Fatalf("of 300 takes, %d left the TTL alone and %d set it; want some of each", kept, set)
	}
}

// outlivesRefill returns the TTL of the refilling bucket of d at key, and
// fails unless the key outlives the time until the bucket is full again
// (after take i), by Redis's clock.
func outlivesRefill(t *testing.T, rdb *redis.Client, key string, d store.Demand, i int) time.Duration {
	t.Helper()
	ctx := context.Background()
	// The bucket, its TTL and Redis's time, at one instant.
	var hm *redis.SliceCmd
	var pttl *redis.DurationCmd
	var now *redis.TimeCmd
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		hm = p.HMGet(ctx, key, "t", "s")
		pttl = p.PTTL(ctx, key)
		now = p.Time(ctx)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if hm.Val()[0] == nil || hm.Val()[1] == nil {
		t.Fatalf("take %d: no bucket at %s", i, key)
	}
	tok, err1 := strconv.ParseFloat(hm.Val()[0].(string), 64)
	st, err2 := strconv.ParseFloat(hm.Val()[1].(string), 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("take %d: bucket %s = %v", i, key, hm.Val())
	}
	us := float64(now.Val().UnixMicro())
	level := math.Min(d.Burst, tok+(us-st)/1e6*d.Rate)
	full := time.Duration((d.Burst - level) / d.Rate * float64(time.Second))
	// Redis sets a TTL in milliseconds, from its own clock's last
	// millisecond: allow 2 ms.
	if pttl.Val() < full-2*time.Millisecond {
		t.Fatalf("take %d: the bucket is full again in %v, its key expires in %v", i, full, pttl.Val())
	}
	return pttl.Val()
}
