package pgstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/store/pgstore"
	"github.com/pacer-go/pacer/storetest"
)

// limitsStore returns a store on the caller's clock whose limits table and
// sequence go with the test.
func limitsStore(t *testing.T) *pgstore.Store {
	p := pool(t, 8)
	s := newStore(t, p, pgstore.WithCallerClock())
	t.Cleanup(func() {
		p.Exec(context.Background(), "DROP TABLE "+s.Table()+"_limits")
		p.Exec(context.Background(), "DROP SEQUENCE "+s.Table()+"_limits_version")
	})
	return s
}

// A fleet of four on Postgres sees a SetLimit within the sync interval.
func TestLimitSync(t *testing.T) {
	storetest.LimitSync(t, limitsStore(t))
}

// A cut one instance takes on a refusal reaches the others at their next
// sync, once, and the store keeps pace records as given.
func TestCutSync(t *testing.T) {
	s := limitsStore(t)
	storetest.PaceRecords(t, s)
	storetest.CutSync(t, s)
}

// A limits table migrated before pace records has no columns for them:
// reading gives the limits and no pace record, publishing one says to run
// Migrate, which adds them and keeps the limits published.
func TestMigrateAddsThePaceColumns(t *testing.T) {
	ctx := context.Background()
	p := pool(t, 8)
	s := newStore(t, p)
	t.Cleanup(func() {
		p.Exec(ctx, "DROP TABLE IF EXISTS "+s.Table()+"_limits")
		p.Exec(ctx, "DROP SEQUENCE IF EXISTS "+s.Table()+"_limits_version")
	})
	v, err := s.PublishLimit(ctx, "a", store.Limit(pacer.PerSecond(10)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(ctx, "ALTER TABLE "+s.Table()+"_limits DROP COLUMN pace, DROP COLUMN pace_version"); err != nil {
		t.Fatal(err)
	}
	// A fleet whose table is not migrated yet still syncs its limits.
	if got, err := s.PublishedLimits(ctx); err != nil || got["a"] != (store.PublishedLimit{Limit: store.Limit(pacer.PerSecond(10)), Version: v}) {
		t.Errorf("reading without the pace columns: %+v, %v; want the limit, and no pace record", got["a"], err)
	}
	if _, err := s.PublishPace(ctx, "a", "a record"); err == nil || !strings.Contains(err.Error(), "run Migrate") {
		t.Errorf("publishing without the pace columns: %v, want an error that says to run Migrate", err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	pv, err := s.PublishPace(ctx, "a", "a record")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.PublishedLimits(ctx)
	want := store.PublishedLimit{Limit: store.Limit(pacer.PerSecond(10)), Version: v, Pace: "a record", PaceVersion: pv}
	if err != nil || got["a"] != want {
		t.Errorf("after Migrate: %+v, %v; want %+v", got["a"], err, want)
	}
}

// Each publication gets a larger version, a scope keeps only its newest
// limit, and a store whose limits table is missing says to run Migrate.
func TestPublishedLimits(t *testing.T) {
	ctx := context.Background()
	p := pool(t, 8)
	s := newStore(t, p)
	t.Cleanup(func() { p.Exec(ctx, "DROP SEQUENCE IF EXISTS "+s.Table()+"_limits_version") })
	v1, err := s.PublishLimit(ctx, "a", store.Limit(pacer.PerSecond(10)))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := s.PublishLimit(ctx, "b", store.Limit(pacer.PerMinute(60)))
	if err != nil {
		t.Fatal(err)
	}
	v3, err := s.PublishLimit(ctx, "a", store.Limit{Count: 5, Per: 2e9, Burst: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !(v1 < v2 && v2 < v3) {
		t.Fatalf("versions %d, %d, %d do not grow", v1, v2, v3)
	}
	got, err := s.PublishedLimits(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]store.PublishedLimit{
		"a": {Limit: store.Limit{Count: 5, Per: 2e9, Burst: 3}, Version: v3},
		"b": {Limit: store.Limit(pacer.PerMinute(60)), Version: v2},
	}
	if len(got) != len(want) || got["a"] != want["a"] || got["b"] != want["b"] {
		t.Fatalf("published %v, want %v", got, want)
	}

	if _, err := p.Exec(ctx, "DROP TABLE "+s.Table()+"_limits"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PublishLimit(ctx, "a", store.Limit(pacer.PerSecond(1))); err == nil || !strings.Contains(err.Error(), "run Migrate") {
		t.Errorf("publishing without a limits table: %v, want an error that says to run Migrate", err)
	}
	if _, err := s.PublishedLimits(ctx); err == nil || !strings.Contains(err.Error(), "run Migrate") {
		t.Errorf("reading without a limits table: %v, want an error that says to run Migrate", err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := s.PublishedLimits(ctx); err != nil || len(got) != 0 {
		t.Errorf("after Migrate again: %v, %v; want an empty table", got, err)
	}
	p.Exec(ctx, "DROP TABLE "+s.Table()+"_limits")
}

// A store that cannot be reached fails to publish and to read, with an
// error that says which, and panics on neither.
func TestPublishedLimitsOnAClosedPool(t *testing.T) {
	ctx := context.Background()
	p := pool(t, 2)
	s := newStore(t, p)
	t.Cleanup(func() {
		q := pool(t, 1)
		q.Exec(ctx, "DROP TABLE IF EXISTS "+s.Table()+"_limits")
		q.Exec(ctx, "DROP SEQUENCE IF EXISTS "+s.Table()+"_limits_version")
	})
	p.Close()
	if _, err := s.PublishLimit(ctx, "a", store.Limit(pacer.PerSecond(1))); err == nil || !strings.Contains(err.Error(), "pgstore: publishing a limit") {
		t.Errorf("publishing on a closed pool: %v, want pgstore's error", err)
	}
	if _, err := s.PublishedLimits(ctx); err == nil || !strings.Contains(err.Error(), "pgstore: reading the published limits") {
		t.Errorf("reading on a closed pool: %v, want pgstore's error", err)
	}
}
