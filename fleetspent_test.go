package pacer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/store"
)

// withoutLevels hides the store's Level: a store that cannot read one.
type withoutLevels struct{ store.Store }

// levelsDown is a flaky store whose Level fails as its other calls do.
type levelsDown struct{ *flakyStore }

func (s levelsDown) Level(ctx context.Context, now time.Time, d store.Demand) (float64, error) {
	if err := s.fail(ctx); err != nil {
		return 0, err
	}
	return s.flakyStore.Level(ctx, now, d)
}

// Two Transports on one store are a fleet: FleetSpent reads from the
// store's ledger what both charged the budget, corrections included, where
// WorkloadStats.Spent counts each one's own. A store that cannot read a
// level, or does not answer, is an error that says so, never a figure.
func TestFleetSpentIsWhatTheStoreHolds(t *testing.T) {
	b := pacer.Budget{Limit: 1000, Unit: "tokens", Stated: true, Per: time.Hour}
	newTransport := func(s store.Store) *pacer.Transport {
		tr := pacer.New(&okTransport{}, pacer.WithStore(s, store.Policy{OnFailure: store.FailClosed}),
			pacer.WithWorkload("batch", pacer.Workload{Budget: b}), pacer.WithWorkload("free", pacer.Workload{}))
		if err := tr.Err(); err != nil {
			t.Fatal(err)
		}
		return tr
	}
	spend := func(tr *pacer.Transport, n int64) {
		t.Helper()
		ctx := pacer.ContextWithCost(pacer.ContextWithWorkload(context.Background(), "batch"), "tokens", n)
		if err := send(ctx, tr); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()

	shared := store.NewMemory()
	a, other := newTransport(shared), newTransport(shared)
	spend(a, 30)
	spend(other, 100)
	spend(other, 20)
	if err := other.CorrectBudget("batch", 50); err != nil {
		t.Fatal(err)
	}
	if got, err := a.FleetSpent(ctx, "batch"); err != nil || got != 200 {
		t.Errorf("FleetSpent = %v, %v; want 200, what both charged and the correction", got, err)
	}
	if got := a.Stats().Workloads[0].Spent; got != 30 {
		t.Errorf("WorkloadStats.Spent = %v; want 30, this Transport's own", got)
	}

	if _, err := newTransport(withoutLevels{store.NewMemory()}).FleetSpent(ctx, "batch"); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("FleetSpent on a store that reads no levels: %v; want errors.ErrUnsupported", err)
	}
	flaky := newFlakyStore()
	down := newTransport(levelsDown{flaky})
	spend(down, 10)
	flaky.down.Store(true)
	if got, err := down.FleetSpent(ctx, "batch"); !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, errConnRefused) {
		t.Errorf("FleetSpent on a store that is down = %v, %v; want store.ErrUnavailable and the store's error", got, err)
	}
	for _, w := range []string{"nope", "free"} {
		if _, err := a.FleetSpent(ctx, w); err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("FleetSpent of workload %q: %v; want an error naming it", w, err)
		}
	}
}
