package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/internal/testservers"
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
	storetest.Run(t, func(*testing.T) pacer.Store { return s },
		storetest.WithEviction(func(t *testing.T, _ pacer.Store, d pacer.Demand, _, now time.Time) bool {
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
