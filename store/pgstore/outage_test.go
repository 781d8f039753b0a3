package pgstore_test

import (
	"context"
	"testing"

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
