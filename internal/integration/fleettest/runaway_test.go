package fleettest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/internal/testservers"
	"github.com/pacer-go/pacer/period"
	"github.com/pacer-go/pacer/providers/openai"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/usage"
	"github.com/pacer-go/pacer/usage/prices"
)

// The runaway loop: a bug calls an LLM in a tight loop from every process
// of a fleet, under a daily budget in dollars on its workload.
const (
	envRunaway = "PACER_FLEET_RUNAWAY"
	budgetUSD  = 5
	runawayFor = 4 * time.Second
	overtime   = 30 * time.Second // how long past runawayFor a process may loop to see its budget run out
	looping    = 4                // goroutines per process in the loop
	fakeModel  = "gpt-fake"
	maxTokens  = 4000 // every call's max_tokens
	// The fake's prices: what it bills, and what the fleet is told.
	inputPrice, outputPrice = 2_000_000, 8_000_000 // micro-USD per million tokens
)

var fakePrices = prices.Table{fakeModel: {Input: prices.Micros(inputPrice), Output: prices.Micros(outputPrice),
	Source: "the fake in internal/fleettest/runaway_test.go", Read: "2026-12-01"}}

// prompt is every call's message: about 500 tokens of input.
var prompt = strings.Repeat("tell me more ", 160)

// largestCost is the most one call can cost: its input, billed a little
// above pacer's estimate, and all of its max_tokens.
var largestCost = fakePrices[fakeModel].Cost(usage.Usage{Input: billedInput(), Output: maxTokens}).Micros()

// largestExcess is the most one call can be billed beyond its reservation:
// it reserves at least pacer's estimate of its input, once the model's
// output is learned (before, its worst case, and nothing beyond).
var largestExcess = largestCost - fakePrices[fakeModel].Cost(usage.Usage{Input: estimatedInput()}).Micros()

func estimatedInput() int64 {
	e, err := openai.EstimateTokens("/v1/chat/completions", []byte(requestBody(maxTokens)), 0)
	if err != nil {
		panic(err)
	}
	return e.Input
}

func requestBody(maxTokens int) string {
	return fmt.Sprintf(`{"model":%q,"max_tokens":%d,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":%q}]}`,
		fakeModel, maxTokens, prompt)
}

// inFlight is how many backfill calls the fleet has in flight at most.
const inFlight = processes * looping

// billedInput is the input the fake bills each call: a token per four
// characters plus some, so that pacer's estimate falls a little short, as
// an estimate may.
func billedInput() int64 { return int64(len(prompt))/4 + 40 }

// fakeOpenAI streams chat completions the way OpenAI does, with the usage in
// the last chunk, and keeps its own ledger of what it billed per workload.
type fakeOpenAI struct {
	mu     sync.Mutex
	billed map[string]int64 // micro-USD by the X-Workload header
	calls  map[string]int
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Model     string `json:"model"`
		MaxTokens int64  `json:"max_tokens"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Model != fakeModel {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	// Most answers are short, as LLM answers are beside their max_tokens;
	// one in 200 runs to the limit. Pacer learns the short ones' 99th
	// percentile and reserves that; the long ones are settled up.
	out := 1 + rand.Int64N(2000)
	if rand.IntN(200) == 0 {
		out = body.MaxTokens
	}
	u := usage.Usage{Input: billedInput(), Output: out}
	f.mu.Lock()
	f.billed[r.Header.Get("X-Workload")] += fakePrices[fakeModel].Cost(u).Micros()
	f.calls[r.Header.Get("X-Workload")]++
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	for range 3 {
		fmt.Fprint(w, `data: {"object":"chat.completion.chunk","choices":[{"delta":{"content":"more"}}],"usage":null}`+"\n\n")
		w.(http.Flusher).Flush()
	}
	fmt.Fprintf(w, `data: {"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`+"\n\ndata: [DONE]\n\n",
		u.Input, u.Output, u.Input+u.Output)
}

// runawayChild is one process of the fleet: backfill goroutines calling in a
// tight loop under the budget, and an interactive one beside them. It
// prints "interactive-ok interactive-failed interactive-ok-after-exhaustion".
func runawayChild(kind string) (int64, error) {
	ctx := context.Background()
	shared, until, closeStore, err := childStore(ctx, kind, looping+2)
	if err != nil {
		return 0, err
	}
	defer closeStore()
	tr := pacer.New(nil,
		openai.PresetLimits(openai.Limits{Default: openai.ModelLimits{RPM: 1_000_000, TPM: 1_000_000_000}}),
		pacer.WithPrices(fakePrices),
		pacer.WithStore(shared, store.Policy{OnFailure: store.FailClosed, Timeout: storeTimeout}), pacer.WithoutRetry(),
		pacer.WithWorkload("backfill", pacer.Workload{Budget: pacer.Budget{Spend: prices.Dollars(budgetUSD), Period: period.Daily(0, 0, time.UTC)}}),
		pacer.WithWorkload("interactive", pacer.Workload{}))
	if err := tr.Err(); err != nil {
		return 0, err
	}
	// The loop runs until the fleet's common deadline, and on past it until
	// this process has seen the budget refuse a call and an interactive
	// call succeed after that: a child that started late on a loaded
	// machine still sees the runaway stopped, and the interactive traffic
	// go on (a budget that ran out just before the deadline left no time
	// for one, and failed CI). overtime bounds that, so that a budget which
	// never runs out fails the test instead of hanging it.
	ctx, cancel := context.WithDeadline(ctx, until.Add(overtime))
	defer cancel()
	var exhausted atomic.Bool
	running := func() bool {
		return ctx.Err() == nil && (time.Now().Before(until) || !exhausted.Load())
	}
	call := func(workload string) error {
		body := requestBody(maxTokens)
		req, _ := http.NewRequestWithContext(pacer.ContextWithWorkload(ctx, workload), http.MethodPost,
			os.Getenv(envTarget)+"/v1/chat/completions", bytes.NewReader([]byte(body)))
		req.Header.Set("X-Workload", workload)
		req.Header.Set("Content-Type", "application/json")
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range looping {
		wg.Go(func() {
			for running() {
				err := call("backfill")
				switch {
				case errors.Is(err, pacer.ErrBudgetExhausted):
					exhausted.Store(true)
				case err != nil && ctx.Err() == nil:
					firstErr.CompareAndSwap(nil, fmt.Errorf("backfill: %w", err))
				}
			}
		})
	}
	var ok, failed, okAfter int64
	for running() || ctx.Err() == nil && okAfter == 0 {
		wasExhausted := exhausted.Load()
		if err := call("interactive"); err != nil {
			if ctx.Err() == nil {
				failed++
				firstErr.CompareAndSwap(nil, fmt.Errorf("interactive: %w", err))
			}
			continue
		}
		ok++
		if wasExhausted {
			okAfter++
		}
	}
	wg.Wait()
	// Before the process exits, the settlements still queued go out.
	fctx, fcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer fcancel()
	if err := tr.Flush(fctx); err != nil {
		return 0, fmt.Errorf("flushing the settlements: %w", err)
	}
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, err
	}
	if !exhausted.Load() {
		return 0, errors.New("the backfill never exhausted its budget")
	}
	fmt.Printf("%d %d ", ok, failed)
	return okAfter, nil
}

func TestRunawayLoopRedis(t *testing.T) {
	t.Parallel()
	runRunaway(t, "redis", testservers.RedisAddr(t), "runaway-"+randomName())
}

// On a Redis Cluster each bucket is in a slot of its own: the budget, the
// requests and the tokens scopes of one call are on different shards. Not
// in parallel with the others: three fleets of four processes on a small
// machine may not get through the budget in runawayFor.
func TestRunawayLoopRedisCluster(t *testing.T) {
	runRunaway(t, "redis-cluster", strings.Join(testservers.RedisClusterAddrs(t), ","), "runaway-"+randomName())
}

func TestRunawayLoopPostgres(t *testing.T) {
	t.Parallel()
	url, table := postgresTable(t, "runaway_")
	runRunaway(t, "postgres", url, table)
}

func runRunaway(t *testing.T, kind, server, name string) {
	fake := &fakeOpenAI{billed: map[string]int64{}, calls: map[string]int{}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	until := time.Now().Add(runawayFor)
	var interactiveOK, interactiveAfter atomic.Int64
	spawn(t, kind, server, name, srv.URL, until, []string{envRunaway + "=1"}, func(out string) error {
		var ok, failed, after int64
		if _, err := fmt.Sscan(out, &ok, &failed, &after); err != nil {
			return fmt.Errorf("child said %q: %v", out, err)
		}
		if failed > 0 || after == 0 {
			return fmt.Errorf("a process's interactive calls: %d succeeded, %d failed, %d after the backfill's budget ran out; want none failed, some after", ok, failed, after)
		}
		interactiveOK.Add(ok)
		interactiveAfter.Add(after)
		return nil
	})
	fake.mu.Lock()
	defer fake.mu.Unlock()
	spent := fake.billed["backfill"]
	limit := int64(budgetUSD * prices.MicrosPerDollar)
	// The Budget's bound: the last call admitted had its worst case fit
	// what was left, so it overshoots by at most what its input estimate
	// missed (less than one call's cost); each of the other calls in flight
	// then may be billed up to its worst case beyond its reservation.
	bound := limit + largestCost + (inFlight-1)*largestExcess
	t.Logf("%d processes, %d goroutines each, looping on %s for %v: the backfill made %d calls billed $%.6f of its $%d/day, "+
		"$%.6f beyond it (one call costs at most $%.6f, and is billed at most $%.6f beyond its reservation; the bound is $%.6f); "+
		"%d interactive calls succeeded, %d after the backfill's budget ran out",
		processes, looping, kind, runawayFor, fake.calls["backfill"], float64(spent)/prices.MicrosPerDollar, budgetUSD,
		float64(max(spent-limit, 0))/prices.MicrosPerDollar, float64(largestCost)/prices.MicrosPerDollar,
		float64(largestExcess)/prices.MicrosPerDollar, float64(bound)/prices.MicrosPerDollar, interactiveOK.Load(), interactiveAfter.Load())
	if spent > bound {
		t.Errorf("the backfill was billed %d micro-USD, above its budget of %d plus one call's largest cost, %d, plus %d calls in flight's largest excess, %d",
			spent, limit, largestCost, inFlight-1, largestExcess)
	}
	// It did spend its budget: the loop was stopped by it, not by chance.
	if spent < limit-10*largestCost {
		t.Errorf("the backfill was billed only %d micro-USD of its %d", spent, limit)
	}
}
