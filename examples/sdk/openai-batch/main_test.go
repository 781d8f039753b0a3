package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	openaipreset "github.com/pacer-go/pacer/providers/openai"
)

// completion answers every call as OpenAI's chat completions endpoint
// would, at once: the test is about pacer's waits, in virtual time.
type completion struct{}

func (completion) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	body := `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-5.4-mini","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}`
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: req}, nil
}

// A backfill of 40 calls at a key's limit of 600 RPM is paced over seconds,
// while the interactive calls made meanwhile are admitted at once.
func TestBackfillDoesNotStarveInteractive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		limits := openaipreset.Limits{Models: map[string]openaipreset.ModelLimits{"gpt-5.4-mini": {RPM: 600, TPM: 1_000_000}}}
		var out strings.Builder
		r, err := run(t.Context(), completion{}, "https://api.openai.test/v1/", "sk-test", limits, 40, 5, &out)
		if err != nil {
			t.Fatal(err)
		}
		t.Log(out.String())
		if r.backfillCalls != 40 {
			t.Errorf("backfill made %d calls, want 40", r.backfillCalls)
		}
		// 600 RPM: a burst of 60, half reserved for interactive; the
		// backfill takes its 30 at once and the rest at most half the
		// rate, 4.5 a second: its last ten take two seconds.
		if r.backfill < time.Second {
			t.Errorf("the backfill finished in %v: it was not paced", r.backfill)
		}
		// In virtual time an interactive call admitted at once takes no
		// time at all: any wait is one the backfill caused.
		if r.slowestInteractive > 0 {
			t.Errorf("an interactive call waited %v behind the backfill", r.slowestInteractive)
		}
	})
}
