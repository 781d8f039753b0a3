package openai_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	emu "github.com/pacer-go/pacer/providers/internal/emulator/openai"
)

// fakeOpenAI is an in-memory OpenAI for tests in virtual time. It limits
// each model with two buckets that refill continuously, as OpenAI's headers
// describe them (the reset is the time until the bucket is full again),
// charges each request by its own tokenizer — not the preset's estimate —
// and answers with OpenAI's header family and error bodies.
type fakeOpenAI struct {
	rpm, tpm float64 // the limits of every model

	mu       sync.Mutex
	buckets  map[string]*fakeBuckets
	accepted []fakeCall
	rejected int
	calls    int
	// script, if set, answers call n (from 1) instead of the rate limiter;
	// returning nil falls through to it.
	script func(n int, req *http.Request) *http.Response
}

type fakeCall struct {
	at     time.Time
	model  string
	tokens int64
}

type fakeBuckets struct {
	requests, tokens float64
	at               time.Time
}

func newFakeOpenAI(rpm, tpm int) *fakeOpenAI {
	return &fakeOpenAI{rpm: float64(rpm), tpm: float64(tpm), buckets: map[string]*fakeBuckets{}}
}

func (f *fakeOpenAI) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.script != nil {
		if resp := f.script(f.calls, req); resp != nil {
			return resp, nil
		}
	}
	var fields struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(body, &fields) != nil || fields.Model == "" {
		return fakeResponse(400, nil, `{"error":{"message":"We could not parse the JSON body of your request.","type":"invalid_request_error","param":null,"code":null}}`), nil
	}
	cost := fakeCharge(req.URL.Path, body)
	now := time.Now()
	b := f.buckets[fields.Model]
	if b == nil {
		b = &fakeBuckets{requests: f.rpm, tokens: f.tpm, at: now}
		f.buckets[fields.Model] = b
	}
	elapsed := now.Sub(b.at).Minutes()
	b.requests = min(f.rpm, b.requests+elapsed*f.rpm)
	b.tokens = min(f.tpm, b.tokens+elapsed*f.tpm)
	b.at = now
	if b.requests < 1 || b.tokens < float64(cost) {
		f.rejected++
		kind, limit := "tokens per min (TPM)", f.tpm
		if b.requests < 1 {
			kind, limit = "requests per min (RPM)", f.rpm
		}
		msg := fmt.Sprintf("Rate limit reached for %s in organization org-fake on %s: Limit %.0f, Requested %d.",
			fields.Model, kind, limit, cost)
		return fakeResponse(429, f.headers(b), `{"error":{"message":"`+msg+`","type":"requests","param":null,"code":"rate_limit_exceeded"}}`), nil
	}
	b.requests--
	b.tokens -= float64(cost)
	f.accepted = append(f.accepted, fakeCall{now, fields.Model, cost})
	usage := fmt.Sprintf(`{"id":"chatcmpl-fake","object":"chat.completion","model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":1,"total_tokens":%d}}`,
		fields.Model, cost, cost+1)
	return fakeResponse(200, f.headers(b), usage), nil
}

// headers are OpenAI's rate-limit headers for a model's buckets.
func (f *fakeOpenAI) headers(b *fakeBuckets) http.Header {
	h := http.Header{}
	h.Set("x-ratelimit-limit-requests", strconv.Itoa(int(f.rpm)))
	h.Set("x-ratelimit-limit-tokens", strconv.Itoa(int(f.tpm)))
	h.Set("x-ratelimit-remaining-requests", strconv.Itoa(int(math.Floor(b.requests))))
	h.Set("x-ratelimit-remaining-tokens", strconv.Itoa(int(math.Floor(max(b.tokens, 0)))))
	h.Set("x-ratelimit-reset-requests", untilFull(b.requests, f.rpm).String())
	h.Set("x-ratelimit-reset-tokens", untilFull(b.tokens, f.tpm).String())
	return h
}

func untilFull(level, perMinute float64) time.Duration {
	return time.Duration((perMinute - level) / perMinute * float64(time.Minute)).Round(time.Millisecond)
}

func fakeResponse(status int, h http.Header, body string) *http.Response {
	if h == nil {
		h = http.Header{}
	}
	h.Set("Content-Type", "application/json")
	h.Set("x-request-id", "req_fake")
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Header: h,
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
}

func (f *fakeOpenAI) snapshot() (accepted []fakeCall, rejected, calls int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeCall(nil), f.accepted...), f.rejected, f.calls
}

// fakeCharge is what the fake provider charges a request on its tokens
// limit, by a rule of its own, closer to a real tokenizer than a count of
// characters: a word costs a token per five letters (rounded up), a number
// a token per three digits, a run of other visible characters a token per
// two of them (tokenizers merge common pairs such as `":` and `},`); each
// message costs 3 tokens and a chat reply 3 more (OpenAI's cookbook rule).
// As OpenAI's guide says, the charge is the larger of that input and the
// output reservation (max_tokens, max_completion_tokens or
// max_output_tokens), not their sum.
func fakeCharge(path string, body []byte) int64 {
	input, output := fakeCount(path, body)
	return max(input, output)
}

// fakeCount is a request's input, by the fake's rule, and its output
// reservation.
func fakeCount(path string, body []byte) (input, output int64) {
	var r struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools        json.RawMessage `json:"tools"`
		Instructions string          `json:"instructions"`
		Input        json.RawMessage `json:"input"`
		MaxTokens    int64           `json:"max_tokens"`
		MaxComp      int64           `json:"max_completion_tokens"`
		MaxOut       int64           `json:"max_output_tokens"`
	}
	if json.Unmarshal(body, &r) != nil {
		return 0, 0
	}
	var n int64
	for _, m := range r.Messages {
		n += 3 + fakeTokensOf(m.Content)
	}
	if strings.HasSuffix(path, "/chat/completions") {
		n += 3
	}
	if len(r.Tools) > 0 {
		n += emu.Tokenize(string(r.Tools))
	}
	n += emu.Tokenize(r.Instructions) + fakeTokensOf(r.Input)
	return n, r.MaxTokens + r.MaxComp + r.MaxOut
}

// fakeTokensOf tokenizes a content value: a string, or a list of strings or
// of parts with a "text".
func fakeTokensOf(raw json.RawMessage) int64 {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return emu.Tokenize(s)
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return 0
	}
	var n int64
	for _, item := range list {
		var part struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(item, &s) == nil {
			n += emu.Tokenize(s)
		} else if json.Unmarshal(item, &part) == nil {
			n += emu.Tokenize(part.Text)
		}
	}
	return n
}

// jsonBody marshals v for a request body.
func jsonBody(v any) []byte {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		panic(err)
	}
	return b.Bytes()
}
