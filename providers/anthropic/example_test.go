package anthropic_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

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

// A backfill that can wait spreads a subscription's 5-hour and weekly
// windows to their resets (Workload.SpreadLongWindows), and Stats shows
// what the unified headers last said of each. Here a stand-in for the API
// answers with the headers a real response carries.
func ExamplePreset_longWindows() {
	api := roundTrip(func(req *http.Request) (*http.Response, error) {
		h := http.Header{}
		h.Set("anthropic-ratelimit-unified-status", "allowed_warning")
		h.Set("anthropic-ratelimit-unified-5h-utilization", "0.35")
		h.Set("anthropic-ratelimit-unified-5h-reset", strconv.FormatInt(time.Now().Add(2*time.Hour).Unix(), 10))
		h.Set("anthropic-ratelimit-unified-7d-utilization", "0.85")
		h.Set("anthropic-ratelimit-unified-7d-reset", strconv.FormatInt(time.Now().Add(72*time.Hour).Unix(), 10))
		return &http.Response{StatusCode: http.StatusOK, Header: h, Body: http.NoBody, Request: req}, nil
	})
	t := pacer.New(api, anthropic.Preset(anthropic.Start),
		pacer.WithWorkload("backfill", pacer.Workload{SpreadLongWindows: true}))
	ctx := pacer.ContextWithWorkload(context.Background(), "backfill")
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.anthropic.com/v1/messages",
		strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`))
	if resp, err := t.RoundTrip(req); err == nil {
		resp.Body.Close()
	}
	for _, s := range t.Stats().Scopes {
		if strings.HasSuffix(s.Name, "/requests") && len(s.Windows) > 0 {
			for _, w := range s.Windows {
				fmt.Printf("%s: window %s of %v, %.0f%% used\n", s.Name, w.Name, w.Period, 100*w.Used)
			}
		}
	}
	// Output:
	// anthropic/claude-sonnet-4/requests: window 5h of 5h0m0s, 35% used
	// anthropic/claude-sonnet-4/requests: window 7d of 168h0m0s, 85% used
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Keys of three Workspaces of one organization behind one client: the
// organization's limits, which the preset paces, are every key's, and a
// Workspace capped in the Console is paced at its own limits as well.
func ExampleWorkspaceKeys() {
	t := pacer.New(nil,
		anthropic.Preset(anthropic.Build),
		anthropic.WorkspaceKeys(
			anthropic.WorkspaceKey{Name: "default", Key: "sk-ant-aaa"}, // os.Getenv("ANTHROPIC_KEY_DEFAULT")
			anthropic.WorkspaceKey{Name: "batch", Key: "sk-ant-bbb", Limits: anthropic.ModelLimits{RPM: 500, ITPM: 400_000}},
			anthropic.WorkspaceKey{Name: "staging", Key: "sk-ant-ccc", Limits: anthropic.ModelLimits{RPM: 50}}))
	if err := t.Err(); err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range t.Stats().Members {
		fmt.Println(m.Name, m.State)
	}
	// Output:
	// default ready
	// batch ready
	// staging ready
}
