package redisstore

import (
	"context"
	_ "embed"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pacer-go/pacer/internal/testservers"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/storetest"
)

// The script as it was before the fast path (main at 2434665): what the
// instances not yet upgraded run during a rolling upgrade.
//
//go:embed testdata/take-before-fastpath.lua
var takeBefore string

var scriptBefore = redis.NewScript(takeBefore)

// oldTake is a take of one bucket by the script before the fast path, on
// Redis's clock, as an instance not yet upgraded makes it.
func oldTake(ctx context.Context, rdb redis.UniversalClient, s *Store, d store.Demand) (bool, error) {
	reply, err := scriptBefore.Run(ctx, rdb, []string{s.Key(d.Scope, d.Key)},
		"take", "", d.Rate, d.Burst, d.Window.Microseconds(), d.Cost, d.Floor).Int64Slice()
	if err != nil {
		return false, err
	}
	return reply[0] == 1, nil
}

// A fleet in the middle of a rolling upgrade: instances of the version
// before the fast path and of this one take from the same buckets at once.
// Together they grant exactly what one version would (a bucket of 4000 that
// does not refill, 32 writers, every other one not yet upgraded), and after
// any take, by either, the key outlives the bucket's refill. The running
// total this version reports (store.Decision.Taken) counts its own takes:
// an earlier script neither counts nor clears it, so until the upgrade ends
// the new instances read the old ones' spending as a neighbour's.
func TestMixedVersions(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: testservers.RedisAddr(t), PoolSize: 32})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	s := New(rdb, WithPrefix("pacer-test"))

	t.Run("count", func(t *testing.T) {
		const writers, each, burst = 32, 250, 4000
		d := store.Demand{Scope: storetest.Scope(t), Burst: burst, Cost: 1}
		var w, granted atomic.Int64
		var mu sync.Mutex
		var total float64 // the largest total a take of this version reported
		got := storetest.Count(t, writers, each, func() (bool, error) {
			// Every other call, whichever writer makes it, is an old
			// instance's.
			if w.Add(1)%2 == 0 {
				return oldTake(ctx, rdb, s, d)
			}
			dec, err := s.Take(ctx, time.Now(), []store.Demand{d})
			if dec.OK {
				granted.Add(1)
				mu.Lock()
				total = max(total, dec.Taken)
				mu.Unlock()
			}
			return dec.OK, err
		})
		if got != burst {
			t.Fatalf("%d takes of a bucket of %d by both versions granted %d", writers*each, burst, got)
		}
		if total != float64(granted.Load()) {
			t.Fatalf("this version was granted %d and reported a total of %v taken; want its own grants", granted.Load(), total)
		}
		if tok, err := rdb.HGet(ctx, s.Key(d.Scope, ""), "t").Float64(); err != nil || tok != 0 {
			t.Fatalf("the bucket holds %v, %v after granting all of it; want 0", tok, err)
		}
	})

	t.Run("ttl", func(t *testing.T) {
		// The old version sets the TTL exactly, which may be shorter than
		// the one the new one left; the new one must see that and set it.
		d := store.Demand{Scope: storetest.Scope(t), Rate: 1000, Burst: 2000, Cost: 5}
		key := s.Key(d.Scope, d.Key)
		for i := range 300 {
			var ok bool
			var err error
			if i%3 == 2 {
				ok, err = oldTake(ctx, rdb, s, d)
			} else {
				var dec store.Decision
				dec, err = s.Take(ctx, time.Now(), []store.Demand{d})
				ok = dec.OK
			}
			if err != nil || !ok {
				t.Fatalf("take %d = %v, %v; want granted", i, ok, err)
			}
			outlivesRefill(t, rdb, key, d, i)
		}
	})
}

// A granted take's reply carries the bucket's total in millionths of a
// unit; a reply without it (a script of an earlier version, or a take
// whose first demand costs nothing) is granted with no total, so that a
// fleet behind it paces as it did before the total.
func TestDecisionReadsTheTotal(t *testing.T) {
	for _, c := range []struct {
		reply []int64
		want  store.Decision
	}{
		{[]int64{1}, store.Decision{OK: true}},
		{[]int64{1, 1700000000000000}, store.Decision{OK: true}},
		{[]int64{1, 1700000000000000, 13_500_000}, store.Decision{OK: true, Taken: 13.5}},
		{[]int64{0, 0, 5}, store.Decision{Wait: 5}},
	} {
		got, err := decision(c.reply, 1)
		if err != nil || got != c.want {
			t.Errorf("decision(%v) = %+v, %v; want %+v", c.reply, got, err, c.want)
		}
		if c.reply[0] == 1 && len(c.reply) >= 2 && tookOf(c.reply) == "" {
			t.Errorf("tookOf(%v) found no time", c.reply)
		}
	}
}
