package pacer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pacer-go/pacer/usage"
	"github.com/pacer-go/pacer/usage/prices"
)

// The streaming fake's model, its prices, and its calls' shape.
const (
	cutModel     = "streamer"
	cutInput     = 500  // every call's input, which the Meter estimates right
	cutMaxTokens = 1000 // every call's max_tokens: its worst case
	// cutUnsent is how many tokens the fake generates beyond the last one
	// the caller read before its close reaches it: generated and billed,
	// never sent.
	cutUnsent = 5
)

var cutPrices = prices.Table{cutModel: {Input: prices.Micros(2_000_000), Output: prices.Micros(8_000_000),
	Source: "the fake in cutstream_test.go", Read: "2026-12-01"}}

// streamingLLM streams chat completions a token a chunk, each token four
// letters ("word"), with the usage in a last chunk, and bills what it
// generated: all of an answer read to its end; of a stream the caller
// closes early, the tokens it read and cutUnsent more.
type streamingLLM struct {
	mu     sync.Mutex
	rng    *rand.Rand
	billed prices.Money
	cuts   int
}

func (f *streamingLLM) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	f.mu.Lock()
	// Most answers are short, a few long: the learned p99 of output,
	// which a call reserves, is far above what most calls produce.
	n := 100 + f.rng.IntN(100)
	if f.rng.IntN(50) == 0 {
		n = 900
	}
	f.mu.Unlock()
	var b strings.Builder
	b.WriteString(streamChunk(`{"role":"assistant","content":""}`))
	for range n {
		b.WriteString(streamChunk(`{"content":"word"}`))
	}
	fmt.Fprintf(&b, `data: {"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`+"\n\ndata: [DONE]\n\n",
		cutInput, n, cutInput+n)
	h := http.Header{"Content-Type": {"text/event-stream"}}
	return &http.Response{StatusCode: 200, Header: h, Request: req,
		Body: &streamedBody{Reader: strings.NewReader(b.String()), llm: f, generated: n}}, nil
}

func streamChunk(delta string) string {
	return `data: {"id":"c","object":"chat.completion.chunk","model":"` + cutModel + `","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}],"usage":null}` + "\n\n"
}

// streamedBody bills its call when it is closed, on what was read of it.
type streamedBody struct {
	*strings.Reader
	llm       *streamingLLM
	generated int
	read      int // tokens the caller read
	billed    bool
}

func (b *streamedBody) Read(p []byte) (int, error) {
	n, err := b.Reader.Read(p)
	b.read += strings.Count(string(p[:n]), `"word"`)
	return n, err
}

func (b *streamedBody) Close() error {
	if !b.billed {
		b.billed = true
		out := b.generated
		if b.Reader.Len() > 0 { // closed early: the provider stops
			out = min(b.generated, b.read+cutUnsent)
		}
		c := cutPrices[cutModel].Cost(usage.Usage{Input: cutInput, Output: int64(out)})
		b.llm.mu.Lock()
		b.llm.billed = prices.Micros(b.llm.billed.Micros() + c.Micros())
		b.llm.mu.Unlock()
	}
	return nil
}

// cutMeter estimates every chat completion at its input and max_tokens.
func cutMeter() Meter {
	return Meter{
		Estimate: func(req *http.Request) (CallEstimate, bool) {
			return CallEstimate{Model: cutModel, Usage: usage.Usage{Input: cutInput, Output: cutMaxTokens}}, true
		},
		Usage:  usage.OpenAI,
		Prices: cutPrices,
	}
}

// A runaway loop of streamed calls, a fifth of them cut mid-way (a chat
// UI's "stop"), under a $2 budget: the budget lets the loop spend at least
// 90 % of it by the provider's bill, and never more than all of it, as the
// provider generates no more than cutMargin beyond what it sent. Stats say
// what the budget was charged.
func TestCutStreamsSettleOnWhatStreamed(t *testing.T) {
	clock := newFakeClock()
	llm := &streamingLLM{rng: rand.New(rand.NewPCG(28, 1))}
	budget := Budget{Spend: prices.Dollars(2), Per: 24 * time.Hour}
	tr := New(llm, withClock(clock), WithMeter(cutMeter()), WithoutRetry(),
		WithWorkload("chat", Workload{Budget: budget}))
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := ContextWithWorkload(context.Background(), "chat")
	rng := rand.New(rand.NewPCG(28, 2))
	calls := 0
	for ; calls < 10_000; calls++ {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://llm.test/v1/chat/completions", strings.NewReader(`{}`))
		resp, err := tr.RoundTrip(req)
		if errors.Is(err, ErrBudgetExhausted) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rng.IntN(5) == 0 { // cut mid-way: read some of the chunks, then close
			llm.cuts++
			buf := make([]byte, 64)
			for range 5 + rng.IntN(400) {
				if _, err := resp.Body.Read(buf); err != nil {
					break
				}
			}
		} else {
			io.Copy(io.Discard, resp.Body)
		}
		resp.Body.Close()
		clock.Advance(time.Second)
	}
	w := tr.Stats().Workloads[0]
	used := float64(llm.billed.Micros()) / float64(budget.Spend.Micros())
	t.Logf("%d calls, %d cut: billed %v (%.3f of %v); Stats %v spent, %v reserved", calls, llm.cuts, llm.billed, used, budget.Spend, w.SpentMoney, w.ReservedMoney)
	if llm.cuts < calls/10 {
		t.Fatalf("only %d of %d calls were cut", llm.cuts, calls)
	}
	if used < 0.90 {
		t.Errorf("the budget refused after %v of the provider's bill, %.3f of its %v", llm.billed, used, budget.Spend)
	}
	if llm.billed.Micros() > budget.Spend.Micros() {
		t.Errorf("the provider billed %v, beyond the budget's %v", llm.billed, budget.Spend)
	}
	// Stats and the budget's ledger agree, to the micro-dollar.
	charged := budget.Spend.Micros() - int64(budgetLevel(tr, "chat", clock.Now()))
	if w.SpentMoney.Micros() != charged || w.ReservedMoney.Micros() != 0 {
		t.Errorf("Stats say %v spent and %v reserved; the budget was charged %v", w.SpentMoney, w.ReservedMoney, prices.Micros(charged))
	}
}
