package openai_test

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/openai"
)

// answer is an OpenAI response with the per-model headers and no
// project-token ones.
type answer struct{}

func (answer) RoundTrip(req *http.Request) (*http.Response, error) {
	h := http.Header{"Content-Type": {"application/json"},
		"X-Ratelimit-Limit-Requests": {"1000000"}, "X-Ratelimit-Remaining-Requests": {"999999"}, "X-Ratelimit-Reset-Requests": {"1ms"},
		"X-Ratelimit-Limit-Tokens": {"1000000000"}, "X-Ratelimit-Remaining-Tokens": {"999999000"}, "X-Ratelimit-Reset-Tokens": {"1ms"}}
	body := `{"object":"chat.completion","usage":{"prompt_tokens":10,"completion_tokens":20,"total_tokens":30}}`
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// What the project scope costs a call whose responses carry no
// project-token headers: "with" is the preset as it is, "without" the same
// with the charge to the scope dropped. Run both in one binary, so that
// the machine's load falls on both alike.
func BenchmarkProjectScopeIdle(b *testing.B) {
	limits := openai.Limits{Models: map[string]openai.ModelLimits{"gpt-4o": {RPM: 1_000_000, TPM: 1_000_000_000}}}
	dropProject := pacer.WithRoute(func(req *http.Request, charges []pacer.Charge) []pacer.Charge {
		return slices.DeleteFunc(charges, func(c pacer.Charge) bool { return c.Scope == openai.ScopeProjectTokens })
	})
	body := `{"model":"gpt-4o","max_tokens":100,"messages":[{"role":"user","content":"hello"}]}`
	for _, c := range []struct {
		name string
		opts []pacer.Option
	}{{"with", nil}, {"without", []pacer.Option{dropProject}}} {
		b.Run(c.name, func(b *testing.B) {
			tr := pacer.New(answer{}, append([]pacer.Option{openai.PresetLimits(limits)}, c.opts...)...)
			b.ReportAllocs()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, "https://api.openai.com/v1/chat/completions", strings.NewReader(body))
				resp, err := tr.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
