package main

import (
	"errors"
	"testing"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/usage"
	"github.com/pacer-go/pacer/usage/prices"
)

// The example, on a smaller scale, against its loopback fake: the backfill
// is stopped by its budget within the bound pacer.Budget states (one call's
// largest cost, and what each of the other calls in flight may cost beyond
// its reservation, at most its max_tokens of output), pacer's count is the
// provider's bill to the micro-dollar, and every interactive call succeeds.
func TestBackfillStopsAtItsBudget(t *testing.T) {
	const backfill = 4
	limit := prices.Dollars(1)
	r := run(setup{budget: limit, backfill: backfill, clicks: 5, clickEvery: time.Millisecond})
	largest := fakePrices[model].Cost(usage.Usage{Input: 10 + 1100/4, Output: maxTokens}).Micros()
	excess := fakePrices[model].Cost(usage.Usage{Output: maxTokens}).Micros()
	billed := r.billedBackfill.Micros()
	if bound := limit.Micros() + largest + (backfill-1)*excess; billed > bound || billed < limit.Micros()-10*largest {
		t.Errorf("the backfill was billed %v, want about its budget, %v, and never more than %v", r.billedBackfill, limit, prices.Micros(bound))
	}
	if r.statsSpent != r.billedBackfill {
		t.Errorf("pacer counted %v, the provider billed %v", r.statsSpent, r.billedBackfill)
	}
	var be *pacer.BudgetError
	if !errors.As(r.stoppedBy, &be) || be.ResetIn <= 0 {
		t.Errorf("stopped by %v, want a BudgetError saying when it resets", r.stoppedBy)
	}
	if r.interactiveFail != 0 || r.interactiveOK != 5 {
		t.Errorf("interactive: %d ok, %d failed; want all 5 ok", r.interactiveOK, r.interactiveFail)
	}
}
