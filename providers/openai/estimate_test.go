package openai_test

import (
	"math"
	"testing"

	"github.com/pacer-go/pacer/providers/openai"
)

// The estimate is within 20% of what the fake provider charges, by its own
// tokenizer, for every realistic request.
func TestEstimateWithin20PercentOfCharge(t *testing.T) {
	for _, r := range realisticRequests() {
		e, err := openai.EstimateTokens(r.path, r.body, openai.DefaultOutputTokens)
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		charged := fakeCharge(r.path, r.body)
		input, _ := fakeCount(r.path, r.body)
		ratio := float64(e.Total()) / float64(charged)
		t.Logf("%-22s estimate %5d (input %4d) charged %5d (input %4d): total %+5.1f%%, input %+5.1f%%",
			r.name, e.Total(), e.Input, charged, input, 100*(ratio-1),
			100*(float64(e.Input)/float64(input)-1))
		if math.Abs(ratio-1) > 0.2 {
			t.Errorf("%s: estimate %d is %+.1f%% off the %d tokens charged", r.name, e.Total(), 100*(ratio-1), charged)
		}
	}
}

func TestEstimateTokens(t *testing.T) {
	for _, tc := range []struct {
		name, path, body      string
		defaultOut            int64
		model                 string
		wantInput, wantOutput int64
	}{
		{"chat: 16 ASCII chars, one message, priming", "/v1/chat/completions",
			`{"model":"gpt-4o","messages":[{"role":"user","content":"abcdefghijklmnop"}],"max_tokens":10}`, 99, "gpt-4o", 4 + 4 + 3, 10},
		{"chat: default output when none is set", "/v1/chat/completions",
			`{"model":"m","messages":[]}`, 99, "m", 3, 99},
		{"chat: n choices multiply the output", "/v1/chat/completions",
			`{"model":"m","messages":[],"max_completion_tokens":10,"n":3}`, 0, "m", 3, 30},
		{"chat: an image is a flat cost, its URL is not text", "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}],"max_tokens":1}`, 0, "m", 4 + 765 + 3, 1},
		{"chat: non-ASCII characters count one each", "/v1/chat/completions",
			`{"model":"m","messages":[{"role":"user","content":"日本語"}],"max_tokens":1}`, 0, "m", 3 + 4 + 3, 1},
		{"legacy completions default to 16", "/v1/completions",
			`{"model":"gpt-3.5-turbo-instruct","prompt":"abcd"}`, 99, "gpt-3.5-turbo-instruct", 1, 16},
		{"embeddings: strings and token ids, no output", "/v1/embeddings",
			`{"model":"text-embedding-3-small","input":["abcdefgh",[1,2,3]]}`, 99, "text-embedding-3-small", 2 + 3, 0},
		{"responses: instructions, items and max_output_tokens", "/v1/responses",
			`{"model":"m","instructions":"abcd","input":[{"role":"user","content":"abcd"}],"max_output_tokens":7}`, 99, "m", 2 + 4, 7},
		{"a path under a prefix", "/openai/v1/chat/completions",
			`{"model":"m","messages":[],"max_tokens":1}`, 0, "m", 3, 1},
	} {
		e, err := openai.EstimateTokens(tc.path, []byte(tc.body), tc.defaultOut)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if e.Model != tc.model || e.Input != tc.wantInput || e.Output != tc.wantOutput {
			t.Errorf("%s: got %+v, want model %q input %d output %d", tc.name, e, tc.model, tc.wantInput, tc.wantOutput)
		}
	}
}

func TestEstimateTokensRefusesWhatItCannotRead(t *testing.T) {
	if _, err := openai.EstimateTokens("/v1/chat/completions", []byte(`[1,2]`), 0); err == nil {
		t.Error("a body that is not a JSON object: no error")
	}
	if _, err := openai.EstimateTokens("/v1/files", []byte(`{}`), 0); err == nil {
		t.Error("a path that is not charged in tokens: no error")
	}
	// Odd but valid JSON never panics and never goes negative.
	for _, body := range []string{`{}`, `{"messages":null,"max_tokens":-5,"n":1e9}`, `{"messages":[1,"x",null,{"content":{"a":[true]}}]}`} {
		e, err := openai.EstimateTokens("/v1/chat/completions", []byte(body), 10)
		if err != nil || e.Input < 0 || e.Output < 0 {
			t.Errorf("%s: %+v, %v", body, e, err)
		}
	}
}
