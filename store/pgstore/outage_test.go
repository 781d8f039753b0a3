package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/internal/testservers"
	"github.com/pacer-go/pacer/storetest"
)

// A private PostgreSQL, stopped mid-run and started again: no request hangs
// past its context, each StoreFailure policy holds, and the stores recover.
func TestOutage(t *testing.T) {
	srv := testservers.StartPostgres(t)
	storetest.Outage(t, func(t *testing.T) pacer.Store {
		p, err := pgxpool.New(context.Background(), testservers.PostgresURLOf(srv))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return newStore(t, p)
	}, srv.Stop, srv.Start)
}

// A bucket table locked by another session hangs every call to the store;
// pgx gives up at the context's deadline, so the Transport, which calls the
// store on the request's own goroutine (pacer.ContextStore), holds no
// request past the store timeout, nor past the request's own context.
func TestLockedTable(t *testing.T) {
	p := pool(t, 4)
	s := newStore(t, p)
	if !s.HonoursContext() {
		t.Fatal("pgstore does not say it honours its context")
	}
	var tx pgx.Tx
	lock := func() {
		var err error
		if tx, err = p.Begin(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(context.Background(), "LOCK TABLE "+s.Table()+" IN ACCESS EXCLUSIVE MODE"); err != nil {
			t.Fatal(err)
		}
	}
	storetest.Hang(t, s, lock, func() { tx.Rollback(context.Background()) })
}
