package anthropic_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/anthropic"
	"github.com/pacer-go/pacer/usage"
	"github.com/pacer-go/pacer/usage/prices"
)

// streamed answers every Messages call with a stream whose usage comes in
// message_start and message_delta, as the Messages API streams it.
type streamed struct{ calls int }

func (s *streamed) RoundTrip(req *http.Request) (*http.Response, error) {
	s.calls++
	body := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":1000,\"cache_read_input_tokens\":200,\"output_tokens\":1}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":500}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	h := http.Header{"Content-Type": {"text/event-stream"}}
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// The preset's Meter settles a budget in dollars on what the stream
// reported, at the model's price from prices.Anthropic(), and refuses a
// model without a price.
func TestPresetSettlesMoneyOnTheStreamsUsage(t *testing.T) {
	api := &streamed{}
	tr := pacer.New(api, anthropic.PresetLimits(anthropic.Limits{Default: anthropic.ModelLimits{RPM: 1000, ITPM: 1_000_000, OTPM: 1_000_000}}),
		pacer.WithWorkload("backfill", pacer.Workload{Budget: pacer.Budget{Spend: prices.Dollars(10), Per: 24 * time.Hour}}))
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := pacer.ContextWithWorkload(context.Background(), "backfill")
	send := func(model string) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.anthropic.com/v1/messages",
			strings.NewReader(`{"model":"`+model+`","max_tokens":4000,"stream":true,"messages":[{"role":"user","content":"hello"}]}`))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	if err := send("claude-sonnet-5"); err != nil {
		t.Fatal(err)
	}
	want := prices.Anthropic()["claude-sonnet-5"].Cost(usage.Usage{Input: 1000, CacheRead: 200, Output: 500})
	if w := tr.Stats().Workloads[0]; w.SpentMoney != want || !w.ReservedMoney.IsZero() {
		t.Errorf("stats %+v, want %v spent and nothing reserved", w, want)
	}
	if err := send("claude-unknown-1"); !errors.Is(err, prices.ErrNoPrice) {
		t.Errorf("a model without a price: %v, want prices.ErrNoPrice", err)
	}
	if api.calls != 1 {
		t.Errorf("%d calls sent, want 1: the unpriced one is refused before it is sent", api.calls)
	}
}

// A budget reserves a call's worst case, its max_tokens of output, not the
// rate limit's typical answer, until the model's output is learned.
func TestBudgetReservesMaxTokens(t *testing.T) {
	tr := pacer.New(&streamed{}, anthropic.PresetLimits(anthropic.Limits{Default: anthropic.ModelLimits{RPM: 1000, ITPM: 1_000_000, OTPM: 1_000_000}}),
		pacer.WithWorkload("backfill", pacer.Workload{Budget: pacer.Budget{Spend: prices.Dollars(10), Per: 24 * time.Hour}}))
	body := `{"model":"claude-sonnet-5","max_tokens":4000,"stream":true,"messages":[{"role":"user","content":"hello"}]}`
	req, _ := http.NewRequestWithContext(pacer.ContextWithWorkload(context.Background(), "backfill"), http.MethodPost,
		"https://api.anthropic.com/v1/messages", strings.NewReader(body))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	e, err := anthropic.EstimateTokens([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := prices.Anthropic()["claude-sonnet-5"].Cost(usage.Usage{Input: e.Input, Output: 4000})
	if w := tr.Stats().Workloads[0]; w.ReservedMoney != want {
		t.Errorf("in flight, %v reserved, want %v: the input and max_tokens of output", w.ReservedMoney, want)
	}
}

// A request that turns on extended thinking is one whose stream does not
// show all the output it is billed: a cut stream of it settles at its
// reservation.
func TestEstimateTellsThinking(t *testing.T) {
	for body, want := range map[string]bool{
		`{"model":"m","max_tokens":100,"messages":[]}`:                                                    false,
		`{"model":"m","max_tokens":100,"thinking":{"type":"disabled"},"messages":[]}`:                     false,
		`{"model":"m","max_tokens":100,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[]}`: true,
		`{"model":"m","max_tokens":100,"thinking":{"type":"adaptive"},"messages":[]}`:                     true,
	} {
		e, err := anthropic.EstimateTokens([]byte(body))
		if err != nil || e.Thinking != want {
			t.Errorf("%s: Thinking %v (%v), want %v", body, e.Thinking, err, want)
		}
	}
}
