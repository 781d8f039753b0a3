package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	openaipreset "github.com/pacer-go/pacer/providers/openai"
)

// A backfill of 40 calls at a key's limit of 600 RPM is paced over seconds,
// while the interactive calls made meanwhile are admitted at once.
func TestBackfillDoesNotStarveInteractive(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-5.4-mini","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}`)
	}))
	defer srv.Close()
	limits := openaipreset.Limits{Models: map[string]openaipreset.ModelLimits{"gpt-5.4-mini": {RPM: 600, TPM: 1_000_000}}}
	var out strings.Builder
	r, err := run(t.Context(), srv.URL+"/v1/", "sk-test", limits, 40, 5, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	if r.backfillCalls != 40 {
		t.Errorf("backfill made %d calls, want 40", r.backfillCalls)
	}
	// 600 RPM: a burst of 60, half reserved for interactive; the backfill
	// takes its 30 at once and the rest at most half the rate, 4.5 a second.
	if r.backfill < time.Second {
		t.Errorf("the backfill finished in %v: it was not paced", r.backfill)
	}
	if r.slowestInteractive > 500*time.Millisecond {
		t.Errorf("an interactive call took %v behind the backfill", r.slowestInteractive)
	}
}
