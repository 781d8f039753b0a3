package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/pacer-go/pacer/internal/storebench"
	"github.com/pacer-go/pacer/internal/testservers"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/store/redisstore"
	"github.com/pacer-go/pacer/storetest"
)

// Benchmarks against the real Redis, 32 callers at once, on one bucket that
// never runs dry: decisions a second, and commands sent a decision (each a
// round trip). Run them with:
//
//	PACER_REDIS_ADDR=127.0.0.1:6379 go test -run '^$' -bench . -benchtime 3s ./store/redisstore

// roundTrips counts the commands a client sends; a pipeline counts once.
// It also keeps the client, whose servers' CPU time run reports.
type roundTrips struct {
	n      atomic.Int64
	client redis.UniversalClient
}

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmd)
	}
}
func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}

const callers = 32

func benchClient(b *testing.B) (*redis.Client, *roundTrips) {
	rdb := redis.NewClient(&redis.Options{Addr: testservers.RedisAddr(b), PoolSize: callers})
	b.Cleanup(func() { rdb.Close() })
	rt := &roundTrips{client: rdb}
	rdb.AddHook(rt)
	return rdb, rt
}

// serverCPU returns the CPU time that the servers of rdb have used (INFO
// cpu): on a Cluster, every primary's and replica's.
func serverCPU(b *testing.B, rdb redis.UniversalClient) time.Duration {
	ctx := context.Background()
	var mu sync.Mutex
	var total time.Duration
	add := func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "cpu").Result()
		if err != nil {
			return err
		}
		var sum float64
		for line := range strings.Lines(info) {
			k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
			if k == "used_cpu_sys" || k == "used_cpu_user" {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return fmt.Errorf("INFO cpu: %q: %w", line, err)
				}
				sum += f
			}
		}
		mu.Lock()
		total += time.Duration(sum * float64(time.Second))
		mu.Unlock()
		return nil
	}
	var err error
	switch c := rdb.(type) {
	case *redis.Client:
		err = add(ctx, c)
	case *redis.ClusterClient:
		err = c.ForEachShard(ctx, add)
	default:
		b.Fatalf("serverCPU: %T", rdb)
	}
	if err != nil {
		b.Fatal(err)
	}
	return total
}

// run runs decide from 32 goroutines and reports the figures. The CPU time
// a decision costs, in the benchmark's process (the client, and the
// benchmark's own loop) and in Redis, are what decisions/s is made of when
// both share the cores, and, unlike it, hardly depend on what else the
// machine is running.
func run(b *testing.B, rt *roundTrips, decide func(ctx context.Context) error) {
	ctx := context.Background()
	if err := decide(ctx); err != nil { // load scripts, dial
		b.Fatal(err)
	}
	rt.n.Store(0)
	b.SetParallelism((callers + 1) / 2) // × GOMAXPROCS; 32 on 2 cores
	server0, client0 := serverCPU(b, rt.client), processCPU()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := decide(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	client, server := processCPU()-client0, serverCPU(b, rt.client)-server0
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "decisions/s")
	b.ReportMetric(float64(rt.n.Load())/float64(b.N), "roundtrips/decision")
	if client0 >= 0 {
		b.ReportMetric(float64(client.Microseconds())/float64(b.N), "client-µs/decision")
	}
	b.ReportMetric(float64(server.Microseconds())/float64(b.N), "redis-µs/decision")
}

func benchStore(b *testing.B, wrap func(store.Store) store.Store) {
	rdb, rt := benchClient(b)
	benchStoreOn(b, rdb, rt, wrap)
}

func benchStoreOn(b *testing.B, rdb redis.UniversalClient, rt *roundTrips, wrap func(store.Store) store.Store) {
	s := wrap(redisstore.New(rdb, redisstore.WithPrefix("pacer-bench")))
	d := []store.Demand{{Scope: storetest.Scope(b), Rate: 1e9, Burst: 1e9, Cost: 1}}
	run(b, rt, func(ctx context.Context) error {
		dec, err := s.Take(ctx, time.Now(), d)
		if err == nil && !dec.OK {
			b.Fatal("denied")
		}
		return err
	})
}

func BenchmarkRedisstore(b *testing.B) {
	benchStore(b, func(s store.Store) store.Store { return s })
}

// The lease is reached only through a Transport, so the lease rows are
// decisions of a Transport (internal/storebench): its own work, a
// microsecond or two, is in them.
func BenchmarkRedisstoreLease16(b *testing.B) {
	rdb, rt := benchClient(b)
	run(b, rt, storebench.Decide(b, redisstore.New(rdb, redisstore.WithPrefix("pacer-bench")), store.Policy{Lease: 16}))
}

func BenchmarkRedisstoreAdaptiveLease64(b *testing.B) {
	rdb, rt := benchClient(b)
	run(b, rt, storebench.Decide(b, redisstore.New(rdb, redisstore.WithPrefix("pacer-bench")), store.Policy{Lease: 64, AdaptiveLease: true}))
}

// Two scopes in one decision: one script over two keys.
func BenchmarkRedisstoreTwoScopes(b *testing.B) {
	rdb, rt := benchClient(b)
	benchTwoScopes(b, rdb, rt)
}

func benchTwoScopes(b *testing.B, rdb redis.UniversalClient, rt *roundTrips) {
	s := redisstore.New(rdb, redisstore.WithPrefix("pacer-bench"))
	scope := storetest.Scope(b)
	d := []store.Demand{{Scope: scope + "/a", Rate: 1e9, Burst: 1e9, Cost: 1}, {Scope: scope + "/b", Rate: 1e9, Burst: 1e9, Cost: 1}}
	run(b, rt, func(ctx context.Context) error {
		_, err := s.Take(ctx, time.Now(), d)
		return err
	})
}

// The reference: go-redis/redis_rate's GCRA on the same Redis.
//
// At 1e9 a second, redis_rate never writes: its script keeps the bucket as
// a time in seconds since 2017 in a double, whose step there (2^-24 s, 60
// ns) is larger than one decision's 1 ns, so each Allow reads the key,
// finds nothing to add and returns. That is TIME and GET, where
// redisstore's script must also write the bucket back (HSET, PEXPIRE).
func BenchmarkRedisRate(b *testing.B) {
	rdb, rt := benchClient(b)
	benchRedisRate(b, rdb, rt, 1e9)
}

// At 1e6 a second (a decision adds 1 µs), every Allow writes its key, as
// every Take of redisstore does: the two do the same work.
func BenchmarkRedisRateWrites(b *testing.B) {
	rdb, rt := benchClient(b)
	benchRedisRate(b, rdb, rt, 1e6)
}

func benchRedisRate(b *testing.B, rdb redis.UniversalClient, rt *roundTrips, rate int) {
	limiter := redis_rate.NewLimiter(rdb)
	key := "pacer-bench:" + storetest.Scope(b)
	limit := redis_rate.Limit{Rate: rate, Burst: rate, Period: time.Second}
	run(b, rt, func(ctx context.Context) error {
		res, err := limiter.Allow(ctx, key, limit)
		if err == nil && res.Allowed == 0 {
			b.Fatal("denied")
		}
		return err
	})
}
