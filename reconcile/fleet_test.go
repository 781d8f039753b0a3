package reconcile_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/reconcile"
	"github.com/pacer-go/pacer/store"
)

// A fleet of 4 Transports shares one store; the reconciler is given one of
// them. What was charged is read from the store's ledger, so the other
// three's calls count as pacer's charges, not as drift: the provider bills
// a tenth more than the fleet was charged, and that tenth is the drift.
func TestTheFleetsChargesAreNotDrift(t *testing.T) {
	fake := newFakeBilling(t)
	synctest.Test(t, func(t *testing.T) {
		shared := store.NewMemory()
		var fleet []*pacer.Transport
		for range 4 {
			fleet = append(fleet, newTransport(t, reconcile.UnitUSD, pacer.WithStore(shared, store.Policy{})))
		}
		ev := &events{}
		r, err := reconcile.New(reconcile.Config{Source: openAI(fake.srv.URL), Transports: fleet[:1], Observers: []observe.Observer{ev},
			Groups: []reconcile.Group{{By: reconcile.ByProject, ID: "proj_1", Workloads: []string{"chat", "batch"}}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range fleet {
			if err := spend(t, tr, reconcile.UnitUSD, "chat", 3); err != nil {
				t.Fatal(err)
			}
			if err := spend(t, tr, reconcile.UnitUSD, "batch", 2); err != nil {
				t.Fatal(err)
			}
		}
		fake.bill("proj_1", 0.22, 0) // the fleet's 20 cents, and 2 more
		if err := r.Poll(context.Background()); err != nil {
			t.Fatal(err)
		}
		g := r.Stats().Groups[0]
		if !g.Fleet || !near(g.Charged, 0.20) || !near(g.Drift, 0.02) {
			t.Errorf("Stats %+v; want the fleet's $0.20 charged, from the store, and a drift of $0.02", g)
		}
		if d := ev.of(observe.EventBudgetDrift); len(d) != 1 || !near(d[0].Amount, 0.02) {
			t.Errorf("drift events %v; want one of $0.02", d)
		}
	})
}

// A store that cannot read a level leaves the comparison to the
// Transports' own count, and Stats and the event say so.
func TestWithoutLevelsTheChargesAreThisProcesss(t *testing.T) {
	fake := newFakeBilling(t)
	synctest.Test(t, func(t *testing.T) {
		_, r, ev, err := chargedAndBilled(t, fake, withoutLevels{store.NewMemory()}, false, 0.20)
		if err != nil {
			t.Fatal(err)
		}
		if g := r.Stats().Groups[0]; g.Fleet || !near(g.Charged, 0.10) || !near(g.Drift, 0.10) {
			t.Errorf("Stats %+v; want this process's $0.10 charged, not the fleet's, and a drift of $0.10", g)
		}
		if d := ev.of(observe.EventBudgetDrift); len(d) != 1 || !strings.Contains(d[0].Err.Error(), "in this process: the store cannot read the fleet's ledger") {
			t.Errorf("drift events %v; want one saying the charges are this process's", d)
		}
	})
}

// chargedAndBilled makes a Transport of workload chat on s, charges it 10
// calls of a cent, has the provider bill project proj_1 billed dollars, and
// polls a Reconciler of it once (correcting, if correct says so). It
// returns the Transport, the Reconciler, what it told, and the poll's
// error.
func chargedAndBilled(t *testing.T, fake *fakeBilling, s store.Store, correct bool, billed float64) (*pacer.Transport, *reconcile.Reconciler, *events, error) {
	tr := newTransport(t, reconcile.UnitUSD, pacer.WithStore(s, store.Policy{}))
	ev := &events{}
	r, err := reconcile.New(reconcile.Config{Source: openAI(fake.srv.URL), Transports: []*pacer.Transport{tr}, Observers: []observe.Observer{ev}, Correct: correct,
		Groups: []reconcile.Group{{By: reconcile.ByProject, ID: "proj_1", Workloads: []string{"chat"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := spend(t, tr, reconcile.UnitUSD, "chat", 10); err != nil {
		t.Fatal(err)
	}
	fake.bill("proj_1", billed, 0)
	return tr, r, ev, r.Poll(context.Background())
}

// withoutLevels hides the store's Level: a store that cannot read one.
type withoutLevels struct{ store.Store }

// levelsDown is a store whose Level does not answer.
type levelsDown struct{ store.Store }

func (levelsDown) Level(context.Context, time.Time, store.Demand) (float64, error) {
	return 0, errors.New("dial tcp 127.0.0.1:6379: connection refused")
}

// A store that does not answer fails the group's poll, which compares and
// corrects nothing: this process's own count would read the rest of the
// fleet as drift, and correct it.
func TestAStoreThatDoesNotAnswerComparesNothing(t *testing.T) {
	fake := newFakeBilling(t)
	synctest.Test(t, func(t *testing.T) {
		tr, r, _, err := chargedAndBilled(t, fake, levelsDown{store.NewMemory()}, true, 0.20)
		if err == nil || !strings.Contains(err.Error(), "reading what the fleet charged") || !strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("Poll: %v; want an error saying the fleet's charges could not be read, and why", err)
		}
		if st := r.Stats(); st.Failures != 1 || len(st.Groups) != 0 {
			t.Errorf("Stats %+v; want the failure counted and no figure", st)
		}
		if w := tr.Stats().Workloads; !near(w[len(w)-1].Spent, 0.10) {
			t.Errorf("the budget spent %v, want what the calls cost, nothing corrected", w[len(w)-1].Spent)
		}
	})
}
