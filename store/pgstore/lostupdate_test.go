package pgstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/storetest"
)

const (
	writers   = 32
	perWriter = 500
)

// hammer runs writers goroutines, each calling take perWriter times, and
// returns how many calls reported a grant.
func hammer(t *testing.T, take func() (bool, error)) int64 {
	return storetest.Count(t, writers, perWriter, take)
}

// The package doc's claim, on the real server: the CTE form loses updates
// under 32 concurrent writers, the store's statement loses none. Each form
// starts with a bucket far larger than the writers can spend, so every call
// is granted; a lost update is a grant that did not lower the level.
func TestCTELosesUpdates(t *testing.T) {
	ctx := context.Background()
	p := pool(t, writers)
	s := newStore(t, p)
	const start = 1e9
	level := func(scope string) float64 {
		var tokens float64
		if err := p.QueryRow(ctx, "SELECT tokens FROM "+s.Table()+" WHERE scope = $1", scope).Scan(&tokens); err != nil {
			t.Fatal(err)
		}
		return tokens
	}

	cteScope := storetest.Scope(t) + "/cte"
	if _, err := p.Exec(ctx, "INSERT INTO "+s.Table()+" VALUES ($1, '', $2, now(), now())", cteScope, start); err != nil {
		t.Fatal(err)
	}
	cte := `WITH r AS (SELECT tokens FROM ` + s.Table() + ` WHERE scope = $1 AND key = '')
		UPDATE ` + s.Table() + ` AS b SET tokens = r.tokens - 1 FROM r
		 WHERE b.scope = $1 AND b.key = '' AND r.tokens >= 1 RETURNING 1`
	cteGranted := hammer(t, func() (bool, error) {
		tag, err := p.Exec(ctx, cte, cteScope)
		return tag.RowsAffected() == 1, err
	})
	cteLost := cteGranted - int64(start-level(cteScope))

	d := []store.Demand{{Scope: storetest.Scope(t) + "/update", Burst: start, Cost: 1}}
	granted := hammer(t, func() (bool, error) {
		dec, err := s.Take(ctx, time.Now(), d)
		return dec.OK, err
	})
	lost := granted - int64(start-level(d[0].Scope))

	t.Logf("%d writers x %d decisions: CTE form granted %d, lost %d updates; UPDATE form granted %d, lost %d",
		writers, perWriter, cteGranted, cteLost, granted, lost)
	if cteLost <= 0 {
		t.Errorf("the CTE form lost no updates (granted %d); the package doc says it does", cteGranted)
	}
	if lost != 0 {
		t.Errorf("the store's statement lost %d updates of %d grants", lost, granted)
	}
}

// 32 writers, 500 decisions each, one bucket of 8000 that does not refill:
// exactly 8000 are granted, counted, and the bucket is left empty.
func TestNoLostUpdates(t *testing.T) {
	ctx := context.Background()
	p := pool(t, writers)
	s := newStore(t, p)
	const burst = writers * perWriter / 2
	d := []store.Demand{{Scope: storetest.Scope(t), Burst: burst, Cost: 1}}
	granted := hammer(t, func() (bool, error) {
		dec, err := s.Take(ctx, time.Now(), d)
		return dec.OK, err
	})
	if granted != burst {
		t.Fatalf("%d decisions on a bucket of %d granted %d", writers*perWriter, burst, granted)
	}
	var tokens float64
	if err := p.QueryRow(ctx, "SELECT tokens FROM "+s.Table()+" WHERE scope = $1", d[0].Scope).Scan(&tokens); err != nil {
		t.Fatal(err)
	}
	if tokens != 0 {
		t.Fatalf("after granting the whole bucket it holds %v tokens, want 0", tokens)
	}
}

// Multi-scope takes lock their rows in (scope, key) order whatever the
// order of the demands: callers naming the buckets in opposite orders never
// deadlock, and together are granted exactly what the smaller bucket holds.
func TestMultiScopeOppositeOrders(t *testing.T) {
	ctx := context.Background()
	p := pool(t, writers)
	s := newStore(t, p)
	scope := storetest.Scope(t)
	a := store.Demand{Scope: scope + "/a", Burst: 1000, Cost: 1}
	b := store.Demand{Scope: scope + "/b", Burst: 1000, Cost: 1}
	var flip atomic.Int64
	granted := storetest.Count(t, writers, 50, func() (bool, error) {
		ds := []store.Demand{a, b}
		if flip.Add(1)%2 == 0 {
			ds = []store.Demand{b, a}
		}
		dec, err := s.Take(ctx, time.Now(), ds)
		return dec.OK, err
	})
	if granted != 1000 {
		t.Fatalf("%d two-bucket takes on buckets of 1000 granted %d", writers*50, granted)
	}
}
