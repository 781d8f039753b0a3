package openai_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/openai"
	"github.com/pacer-go/pacer/usage/prices"
)

// billing answers every chat completion in JSON with the usage it bills.
type billing struct{}

func (billing) RoundTrip(req *http.Request) (*http.Response, error) {
	body := `{"id":"c","object":"chat.completion","choices":[{"message":{"content":"hi"}}],` +
		`"usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150,"prompt_tokens_details":{"cached_tokens":20}}}`
	h := http.Header{"Content-Type": {"application/json"}}
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// The preset's Meter settles budgets on the usage OpenAI reported — one in
// tokens on its Total (what OpenAI bills: input and output), one in dollars
// at the prices given WithPrices — while the model's tokens scope keeps
// what the call was charged before it ran, the larger of its max_tokens and
// its input: OpenAI's limiter counts that and corrects nothing afterwards
// (see the meter's doc).
func TestPresetSettlesTokensAndMoneyOnUsage(t *testing.T) {
	// In a bubble: the level is read the moment the call ends, with no
	// refill on a loaded machine between the two.
	synctest.Test(t, func(t *testing.T) {
		price := prices.Price{Input: prices.Dollars(1), CacheRead: prices.Dollars(0.1), Output: prices.Dollars(4),
			Source: "https://example.test/my-negotiated-prices", Read: "2026-12-01"}
		tr := pacer.New(billing{},
			openai.PresetLimits(openai.Limits{Models: map[string]openai.ModelLimits{"gpt-test": {RPM: 1000, TPM: 100_000}}}),
			pacer.WithPrices(prices.Table{"gpt-test": price}),
			pacer.WithWorkload("backfill", pacer.Workload{Budget: pacer.Budget{Spend: prices.Dollars(1), Per: time.Hour}}),
			pacer.WithWorkload("tokens", pacer.Workload{Budget: pacer.Budget{Limit: 10_000, Per: time.Hour, Unit: openai.UnitTokens}}))
		if err := tr.Err(); err != nil {
			t.Fatal(err)
		}
		for _, workload := range []string{"backfill", "tokens"} {
			req, _ := http.NewRequestWithContext(pacer.ContextWithWorkload(context.Background(), workload), http.MethodPost,
				"https://api.openai.com/v1/chat/completions",
				strings.NewReader(`{"model":"gpt-test-2026-01-01","max_tokens":2000,"messages":[{"role":"user","content":"hello"}]}`))
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		st := tr.Stats()
		found := false
		for _, s := range st.Scopes {
			if s.Name != "openai/gpt-test/tokens" {
				continue
			}
			found = true
			if !s.TokensKnown || s.Tokens != s.Burst-2*2000 {
				t.Errorf("the tokens scope holds %v, want %v less the two calls' charges of 2,000 (their max_tokens), not the 150 each billed", s.Tokens, s.Burst)
			}
		}
		if !found {
			t.Errorf("no scope openai/gpt-test/tokens in %+v", st.Scopes)
		}
		// 100 uncached at $1/M, 20 cached at $0.1/M, 30 out at $4/M: 222 micro-USD.
		for _, w := range st.Workloads {
			switch w.Name {
			case "backfill":
				if w.SpentMoney != prices.Micros(222) || !w.ReservedMoney.IsZero() || w.Spent != 0.000222 || w.Unit != "usd" {
					t.Errorf("stats %+v, want $0.000222 spent and nothing reserved", w)
				}
			case "tokens":
				if w.Spent != 150 || w.Reserved != 0 {
					t.Errorf("stats %+v, want the 150 tokens billed spent and nothing reserved", w)
				}
			}
		}
	})
}

// streaming answers every chat completion with a stream of ten chunks and
// no usage yet: a body the caller closes after the first is a cut stream.
type streaming struct{}

func (streaming) RoundTrip(req *http.Request) (*http.Response, error) {
	chunk := `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"word"}}],"usage":null}` + "\n\n"
	h := http.Header{"Content-Type": {"text/event-stream"}}
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(strings.Repeat(chunk, 10))), Request: req}, nil
}

// A cut stream of a model that does not reason settles on what it
// streamed; one of a model that may reason, whose chunks do not show its
// reasoning, settles at its reservation.
func TestPresetCutStreamOfAReasoningModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		price := prices.Price{Input: prices.Dollars(1), Output: prices.Dollars(4), Source: "https://example.test/prices", Read: "2026-12-01"}
		for _, c := range []struct {
			model  string
			reason bool
		}{{"gpt-4o-test", false}, {"gpt-5-chat-test", false}, {"o3-test", true}, {"gpt-5-test", true}, {"my-azure-deployment", true}} {
			tr := pacer.New(streaming{},
				openai.PresetLimits(openai.Limits{Models: map[string]openai.ModelLimits{c.model: {RPM: 1000, TPM: 100_000}}}),
				pacer.WithPrices(prices.Table{c.model: price}),
				pacer.WithWorkload("chat", pacer.Workload{Budget: pacer.Budget{Spend: prices.Dollars(1), Per: time.Hour}}))
			if err := tr.Err(); err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequestWithContext(pacer.ContextWithWorkload(context.Background(), "chat"), http.MethodPost,
				"https://api.openai.com/v1/chat/completions",
				strings.NewReader(`{"model":"`+c.model+`","max_tokens":2000,"stream":true,"messages":[{"role":"user","content":"hello"}]}`))
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Read(make([]byte, 100)) // the first chunk
			resp.Body.Close()
			spent := tr.Stats().Workloads[0].SpentMoney
			if spent.IsZero() {
				t.Fatalf("%s: nothing spent", c.model)
			}
			// Its reservation: its input and max_tokens, 2,000 at $4/M.
			if atReservation := spent.Micros() >= 8000; atReservation != c.reason {
				t.Errorf("%s: spent %v; want at its reservation: %v", c.model, spent, c.reason)
			}
		}
	})
}
