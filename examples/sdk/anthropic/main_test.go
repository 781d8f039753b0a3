package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Against a local fake that answers the first call 529 "overloaded", as the
// Claude API does under load, pacer retries once and the SDK never does.
func TestRunAgainstFakeClaude(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls = append(calls, r.Header.Get("X-Stainless-Retry-Count"))
		n := len(calls)
		mu.Unlock()
		if r.URL.Path != "/v1/messages" {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		reset := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
		for _, k := range []string{"requests", "input-tokens", "output-tokens"} {
			h.Set("anthropic-ratelimit-"+k+"-limit", "100000")
			h.Set("anthropic-ratelimit-"+k+"-remaining", "99000")
			h.Set("anthropic-ratelimit-"+k+"-reset", reset)
		}
		if n == 1 {
			h.Set("retry-after", "0")
			w.WriteHeader(529)
			fmt.Fprint(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`)
			return
		}
		fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-5-5","content":[{"type":"text","text":"The API is overloaded."}],"stop_reason":"end_turn","usage":{"input_tokens":14,"output_tokens":6}}`)
	}))
	defer srv.Close()

	var out strings.Builder
	if err := run(t.Context(), srv.URL, "sk-ant-test", &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "overloaded") {
		t.Errorf("output: %q", out.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 2 {
		t.Errorf("the fake saw %d calls, want 2: the 529 and pacer's retry", len(calls))
	}
	for i, c := range calls {
		if c != "0" {
			t.Errorf("call %d: X-Stainless-Retry-Count %q: the SDK retried by itself", i+1, c)
		}
	}
}
