package pacer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pacer-go/pacer/internal/outputs"
)

// reservedNow makes a call, and returns what the budget holds reserved
// while its body is open; then reads the body, which settles it.
func reservedNow(t *testing.T, tr *Transport, ctx context.Context) float64 {
	t.Helper()
	resp, err := chat(t, tr, ctx, "")
	mustNotErr(t, err)
	r := tr.Stats().Workloads[0].Reserved
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return r
}

// Output estimated from what the model's calls produced: the first calls
// reserve the Meter's worst case (estOut of output); from the 50th settled
// call on, the 99th percentile of what they produced; when the answers grow,
// each call's settlement charges what it cost beyond its reservation, and
// the estimate follows within a few calls. The budget's count is what was
// billed throughout.
func TestOutputEstimateLearned(t *testing.T) {
	backfill := ContextWithWorkload(context.Background(), "backfill")
	clock := newFakeClock()
	llm := &fakeLLM{reply: llmReply{input: estIn, output: 20}}
	roomy := WithScope(Scope{Name: "tokens", Unit: "tokens", Limit: Limit{Count: 1e9, Per: time.Second, Burst: 1e9}})
	const limit = 1_000_000
	tr := newMetered(t, llm, clock, Budget{Limit: limit, Per: time.Hour, Unit: "tokens"}, roomy)
	var billed float64
	for i := range outputs.MinSamples {
		if r := reservedNow(t, tr, backfill); r != estIn+estOut {
			t.Fatalf("call %d reserved %v before %d were settled, want the worst case %d", i+1, r, outputs.MinSamples, estIn+estOut)
		}
		billed += estIn + 20
	}
	// 20 tokens fall in the bucket [20, 21]: the estimate is its top.
	if r := reservedNow(t, tr, backfill); r != estIn+21 {
		t.Fatalf("after %d calls of 20 output tokens, a call reserved %v, want %d", outputs.MinSamples, r, estIn+21)
	}
	billed += estIn + 20
	if got := budgetLevel(tr, "backfill", clock.Now()); got != limit-billed {
		t.Fatalf("the budget holds %v, want %v: what was billed", got, limit-billed)
	}

	// The answers grow to 150 tokens: each call costs more than it
	// reserved, and its settlement charges the rest.
	llm.mu.Lock()
	llm.reply.output = 150
	llm.mu.Unlock()
	var reserved []float64
	for range 3 {
		reserved = append(reserved, reservedNow(t, tr, backfill))
		billed += estIn + 150
		if got := budgetLevel(tr, "backfill", clock.Now()); got != limit-billed {
			t.Fatalf("the budget holds %v, want %v: the settlement charges what a call cost beyond its reservation", got, limit-billed)
		}
	}
	// 51 calls of 20 then one of 150: 1 % of 52 is one call, so the
	// 99th percentile is the 150's bucket, [144, 159], from the second
	// long call on.
	if want := []float64{estIn + 21, estIn + 159, estIn + 159}; fmt.Sprint(reserved) != fmt.Sprint(want) {
		t.Errorf("as the answers grew, the calls reserved %v, want %v", reserved, want)
	}
	if w := tr.Stats().Workloads[0]; w.Spent != billed || w.Reserved != 0 {
		t.Errorf("stats %+v, want %v spent and nothing reserved", w, billed)
	}
}

// The budget's promise with learned estimates: a call is admitted only if
// its worst case fits what is left, so calls one at a time never spend
// beyond the Limit; calls in flight together reserve their estimates, and
// may each overshoot by their worst case less their reservation. Here,
// seven calls are opened together on a budget of 1,000 tokens, each
// reserving 121 of a worst case of 300: six are admitted (the seventh
// finds 274 left), all are billed their worst case, and the spend, 1,800,
// is within 1,000 + 5 × (300 − 121).
func TestOutputEstimateOvershootBound(t *testing.T) {
	backfill := ContextWithWorkload(context.Background(), "backfill")
	clock := newFakeClock()
	llm := &fakeLLM{reply: llmReply{input: estIn, output: 20}}
	roomy := WithScope(Scope{Name: "tokens", Unit: "tokens", Limit: Limit{Count: 1e9, Per: time.Second, Burst: 1e9}})
	tr := newMetered(t, llm, clock, Budget{Limit: 1e6, Per: time.Hour, Unit: "tokens"}, roomy,
		WithWorkload("small", Workload{Budget: Budget{Limit: 1000, Per: time.Hour, Unit: "tokens"}}))
	for range outputs.MinSamples {
		mustNotErr(t, chatAll(t, tr, backfill))
	}
	llm.mu.Lock()
	llm.reply.output = estOut // every call now bills its worst case
	llm.mu.Unlock()

	small := ContextWithWorkload(context.Background(), "small")
	const reserve, worst = estIn + 21, estIn + estOut
	var open []*http.Response
	var err error
	for range 7 {
		var resp *http.Response
		if resp, err = chat(t, tr, small, ""); err != nil {
			break
		}
		open = append(open, resp)
	}
	var be *BudgetError
	if len(open) != 6 || !errors.As(err, &be) {
		t.Fatalf("%d calls admitted together, then %v; want 6, then a *BudgetError", len(open), err)
	}
	for _, resp := range open {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	spent := 1000 - budgetLevel(tr, "small", clock.Now())
	bound := 1000 + float64(len(open)-1)*(worst-reserve)
	if spent != 6*worst || spent > bound {
		t.Errorf("spent %v, want %v, within the bound %v", spent, 6*worst, bound)
	}

	// One call at a time never goes past the Limit: the next call is
	// refused once its worst case no longer fits, though its estimate does.
	// The thresholds are told as the spend crosses them, reservations
	// counted: the third call takes the spend past 50 %; the fourth is
	// refused, which is 100 %.
	thresholds := &recorder{}
	tr2 := newMetered(t, llm, clock, Budget{Limit: 1e6, Per: time.Hour, Unit: "tokens"}, roomy, WithObserver(thresholds),
		WithWorkload("small", Workload{Budget: Budget{Limit: 1150, Per: time.Hour, Unit: "tokens"}}))
	llm.mu.Lock()
	llm.reply.output = 20
	llm.mu.Unlock()
	for range outputs.MinSamples {
		mustNotErr(t, chatAll(t, tr2, backfill))
	}
	llm.mu.Lock()
	llm.reply.output = estOut
	llm.mu.Unlock()
	calls := 0
	for ; calls < 10; calls++ {
		if err = chatAll(t, tr2, small); err != nil {
			break
		}
	}
	if spent := 1150 - budgetLevel(tr2, "small", clock.Now()); calls != 3 || spent != 900 || !errors.As(err, &be) {
		t.Errorf("one at a time: %d calls spent %v of 1150, then %v; want 3 calls, 900 (a fourth's worst case does not fit the 250 left, its estimate would), then a *BudgetError", calls, spent, err)
	}
	if got := strings.Join(thresholds.thresholds(), ", "); got != "small 50%, small 100%" {
		t.Errorf("threshold events %q, want the 50 %% one, then the 100 %% one at the refusal", got)
	}
}
