package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/period"
	"github.com/pacer-go/pacer/providers/openai"
	"github.com/pacer-go/pacer/reconcile"
	"github.com/pacer-go/pacer/usage/prices"
)

// Two workloads spend daily budgets in one OpenAI project; the bill for
// the day is a fifth more than pacer charged (a tool's calls, say, billed
// outside the completions pacer read). One poll reports the drift for the
// project, and corrects both budgets in proportion to their charges.
//
// chatCompletions stands in for OpenAI's chat API, and costsReport for its
// organization costs report: no key is needed.
func Example() {
	costs := httptest.NewServer(costsReport(0.0054))
	defer costs.Close()

	daily := pacer.Budget{Spend: prices.Dollars(1), Period: period.Daily(0, 0, time.UTC)}
	tr := pacer.New(chatCompletions{}, openai.Preset(openai.Tier1),
		pacer.WithWorkload("chat", pacer.Workload{Budget: daily}),
		pacer.WithWorkload("backfill", pacer.Workload{Budget: daily}))
	r, err := reconcile.New(reconcile.Config{
		Source:     reconcile.OpenAI("sk-admin-…", reconcile.WithBaseURL(costs.URL)),
		Transports: []*pacer.Transport{tr},
		Groups: []reconcile.Group{
			{By: reconcile.ByProject, ID: "proj_1", Workloads: []string{"chat", "backfill"}},
		},
		Correct: true,
		Observers: []observe.Observer{observe.Func(func(e observe.Event) {
			fmt.Printf("%v %s: %+.6f usd (%+d %%)\n", e.Kind, e.Scope, e.Amount, e.Percent)
		})},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// 6 calls of chat, 4 of the backfill, each billed 1000 tokens in and
	// 500 out of gpt-4o-mini: $0.00045 a call.
	for i := range 10 {
		workload := "chat"
		if i >= 6 {
			workload = "backfill"
		}
		req, _ := http.NewRequestWithContext(pacer.ContextWithWorkload(context.Background(), workload), http.MethodPost,
			"https://api.openai.com/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o-mini","max_tokens":500,"messages":[{"role":"user","content":"hi"}]}`))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// Run(ctx) polls every Config.Every; one poll here.
	if err := r.Poll(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	g := r.Stats().Groups[0]
	fmt.Printf("billed %.6f, charged %.6f\n", g.Billed, g.Charged)
	for _, w := range tr.Stats().Workloads {
		fmt.Printf("%s spent %v\n", w.Name, w.SpentMoney)
	}
	// Output:
	// budget_drift project:proj_1: +0.000900 usd (+20 %)
	// billed 0.005400, charged 0.004500
	// backfill spent $0.00216
	// chat spent $0.00324
}

// chatCompletions answers every chat completion with its usage, as OpenAI
// does.
type chatCompletions struct{}

func (chatCompletions) RoundTrip(req *http.Request) (*http.Response, error) {
	body := `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"…"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":1000,"completion_tokens":500,"total_tokens":1500}}`
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// costsReport is OpenAI's organization costs report, billing proj_1 usd
// today.
func costsReport(usd float64) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		day := time.Now().UTC().Truncate(24 * time.Hour)
		json.NewEncoder(w).Encode(map[string]any{"object": "page", "has_more": false, "next_page": nil, "data": []any{map[string]any{
			"object": "bucket", "start_time": day.Unix(), "end_time": day.Add(24 * time.Hour).Unix(),
			"results": []any{map[string]any{"object": "organization.costs.result", "amount": map[string]any{"value": usd, "currency": "usd"}, "project_id": "proj_1"}},
		}}})
	}
}
