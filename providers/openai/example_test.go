package openai_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/period"
	"github.com/pacer-go/pacer/pool"
	"github.com/pacer-go/pacer/providers/openai"
	"github.com/pacer-go/pacer/usage/prices"
)

// Pace an OpenAI client at tier 2's published limits, with the figures of
// one model taken from the organization's limits page, and a nightly
// backfill that may use at most half of every limit. The tier's figures
// give way to the limits OpenAI sends; the model's are paced as given.
//
// Preset takes OpenAI's own settings only, in the package's Option type, as
// every provider's does; pacer's options (the workload here) go to
// pacer.New beside it, and one given after the preset wins.
func ExamplePreset() {
	t := pacer.New(nil,
		openai.Preset(openai.Tier2,
			openai.WithModel("gpt-5.4-mini", openai.ModelLimits{RPM: 5_000, TPM: 4_000_000}),
			openai.WithConcurrency(64)),
		pacer.WithWorkload("backfill", pacer.Workload{Max: 0.5}),
	)
	if err := t.Err(); err != nil {
		fmt.Println(err)
		return
	}
	// Give t.Client() to the SDK: openai.NewClient(option.WithHTTPClient(t.Client()),
	// option.WithMaxRetries(0)).
	for _, s := range t.Stats().Scopes {
		if s.Name == "openai/gpt-5.4-mini/tokens" {
			fmt.Printf("%s: %.0f tokens a second, %.0f at once\n", s.Name, s.Rate, s.Burst)
		}
	}
	// Output: openai/gpt-5.4-mini/tokens: 60000 tokens a second, 4000000 at once
}

// A budget of fifty cents a day, with the preset's own prices: Preset (and
// PresetLimits) bring prices.OpenAI(), so a model on OpenAI's price list
// needs no pacer.WithPrices. Give WithPrices only for a model the list
// lacks, or a price of your own.
func ExamplePreset_moneyBudget() {
	t := pacer.New(billing{}, openai.Preset(openai.Tier1),
		pacer.WithWorkload("backfill", pacer.Workload{
			Budget: pacer.Budget{Spend: prices.Dollars(0.50), Period: period.Daily(0, 0, time.UTC)},
		}),
	)
	if err := t.Err(); err != nil {
		fmt.Println(err)
		return
	}
	// One gpt-4o-mini call, billed 100 uncached input tokens, 20 cached and
	// 30 output (billing stands in for OpenAI): 100 × $0.15 + 20 × $0.075 +
	// 30 × $0.60 per million, 34.5 micro-dollars, counted as 35.
	req, _ := http.NewRequestWithContext(pacer.ContextWithWorkload(context.Background(), "backfill"), http.MethodPost,
		"https://api.openai.com/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o-mini","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`))
	resp, err := t.RoundTrip(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	for _, w := range t.Stats().Workloads {
		if w.Name == "backfill" {
			fmt.Printf("spent %v of %v\n", w.SpentMoney, w.Budget.Spend)
		}
	}
	// Output: spent $0.000035 of $0.50
}

// Three keys of one project behind one client: a key revoked or out of
// quota is taken out and the others carry its calls. The pool is paced at
// the project's and the organization's limits, which every key shares,
// so three keys never send more than one would.
func ExampleProjectKeys() {
	t := pacer.New(nil,
		openai.Preset(openai.Tier2),
		openai.ProjectKeys(
			pool.Member{Name: "key-a", Apply: pool.Bearer("sk-proj-aaa")}, // os.Getenv("OPENAI_KEY_A")
			pool.Member{Name: "key-b", Apply: pool.Bearer("sk-proj-bbb")},
			pool.Member{Name: "key-c", Apply: pool.Bearer("sk-proj-ccc")}))
	if err := t.Err(); err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range t.Stats().Members {
		fmt.Println(m.Name, m.State)
	}
	// Output:
	// key-a ready
	// key-b ready
	// key-c ready
}

// Two deployments of one model, on two resources, behind one client: each
// call goes to one of them, its deployment put in the path, and each is
// paced at its own tokens a minute and the 6 requests a minute per 1,000
// that Azure derives from them.
func ExampleAzureDeployments() {
	t := pacer.New(nil, openai.AzureDeployments(
		openai.AzureDeployment{Name: "eastus", Deployment: "gpt-4o", TPM: 450_000, Key: "east-key"}, // os.Getenv("AZURE_OPENAI_KEY_EAST")
		openai.AzureDeployment{Name: "swedencentral", Deployment: "gpt-4o", TPM: 150_000,
			Endpoint: "https://my-sweden-resource.openai.azure.com", Key: "sweden-key"}))
	if err := t.Err(); err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range t.Stats().Members {
		fmt.Println(m.Name, m.State)
	}
	fmt.Println("requests a minute:", openai.AzureRPM(450_000), openai.AzureRPM(150_000))
	// Output:
	// eastus ready
	// swedencentral ready
	// requests a minute: 2700 900
}
