package pgstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pacer-go/pacer/internal/storebench"
	"github.com/pacer-go/pacer/internal/testservers"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/storetest"
)

// Benchmarks against the real PostgreSQL, 32 callers at once, on one bucket
// that never runs dry: decisions a second, and round trips a decision (a
// statement, or a pipelined batch). Run them with:
//
//	PACER_POSTGRES_URL=postgres://... go test -run '^$' -bench . -benchtime 3s ./store/pgstore

// roundTrips counts statements and batches sent.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

const callers = 32

func benchPool(b *testing.B) (*pgxpool.Pool, *roundTrips) {
	cfg, err := pgxpool.ParseConfig(testservers.PostgresURL(b))
	if err != nil {
		b.Fatal(err)
	}
	rt := &roundTrips{}
	cfg.ConnConfig.Tracer = rt
	cfg.MaxConns = callers
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	return p, rt
}

func run(b *testing.B, rt *roundTrips, s store.Store, d []store.Demand) {
	runDecide(b, rt, func(ctx context.Context) error {
		dec, err := s.Take(ctx, time.Now(), d)
		if err == nil && !dec.OK {
			return fmt.Errorf("refused: %+v", dec)
		}
		return err
	})
}

// runDecide runs decide from 32 goroutines and reports the figures.
func runDecide(b *testing.B, rt *roundTrips, decide func(ctx context.Context) error) {
	ctx := context.Background()
	if err := decide(ctx); err != nil {
		b.Fatal(err)
	}
	rt.n.Store(0)
	b.SetParallelism((callers + 1) / 2) // × GOMAXPROCS; 32 on 2 cores
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
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "decisions/s")
	b.ReportMetric(float64(rt.n.Load())/float64(b.N), "roundtrips/decision")
}

func oneBucket(b *testing.B) []store.Demand {
	return []store.Demand{{Scope: storetest.Scope(b), Rate: 1e9, Burst: 1e9, Cost: 1}}
}

func BenchmarkPgstore(b *testing.B) {
	p, rt := benchPool(b)
	run(b, rt, newStore(b, p), oneBucket(b))
}

// The lease is reached only through a Transport, so the lease rows are
// decisions of a Transport (internal/storebench): its own work, a
// microsecond or two, is in them.
func BenchmarkPgstoreLease16(b *testing.B) {
	p, rt := benchPool(b)
	runDecide(b, rt, storebench.Decide(b, newStore(b, p), store.Policy{Lease: 16}))
}

func BenchmarkPgstoreAdaptiveLease64(b *testing.B) {
	p, rt := benchPool(b)
	runDecide(b, rt, storebench.Decide(b, newStore(b, p), store.Policy{Lease: 64, AdaptiveLease: true}))
}

// Two scopes in one decision: a pipelined transaction, then its COMMIT.
func BenchmarkPgstoreTwoScopes(b *testing.B) {
	p, rt := benchPool(b)
	scope := storetest.Scope(b)
	d := []store.Demand{{Scope: scope + "/a", Rate: 1e9, Burst: 1e9, Cost: 1}, {Scope: scope + "/b", Rate: 1e9, Burst: 1e9, Cost: 1}}
	run(b, rt, newStore(b, p), d)
}

// Each caller its own bucket: no row lock contention, the statement's own cost.
func BenchmarkPgstoreManyBuckets(b *testing.B) {
	p, rt := benchPool(b)
	s := newStore(b, p)
	ctx := context.Background()
	scope := storetest.Scope(b)
	var next atomic.Int64
	rt.n.Store(0)
	b.SetParallelism((callers + 1) / 2)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		d := []store.Demand{{Scope: scope, Key: string(rune('a' + next.Add(1))), Rate: 1e9, Burst: 1e9, Cost: 1}}
		for pb.Next() {
			if _, err := s.Take(ctx, time.Now(), d); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "decisions/s")
	b.ReportMetric(float64(rt.n.Load())/float64(b.N), "roundtrips/decision")
}
