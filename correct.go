package pacer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/pacer-go/pacer/store"
)

// CorrectBudget charges delta to the current period of workload's budget,
// or gives -delta back when it is negative: the correction of what pacer
// charged by what the provider billed (package reconcile calls it). delta
// is in the budget's unit, as WorkloadStats.Spent says it: dollars for a
// budget in money (kept to the micro-dollar), else requests or tokens
// (kept to the unit).
//
// It is charged whatever the budget holds, as a usage is, since a budget
// is billing: to this process's count (WorkloadStats.Spent) at once, and
// to the store's ledger of the period, on a shared store in the background
// (see Flush), so that every instance sharing the store spends what is
// left after it. What is given back is given back up to the budget's
// limit. A period that ends takes its corrections with it.
//
// It never waits for the store, and is safe to call from any goroutine,
// while calls are made. An unknown workload, one without a budget, or a
// delta that is not a finite number or is beyond what a store counts
// exactly (2^53 of the store's units) is an error, and nothing is charged.
func (t *Transport) CorrectBudget(workload string, delta float64) error {
	w := t.workloads[workload]
	switch {
	case w == nil:
		return fmt.Errorf("pacer: CorrectBudget: no workload %q; the Transport declares %s", workload, t.declaredWorkloads())
	case !w.Budget.capped():
		return fmt.Errorf("pacer: CorrectBudget: workload %q has no budget to correct; give it one with WithWorkload(%q, Workload{Budget: ...})", workload, workload)
	case math.IsNaN(delta) || math.IsInf(delta, 0):
		return errors.New("pacer: CorrectBudget: the correction is not a number; give the difference, in the budget's unit, between what was billed and what was charged")
	}
	n := math.Round(delta * w.Budget.scale())
	if math.Abs(n) > 1<<53 {
		return fmt.Errorf("pacer: CorrectBudget: a correction of %v %s of workload %q is beyond what a store counts exactly (2^53 of its units)", delta, w.Budget.unit(), workload)
	}
	if n == 0 {
		return nil
	}
	now := t.clock.Now()
	d := w.budgetAt(now)
	d.Cost = n
	w.tally.correct(w, now, n)
	t.adjustBudget(now, d)
	return nil
}

// correct counts a correction of n in the current period, which a
// correction starts, as a spend does.
func (m *budgetTally) correct(w *workloadState, now time.Time, n float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.roll(w, now, true)
	m.spent = max(0, m.spent+n)
}

// FleetSpent returns what every process sharing the Transport's store has
// charged workload's budget in its current period, in the budget's unit as
// WorkloadStats.Spent says it: the budget's limit less what the store's
// ledger of the period holds (store.LevelReader), read in one round trip.
// It counts the whole fleet's calls, those in flight at their reservation,
// and its corrections (CorrectBudget); this process's settlements and
// refunds count once they have reached the store (see Flush). On the
// in-memory store, the fleet is the Transports that share it.
//
// It waits for a shared store, at most the store timeout
// (store.Policy.Timeout) or until ctx ends: call it off the path of a
// call, as package reconcile's poll does. It is safe to call from any
// goroutine. A store that does not answer is an error matching
// store.ErrUnavailable (no failure policy answers for it); one that cannot
// read levels, an error matching errors.ErrUnsupported, at once. So is an
// unknown workload, or one without a budget, an error.
func (t *Transport) FleetSpent(ctx context.Context, workload string) (float64, error) {
	w := t.workloads[workload]
	switch {
	case w == nil:
		return 0, fmt.Errorf("pacer: FleetSpent: no workload %q; the Transport declares %s", workload, t.declaredWorkloads())
	case !w.Budget.capped():
		return 0, fmt.Errorf("pacer: FleetSpent: workload %q has no budget; give it one with WithWorkload(%q, Workload{Budget: ...})", workload, workload)
	}
	var levels store.LevelReader
	if t.guard != nil {
		levels = t.guard // the lease, if any, holds no budget
	} else if lr, ok := t.store.(store.LevelReader); ok {
		levels = lr
	} else {
		return 0, fmt.Errorf("pacer: FleetSpent: the store (%T) cannot read a budget's level (store.LevelReader): %w", t.store, errors.ErrUnsupported)
	}
	now := t.clock.Now()
	d := w.budgetAt(now)
	l, err := levels.Level(ctx, now, d)
	if err != nil {
		return 0, fmt.Errorf("pacer: FleetSpent: reading the budget of workload %q from the store: %w", workload, err)
	}
	return (d.Burst - l) / w.Budget.scale(), nil
}

// budgetAt returns the demand of w's budget in the period containing now,
// at no cost: for a calendar period, under the period's key.
func (w *workloadState) budgetAt(now time.Time) store.Demand {
	d := w.budget
	if w.Budget.calendar() {
		p := w.periodAt(now)
		d.Key, d.Window = p.key, p.end.Sub(p.start)
	}
	d.Cost, d.Floor = 0, 0
	return d
}
