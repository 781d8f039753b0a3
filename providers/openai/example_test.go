package openai_test

import (
	"fmt"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/openai"
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
