package pacer

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pacer-go/pacer/period"
	"github.com/pacer-go/pacer/usage/prices"
)

// A correction is charged to the store's ledger of the period, so the
// budget refuses that much sooner; one given back lets that much more
// through; Stats count both.
func TestCorrectBudgetChargesTheLedger(t *testing.T) {
	clk := newFakeClock()
	api := &stubAPI{clock: clk}
	daily := Budget{Limit: 10, Period: period.Daily(0, 0, time.UTC)}
	tr := New(api, withClock(clk), WithWorkload("batch", Workload{Budget: daily}))
	ctx := ContextWithWorkload(context.Background(), "batch")
	mustNotErr(t, tr.CorrectBudget("batch", 4))
	if got := callsUntilBudget(t, tr, ctx); got != 6 {
		t.Fatalf("after a correction of +4 of 10, %d calls were admitted, want 6", got)
	}
	mustNotErr(t, tr.CorrectBudget("batch", -3))
	if got := callsUntilBudget(t, tr, ctx); got != 3 {
		t.Fatalf("after a correction of -3, %d more calls were admitted, want 3", got)
	}
	if w := tr.Stats().Workloads[0]; w.Spent != 10 {
		t.Errorf("Spent %v, want 10: 9 calls and the corrections +4 and -3", w.Spent)
	}
}

// A budget in money is corrected in dollars, to the micro-dollar.
func TestCorrectBudgetInDollars(t *testing.T) {
	clk := newFakeClock()
	tr := New(&stubAPI{clock: clk}, withClock(clk), WithMeter(Meter{Estimate: noEstimate}),
		WithWorkload("chat", Workload{Budget: Budget{Spend: prices.Dollars(1), Period: period.Daily(0, 0, time.UTC)}}))
	mustNotErr(t, tr.CorrectBudget("chat", 0.1234567))
	if w := tr.Stats().Workloads[0]; w.SpentMoney.Micros() != 123457 {
		t.Errorf("SpentMoney %v, want $0.123457", w.SpentMoney)
	}
}

func noEstimate(*http.Request) (CallEstimate, bool) { return CallEstimate{}, false }

func TestCorrectBudgetMistakes(t *testing.T) {
	tr := New(&stubAPI{clock: newFakeClock()}, WithWorkload("batch", Workload{Budget: Budget{Limit: 10, Per: time.Hour}}),
		WithWorkload("free", Workload{}))
	for _, c := range []struct {
		workload string
		delta    float64
		want     string
	}{
		{"btach", 1, `no workload "btach"; the Transport declares "batch"`},
		{"free", 1, `workload "free" has no budget`},
		{"batch", math.NaN(), "not a number"},
		{"batch", math.Inf(1), "not a number"},
		{"batch", 1 << 60, "beyond what a store counts exactly"},
	} {
		err := tr.CorrectBudget(c.workload, c.delta)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CorrectBudget(%q, %v) = %v, want an error saying %q", c.workload, c.delta, err, c.want)
		}
	}
	if w := tr.Stats().Workloads; len(w) > 0 && w[0].Spent != 0 {
		t.Errorf("a refused correction was counted: %+v", w[0])
	}
}

// callsUntilBudget makes calls until the budget refuses one, and returns
// how many it admitted.
func callsUntilBudget(t *testing.T, tr *Transport, ctx context.Context) int {
	t.Helper()
	for n := 0; n < 1000; n++ {
		if err := get(tr, ctx, "http://api.test/"); err != nil {
			var be *BudgetError
			if !errors.As(err, &be) {
				t.Fatalf("call %d: %v, want a *BudgetError", n+1, err)
			}
			return n
		}
	}
	t.Fatal("the budget never refused a call")
	return 0
}
