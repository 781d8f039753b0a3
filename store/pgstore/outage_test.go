package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pacer-go/pacer/internal/testservers"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/store/pgstore"
	"github.com/pacer-go/pacer/storetest"
)

// A private PostgreSQL, stopped mid-run and started again: no request hangs
// past its context, each store.Policy.OnFailure holds, and the stores recover.
func TestOutage(t *testing.T) {
	srv := testservers.StartPostgres(t)
	storetest.Outage(t, privateStore(srv), srv.Stop, srv.Start)
}

// A bucket table locked by another session hangs every call to the store;
// pgx gives up at the context's deadline, so the Transport, which calls the
// store on the request's own goroutine (store.ContextStore), holds no
// request past the store timeout, nor past the request's own context.
func TestLockedTable(t *testing.T) {
	p := pool(t, 4)
	s := newStore(t, p)
	if !s.HonoursContext() {
		t.Fatal("pgstore does not say it honours its context")
	}
	lock, unlock := tableLock(t, p, s)
	storetest.Hang(t, s, lock, unlock)
}

// With the table locked, a response that lowers the bucket is returned at
// once: the clamp goes to the store in the background.
func TestLearnWhileLocked(t *testing.T) {
	p := pool(t, 4)
	s := newStore(t, p)
	lock, unlock := tableLock(t, p, s)
	storetest.LearnWhileHung(t, s, lock, unlock)
}

// With the table locked and every caller's deadline shorter than the store
// timeout, the store failure policy still applies.
func TestShortDeadlinesWhileLocked(t *testing.T) {
	p := pool(t, 4)
	s := newStore(t, p)
	lock, unlock := tableLock(t, p, s)
	storetest.ShortDeadlines(t, s, lock, unlock)
}

// A private PostgreSQL, stopped and started again: a spent budget stays
// spent through the outage and after it.
func TestBudgetsThroughAnOutage(t *testing.T) {
	srv := testservers.StartPostgres(t)
	storetest.Budgets(t, privateStore(srv), srv.Stop, srv.Start)
}

// privateStore returns a function that makes a store with a pool and a
// table of its own on srv.
func privateStore(srv *testservers.Private) func(t *testing.T) store.Store {
	return func(t *testing.T) store.Store {
		p, err := pgxpool.New(context.Background(), testservers.PostgresURLOf(srv))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return newStore(t, p)
	}
}

// tableLock returns functions that lock s's table from another session, so
// that every call to s waits, and release it.
func tableLock(t *testing.T, p *pgxpool.Pool, s *pgstore.Store) (lock, unlock func()) {
	var tx pgx.Tx
	lock = func() {
		var err error
		if tx, err = p.Begin(context.Background()); err != nil {
			t.Error(err)
			return
		}
		if _, err := tx.Exec(context.Background(), "LOCK TABLE "+s.Table()+" IN ACCESS EXCLUSIVE MODE"); err != nil {
			t.Error(err)
		}
	}
	unlock = func() {
		if tx != nil {
			tx.Rollback(context.Background())
			tx = nil
		}
	}
	return lock, unlock
}
