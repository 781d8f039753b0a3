package pgstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pacer-go/pacer/internal/testservers"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/store/pgstore"
	"github.com/pacer-go/pacer/storetest"
)

// pool returns a pool of up to maxConns connections to the shared test
// database, closed when t ends.
func pool(t testing.TB, maxConns int) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(testservers.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = int32(maxConns)
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// newStore returns a store on a table of its own, dropped when t ends: the
// test database is shared with other packages' tests.
func newStore(t testing.TB, p *pgxpool.Pool, opts ...pgstore.Option) *pgstore.Store {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	table := "pgstore_test_" + hex.EncodeToString(b[:])
	s := pgstore.New(p, append([]pgstore.Option{pgstore.WithTable(table)}, opts...)...)
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Exec(context.Background(), "DROP TABLE "+table) })
	return s
}

func TestConformance(t *testing.T) {
	p := pool(t, 32)
	s := newStore(t, p, pgstore.WithCallerClock())
	storetest.Run(t, func(*testing.T) store.Store { return s },
		storetest.WithEviction(func(t *testing.T, _ store.Store, d store.Demand, _, now time.Time) bool {
			if _, err := s.Sweep(context.Background(), now); err != nil {
				t.Fatal(err)
			}
			var held bool
			err := p.QueryRow(context.Background(),
				"SELECT EXISTS (SELECT FROM "+s.Table()+" WHERE scope = $1 AND key = $2)", d.Scope, d.Key).Scan(&held)
			if err != nil {
				t.Fatal(err)
			}
			return held
		}))
}

// The default clock is the database's: the now a caller passes, however far
// off, changes nothing.
func TestServerClock(t *testing.T) {
	ctx := context.Background()
	p := pool(t, 2)
	s := newStore(t, p)
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
		t.Fatalf("Take by a clock an hour ahead = %+v; want denied, waiting most of a second by the database's clock", dec)
	}
	var behind time.Duration
	err = p.QueryRow(ctx, "SELECT now() - refilled_at FROM "+s.Table()+" WHERE scope = $1", d.Scope).Scan(&behind)
	if err != nil {
		t.Fatal(err)
	}
	if behind < 0 || behind > 5*time.Second {
		t.Fatalf("the bucket's stamp is %v behind the database's now(); want it written by that clock", behind)
	}
}

// HOT updates need every index to leave out the columns a take changes.
func TestOnlyIndexIsThePrimaryKey(t *testing.T) {
	ctx := context.Background()
	p := pool(t, 1)
	s := newStore(t, p)
	var defs []string
	rows, err := p.Query(ctx, "SELECT indexdef FROM pg_indexes WHERE tablename = $1", s.Table())
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var def string
		if err := rows.Scan(&def); err != nil {
			t.Fatal(err)
		}
		defs = append(defs, def)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(defs) != 1 || !strings.Contains(defs[0], "(scope, key)") {
		t.Fatalf("indexes = %q; want only the primary key on (scope, key)", defs)
	}
}

func TestInvalidTable(t *testing.T) {
	s := pgstore.New(nil, pgstore.WithTable("buckets; DROP TABLE users"))
	if err := s.Migrate(context.Background()); err == nil {
		t.Fatal("Migrate accepted a table name that is not an identifier")
	}
	if _, err := s.Take(context.Background(), time.Now(), []store.Demand{{Scope: "x", Burst: 1, Cost: 1}}); err == nil {
		t.Fatal("Take on a store with an invalid table name did not fail")
	}
}

// A table an earlier version created has no taken column: the store takes
// and settles as before, reports no running total (so that a fleet behind
// it paces as it did), and says once to run Migrate, which adds the
// column; the totals start from there.
func TestATableWithoutTheTakenColumn(t *testing.T) {
	ctx := context.Background()
	p := pool(t, 8)
	table := newStore(t, p).Table()
	if _, err := p.Exec(ctx, "ALTER TABLE "+table+" DROP COLUMN taken"); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })

	s := pgstore.New(p, pgstore.WithTable(table), pgstore.WithCallerClock())
	now := storetest.Start
	d := store.Demand{Scope: storetest.Scope(t), Rate: 1, Burst: 10, Cost: 2}
	e := d
	e.Key = "other"
	for i := range 3 {
		dec, err := s.Take(ctx, now, []store.Demand{d})
		if err != nil || !dec.OK || dec.Taken != 0 {
			t.Fatalf("take %d without the column: %+v, %v; want granted with no total", i, dec, err)
		}
	}
	if dec, err := s.Take(ctx, now, []store.Demand{d, e}); err != nil || !dec.OK || dec.Taken != 0 {
		t.Fatalf("a take of two buckets without the column: %+v, %v; want granted with no total", dec, err)
	}
	// A fresh store finds out from a settlement as well.
	s2 := pgstore.New(p, pgstore.WithTable(table), pgstore.WithCallerClock())
	d.Cost = 1
	if err := s2.Adjust(ctx, now, []store.Demand{d}); err != nil {
		t.Fatalf("adjust without the column: %v", err)
	}
	// 10 - 4×2 - 1: one unit left.
	if dec, err := s2.Take(ctx, now, []store.Demand{d}); err != nil || !dec.OK {
		t.Fatalf("the last unit: %+v, %v; want granted", dec, err)
	}
	if dec, err := s2.Take(ctx, now, []store.Demand{d}); err != nil || dec.OK {
		t.Fatalf("beyond the bucket: %+v, %v; want refused", dec, err)
	}
	if n := strings.Count(logged.String(), "no taken column"); n != 2 {
		t.Errorf("each store said %d times in all that the column is missing, want once each:\n%s", n, logged.String())
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if dec, err := s.Take(ctx, now.Add(3*time.Second), []store.Demand{d}); err != nil || !dec.OK || dec.Taken != 1 {
		t.Fatalf("after Migrate: %+v, %v; want granted with a total of 1", dec, err)
	}
}
