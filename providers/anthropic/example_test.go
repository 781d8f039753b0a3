package anthropic_test

import (
	"fmt"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/anthropic"
)

// Pace a Claude client at the Start tier, with one model class given the
// figures the Console's Limits page shows for it.
//
// Preset takes Anthropic's own settings only, in the package's Option type,
// as every provider's does; pacer's options go to pacer.New beside it, and
// one given after the preset wins: here a batch workload that may use at
// most half of every limit.
func ExamplePreset() {
	t := pacer.New(nil, anthropic.Preset(anthropic.Start,
		anthropic.WithModel("claude-opus-4-1", anthropic.ModelLimits{RPM: 500, ITPM: 200_000, OTPM: 40_000})),
		pacer.WithWorkload("batch", pacer.Workload{Max: 0.5}))
	if err := t.Err(); err != nil {
		fmt.Println(err)
		return
	}
	// Give t.Client() to the SDK: anthropic.NewClient(option.WithHTTPClient(t.Client()),
	// option.WithMaxRetries(0)).
	for _, s := range t.Stats().Scopes {
		if s.Name == "anthropic/claude-opus-4-1/output-tokens" {
			fmt.Printf("%s: %.0f at once\n", s.Name, s.Burst)
		}
	}
	// Output: anthropic/claude-opus-4-1/output-tokens: 40000 at once
}
