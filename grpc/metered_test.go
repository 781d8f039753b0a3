package pacergrpc

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/anthropic"
	"github.com/pacer-go/pacer/providers/openai"
	"github.com/pacer-go/pacer/usage"
	"github.com/pacer-go/pacer/usage/prices"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// meteredTransports are a Transport with each kind of Meter: the OpenAI
// and Anthropic presets', and one of the caller's whose Estimate reads
// the request, as a nil one would crash.
func meteredTransports(opts ...pacer.Option) map[string]*pacer.Transport {
	own := pacer.Meter{
		Estimate: func(req *http.Request) (pacer.CallEstimate, bool) {
			if req.Method != http.MethodPost {
				return pacer.CallEstimate{}, false
			}
			return pacer.CallEstimate{Model: "m", Usage: usage.Usage{Input: 10, Output: 100}}, true
		},
		Prices: prices.Table{"m": {Input: prices.Micros(1), Output: prices.Micros(2), Source: "https://example.com/pricing", Read: "2026-12-01"}},
	}
	with := func(o pacer.Option) *pacer.Transport { return pacer.New(nil, append([]pacer.Option{o}, opts...)...) }
	return map[string]*pacer.Transport{
		"openai":    with(openai.Preset(openai.Tier1)),
		"anthropic": with(anthropic.Preset(anthropic.Start)),
		"own meter": with(pacer.WithMeter(own)),
	}
}

// Unary calls and streams through a Transport with a Meter are admitted
// as through any other: a call's permit runs no Meter.
func TestCallsOnMeteredTransport(t *testing.T) {
	for name, tr := range meteredTransports() {
		t.Run(name, func(t *testing.T) {
			hs, client := serve(t, tr)
			ctx := context.Background()
			if resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				t.Fatalf("unary: %v, %v", resp, err)
			}
			sctx, cancel := context.WithCancel(ctx)
			defer cancel()
			watch, err := client.Watch(sctx, &healthpb.HealthCheckRequest{})
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if _, err := watch.Recv(); err != nil {
				t.Fatalf("stream: %v", err)
			}
			if n := hs.calls.Load(); n != 1 {
				t.Errorf("%d unary calls reached the server, want 1", n)
			}
		})
	}
}

// On a workload whose budget counts money, a call that states no cost is
// refused before it is sent, saying how to state one; a call that states
// it is charged it.
func TestCallsOnMeteredTransportWithMoneyBudget(t *testing.T) {
	budget := pacer.WithWorkload("llm", pacer.Workload{Budget: pacer.Budget{Spend: prices.Dollars(1), Per: time.Hour}})
	for name, tr := range meteredTransports(budget) {
		t.Run(name, func(t *testing.T) {
			hs, client := serve(t, tr)
			ctx := pacer.ContextWithWorkload(context.Background(), "llm")
			if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); err == nil || !strings.Contains(err.Error(), "ContextWithSpend") {
				t.Fatalf("unary without a cost: err = %v, want one saying to state it", err)
			}
			if _, err := client.Watch(ctx, &healthpb.HealthCheckRequest{}); err == nil || !strings.Contains(err.Error(), "ContextWithSpend") {
				t.Fatalf("stream without a cost: err = %v, want one saying to state it", err)
			}
			if n := hs.calls.Load(); n != 0 {
				t.Fatalf("%d calls reached the server, want none", n)
			}
			if _, err := client.Check(pacer.ContextWithSpend(ctx, prices.Micros(20_000)), &healthpb.HealthCheckRequest{}); err != nil {
				t.Fatalf("unary with a cost: %v", err)
			}
			if w := tr.Stats().Workloads; len(w) == 0 || w[len(w)-1].Name != "llm" || w[len(w)-1].Spent != 0.02 {
				t.Errorf("workloads = %+v, want llm to have spent 0.02", w)
			}
		})
	}
}
