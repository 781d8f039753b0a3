// Moneybudget runs a backfill that calls an LLM in a loop under a budget in
// dollars, beside live traffic that must keep working, and prints what the
// provider billed.
//
// The LLM is a fake, started in this process on 127.0.0.1: it answers chat
// completions the way OpenAI does, streamed, with the usage in the last
// event, and keeps its own ledger of what it billed. The OpenAI preset
// brings OpenAI's prices (prices.OpenAI()); the fake's model is not among
// them, so its prices are given with WithPrices, as you would give a model
// the preset lacks, from the provider's pricing page.
//
//	go run ./examples/moneybudget
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/period"
	"github.com/pacer-go/pacer/providers/openai"
	"github.com/pacer-go/pacer/usage"
	"github.com/pacer-go/pacer/usage/prices"
)

const (
	model     = "fake-model"
	maxTokens = 2000
)

// The fake's prices: $2 per million input tokens, $8 per million output.
var fakePrices = prices.Table{model: {Input: prices.Dollars(2), Output: prices.Dollars(8),
	Source: "the fake in examples/moneybudget", Read: "2026-12-01"}}

// setup is what one run does.
type setup struct {
	budget     prices.Money
	backfill   int // goroutines looping on the backfill
	clicks     int // interactive calls, one after another
	clickEvery time.Duration
}

// result is what happened.
type result struct {
	backfillCalls   int64
	billedBackfill  prices.Money // by the fake's own ledger
	statsSpent      prices.Money
	interactiveOK   int
	interactiveFail int
	stoppedBy       error
}

func main() {
	r := run(setup{budget: prices.Dollars(0.50), backfill: 8, clicks: 20, clickEvery: 50 * time.Millisecond})
	fmt.Printf("backfill: %d calls, billed %v by the provider; pacer counted %v\n",
		r.backfillCalls, r.billedBackfill, r.statsSpent)
	fmt.Printf("stopped by: %v\n", r.stoppedBy)
	fmt.Printf("interactive: %d calls succeeded, %d failed\n", r.interactiveOK, r.interactiveFail)
}

func run(s setup) result {
	llm := newFakeLLM()
	srv := httptest.NewServer(llm)
	defer srv.Close()

	// The OpenAI preset reserves each call's worst case (its max_tokens) on
	// the budget until pacer has learned what the model's answers come to,
	// then their 99th percentile, and settles each call on the usage OpenAI
	// reports; your organization's limits go in PresetLimits. The preset
	// prices OpenAI's models; WithPrices adds the fake's.
	tr := pacer.New(nil,
		openai.PresetLimits(openai.Limits{Default: openai.ModelLimits{RPM: 10_000, TPM: 10_000_000}}),
		pacer.WithPrices(fakePrices),
		pacer.WithWorkload("interactive", pacer.Workload{Reserve: 0.3}),
		pacer.WithWorkload("backfill", pacer.Workload{Budget: pacer.Budget{Spend: s.budget, Period: period.Daily(0, 0, time.UTC)}}),
	)
	if err := tr.Err(); err != nil {
		log.Fatal(err)
	}
	client := tr.Client()

	ctx, stop := context.WithCancel(context.Background())
	var res result
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range s.backfill {
		wg.Go(func() {
			for ctx.Err() == nil {
				err := chat(ctx, client, srv.URL, "backfill")
				if errors.Is(err, pacer.ErrBudgetExhausted) {
					mu.Lock()
					res.stoppedBy = err
					mu.Unlock()
					return // a runaway loop would go on; pacer refuses it at once
				}
			}
		})
	}
	for range s.clicks {
		if err := chat(ctx, client, srv.URL, "interactive"); err != nil {
			res.interactiveFail++
		} else {
			res.interactiveOK++
		}
		time.Sleep(s.clickEvery)
	}
	wg.Wait()
	stop()
	llm.mu.Lock()
	res.backfillCalls, res.billedBackfill = llm.calls["backfill"], llm.billed["backfill"]
	llm.mu.Unlock()
	for _, w := range tr.Stats().Workloads {
		if w.Name == "backfill" {
			res.statsSpent = w.SpentMoney
		}
	}
	return res
}

// chat makes one streamed chat completion and reads it to the end.
func chat(ctx context.Context, c *http.Client, url, workload string) error {
	body, _ := json.Marshal(map[string]any{
		"model": model, "max_tokens": maxTokens, "stream": true,
		"stream_options": map[string]any{"include_usage": true},
		"messages":       []map[string]string{{"role": "user", "content": "Summarize this record: " + strings.Repeat("data ", 200)}},
	})
	req, _ := http.NewRequestWithContext(pacer.ContextWithWorkload(ctx, workload), http.MethodPost,
		url+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Workload", workload) // for the fake's ledger only
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// fakeLLM streams chat completions like OpenAI and bills them.
type fakeLLM struct {
	mu     sync.Mutex
	calls  map[string]int64
	billed map[string]prices.Money
}

func newFakeLLM() *fakeLLM {
	return &fakeLLM{calls: map[string]int64{}, billed: map[string]prices.Money{}}
}

func (f *fakeLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model     string `json:"model"`
		MaxTokens int64  `json:"max_tokens"`
		Messages  []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != model || req.MaxTokens <= 0 {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	in := int64(10)
	for _, m := range req.Messages {
		in += int64(len(m.Content)) / 4
	}
	// Answers are mostly far shorter than max_tokens; one in 100 runs to it.
	out := 1 + rand.Int64N(req.MaxTokens/4)
	if rand.IntN(100) == 0 {
		out = req.MaxTokens
	}
	u := usage.Usage{Input: in, Output: out}
	f.mu.Lock()
	f.calls[r.Header.Get("X-Workload")]++
	f.billed[r.Header.Get("X-Workload")] = f.billed[r.Header.Get("X-Workload")].Add(fakePrices[model].Cost(u))
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	for _, word := range []string{"The", " record", " says"} {
		fmt.Fprintf(w, "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{\"content\":%q}}],\"usage\":null}\n\n", word)
		w.(http.Flusher).Flush()
	}
	fmt.Fprintf(w, "data: {\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n",
		u.Input, u.Output, u.Input+u.Output)
}
