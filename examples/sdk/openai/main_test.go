package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// The SDK, wired through pacer with its own retries off, runs against a
// local fake of OpenAI that rate-limits the first call the way OpenAI does:
// pacer retries it once, after the reset, and the SDK never retries.
func TestRunAgainstFakeOpenAI(t *testing.T) {
	var mu sync.Mutex
	var calls []string // each call's X-Stainless-Retry-Count
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls = append(calls, r.Header.Get("X-Stainless-Retry-Count"))
		n := len(calls)
		mu.Unlock()
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("x-ratelimit-limit-requests", "500")
		h.Set("x-ratelimit-limit-tokens", "200000")
		h.Set("x-ratelimit-remaining-tokens", "199000")
		h.Set("x-ratelimit-reset-tokens", "300ms")
		if n == 1 {
			h.Set("x-ratelimit-remaining-requests", "0")
			h.Set("x-ratelimit-reset-requests", "150ms")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"message":"Rate limit reached for gpt-5.4-mini on requests per min (RPM): Limit 500, Used 500, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
			return
		}
		h.Set("x-ratelimit-remaining-requests", "499")
		h.Set("x-ratelimit-reset-requests", "120ms")
		fmt.Fprintf(w, `{"id":"chatcmpl-%d","object":"chat.completion","created":1,"model":"gpt-5.4-mini","choices":[{"index":0,"message":{"role":"assistant","content":"fine"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":1,"total_tokens":13}}`, n)
	}))
	defer srv.Close()

	var out strings.Builder
	if err := run(t.Context(), srv.URL+"/v1/", "sk-test", &out); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 4 {
		t.Errorf("the fake saw %d calls, want 4: three questions and pacer's one retry", len(calls))
	}
	for i, c := range calls {
		if c != "0" {
			t.Errorf("call %d: X-Stainless-Retry-Count %q: the SDK retried by itself", i+1, c)
		}
	}
	if !strings.Contains(out.String(), "scope openai/tokens: 4 admitted") {
		t.Errorf("the calls were not charged to the model's tokens scope:\n%s", out.String())
	}
}
