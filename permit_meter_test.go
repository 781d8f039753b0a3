package pacer_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/anthropic"
	"github.com/pacer-go/pacer/providers/openai"
	"github.com/pacer-go/pacer/usage"
	"github.com/pacer-go/pacer/usage/prices"
)

// readingMeter is a Meter whose Estimate reads the request, as any Meter
// of a caller's may: a nil request would crash it.
func readingMeter() pacer.Meter {
	return pacer.Meter{
		Estimate: func(req *http.Request) (pacer.CallEstimate, bool) {
			if req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/generate") {
				return pacer.CallEstimate{}, false
			}
			return pacer.CallEstimate{Model: "m", Usage: usage.Usage{Input: 10, Output: 100}}, true
		},
		Usage:  usage.OpenAI,
		Prices: prices.Table{"m": {Input: prices.Micros(1), Output: prices.Micros(2), Source: "https://example.com/pricing", Read: "2026-12-01"}},
		Tokens: func(unit string, u usage.Usage) (int64, bool) {
			if unit == "tokens" {
				return u.Total(), true
			}
			return 0, false
		},
	}
}

// meteredTransports are a Transport of each kind that has a Meter: the two
// presets and a Meter of the caller's, each with the options given.
func meteredTransports(opts ...pacer.Option) map[string]*pacer.Transport {
	return map[string]*pacer.Transport{
		"openai":    pacer.New(nil, append([]pacer.Option{openai.Preset(openai.Tier1)}, opts...)...),
		"anthropic": pacer.New(nil, append([]pacer.Option{anthropic.Preset(anthropic.Start)}, opts...)...),
		"own meter": pacer.New(nil, append([]pacer.Option{pacer.WithMeter(readingMeter())}, opts...)...),
	}
}

// Acquire, TryAcquire and Reserve on a Transport with a Meter admit the
// permit as on any other: a permit runs no Meter, so it cannot crash one.
func TestPermitOnMeteredTransport(t *testing.T) {
	for name, tr := range meteredTransports() {
		t.Run(name, func(t *testing.T) {
			if err := tr.Err(); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			p, err := tr.Acquire(ctx)
			if err != nil {
				t.Fatalf("Acquire: %v", err)
			}
			p.Settle("tokens", 10).Accept()
			if p, err = tr.TryAcquire(ctx); err != nil {
				t.Fatalf("TryAcquire: %v", err)
			}
			p.Drop()
			r, err := tr.Reserve(ctx)
			if err != nil {
				t.Fatalf("Reserve: %v", err)
			}
			if p, err = r.Wait(ctx); err != nil {
				t.Fatalf("Reservation.Wait: %v", err)
			}
			p.Reject(0)
		})
	}
}

// A permit on a workload whose budget counts money is charged what it
// states in micro-dollars, then what Settle reports, in full; one that
// states nothing fails at once, saying how to state it, and nothing is held.
func TestPermitMoneyBudget(t *testing.T) {
	budget := pacer.WithWorkload("llm", pacer.Workload{Budget: pacer.Budget{Spend: prices.Dollars(1), Per: time.Hour}})
	for name, tr := range meteredTransports(budget) {
		t.Run(name, func(t *testing.T) {
			if err := tr.Err(); err != nil {
				t.Fatal(err)
			}
			ctx := pacer.ContextWithWorkload(context.Background(), "llm")
			for _, acquire := range []func(context.Context) error{
				func(ctx context.Context) error { _, err := tr.Acquire(ctx); return err },
				func(ctx context.Context) error { _, err := tr.TryAcquire(ctx); return err },
				func(ctx context.Context) error { _, err := tr.Reserve(ctx); return err },
			} {
				err := acquire(ctx)
				if err == nil || !strings.Contains(err.Error(), "ContextWithSpend(ctx, prices.Dollars(") {
					t.Fatalf("a permit stating no cost on a budget in usd: err = %v, want one saying to state it", err)
				}
			}
			p, err := tr.Acquire(pacer.ContextWithSpend(ctx, prices.Micros(10_000)))
			if err != nil {
				t.Fatalf("a permit stating its cost: %v", err)
			}
			if got := spent(tr, "llm"); got != 0.01 {
				t.Errorf("spent %v while in flight, want the 0.01 stated", got)
			}
			p.SettleSpend(prices.Micros(250_000)).Accept()
			if got := spent(tr, "llm"); got != 0.25 {
				t.Errorf("spent %v after Settle, want the 0.25 settled", got)
			}
			// The rest of the dollar goes on a call settled beyond it; the
			// next permit, even one stating 0, is refused.
			p, err = tr.Acquire(pacer.ContextWithSpend(ctx, prices.Micros(0)))
			if err != nil {
				t.Fatal(err)
			}
			p.SettleSpend(prices.Micros(800_000)).Accept()
			var be *pacer.BudgetError
			if _, err := tr.TryAcquire(pacer.ContextWithSpend(ctx, prices.Micros(0))); !errors.As(err, &be) {
				t.Errorf("with the budget spent: err = %v, want a *BudgetError", err)
			}
			for _, sc := range tr.Stats().Scopes {
				if sc.InFlight != 0 {
					t.Errorf("scope %s: %d in flight, want none: a refused permit holds nothing", sc.Name, sc.InFlight)
				}
			}
		})
	}
}

// spent is what workload has spent of its budget, in its unit.
func spent(tr *pacer.Transport, workload string) float64 {
	for _, w := range tr.Stats().Workloads {
		if w.Name == workload {
			return w.Spent
		}
	}
	return -1
}

// The README's "Not HTTP?" example, on a Transport with the OpenAI
// preset: a permit on a tokens scope, settled on the tokens the call used,
// which a budget in tokens is charged.
func TestReadmePermitExample(t *testing.T) {
	tr := pacer.New(nil, openai.Preset(openai.Tier1),
		pacer.WithScope(pacer.Scope{Name: "tpm", Unit: "tokens", Limit: pacer.PerMinute(30_000)}),
		pacer.WithWorkload("batch", pacer.Workload{Budget: pacer.Budget{Limit: 1_000_000, Per: 24 * time.Hour, Unit: "tokens"}}))
	ctx := pacer.ContextWithWorkload(context.Background(), "batch")
	model, estimate := "gpt-4o-mini", int64(500)
	callTheModel := func(context.Context) (struct{ Usage struct{ TotalTokens int64 } }, error) {
		var out struct{ Usage struct{ TotalTokens int64 } }
		out.Usage.TotalTokens = 1_200
		return out, nil
	}
	isRateLimited := func(error) bool { return false }
	retryAfter := time.Duration(0)

	p, err := tr.Acquire(ctx, pacer.Charge{Scope: "tpm", Key: model, Cost: estimate})
	if err != nil {
		t.Fatal(err) // *ThrottledError at once if the wait cannot end in time, *BudgetError…
	}
	out, err := callTheModel(ctx)
	switch {
	case isRateLimited(err):
		p.Reject(retryAfter) // pauses the scope for every caller, like a 429
	case err != nil:
		p.Drop() // says nothing about limits; releases the slot
	default:
		p.Settle("tokens", out.Usage.TotalTokens).Accept()
	}

	if got := spent(tr, "batch"); got != 1_200 {
		t.Errorf("the budget spent %v, want the 1200 tokens settled", got)
	}
}
