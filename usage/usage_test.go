package usage

import (
	"bytes"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
)

// The bodies, real-shaped:
//
//   - openai-chat.json, openai-responses.json, openai-responses.sse: the
//     example responses of createChatCompletion and createResponse in
//     github.com/openai/openai-go api_reference/openapi.transformed.yml
//     (commit 4e5a07a6a205), the stream's "..." placeholder removed.
//   - openai-embeddings.json: createEmbedding's example there, its "...."
//     placeholder and trailing comma removed so that it is JSON.
//   - openai-chat.sse: the chat.completion.chunk example there, with
//     stream_options.include_usage as CompletionUsage documents it: "usage"
//     null on every chunk but a last one whose choices are empty.
//   - anthropic-messages.sse: github.com/anthropics/anthropic-sdk-go
//     lib/betafallback/testdata/fallbackstream/fallback-end.sse (commit
//     b43f0d7a327f), a stream as the Messages API sends it.
//   - anthropic-messages.json, anthropic-cache.sse: the same shapes with the
//     cache fields of message.go's Usage, a text that quotes a usage block,
//     two message_delta events and an "iterations" array whose counts differ.
var bodies = []struct {
	file, path, contentType string
	selector                Selector
	want                    Usage
}{
	{"openai-chat.json", "/v1/chat/completions", "application/json", OpenAI,
		Usage{Input: 19, Output: 10}},
	{"openai-chat.sse", "/v1/chat/completions", "text/event-stream; charset=utf-8", OpenAI,
		Usage{Input: 1200 - 1024, CacheRead: 1024, Output: 10}},
	{"openai-responses.json", "/v1/responses", "application/json", OpenAI,
		Usage{Input: 36, Output: 87}},
	{"openai-responses.sse", "/v1/responses", "text/event-stream", OpenAI,
		Usage{Input: 37, Output: 11}},
	{"openai-embeddings.json", "/v1/embeddings", "application/json", OpenAI,
		Usage{Input: 8}},
	{"anthropic-messages.json", "/v1/messages", "application/json", Anthropic,
		Usage{Input: 2095, CacheRead: 10000, CacheWrite: 1000, CacheWrite1h: 2000, Output: 503}},
	{"anthropic-messages.sse", "/v1/messages", "text/event-stream", Anthropic,
		Usage{Input: 31, Output: 547}},
	{"anthropic-cache.sse", "/v1/messages", "text/event-stream", Anthropic,
		Usage{Input: 21, CacheRead: 10000, CacheWrite: 1000, CacheWrite1h: 2000, Output: 89}},
}

func request(path string) *http.Request {
	return &http.Request{Method: http.MethodPost, URL: &url.URL{Path: path}}
}

func response(contentType string) *http.Response {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {contentType}}}
}

func newFor(t testing.TB, i int) Reader {
	t.Helper()
	b := bodies[i]
	r := b.selector(request(b.path), response(b.contentType))
	if r == nil {
		t.Fatalf("%s: no reader", b.file)
	}
	return r
}

func load(t testing.TB, file string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// read feeds body to a new reader in the chunks that cut returns.
func read(t testing.TB, i int, body []byte, cuts []int) (Usage, bool) {
	r := newFor(t, i)
	prev := 0
	for _, c := range cuts {
		r.Observe(body[prev:c])
		prev = c
	}
	r.Observe(body[prev:])
	return r.End()
}

func TestReadsRealBodies(t *testing.T) {
	for i, b := range bodies {
		body := load(t, b.file)
		check := func(how string, cuts []int) {
			t.Helper()
			got, final := read(t, i, body, cuts)
			if !final || got != b.want {
				t.Fatalf("%s %s: got %+v final %v, want %+v final", b.file, how, got, final, b.want)
			}
		}
		check("whole", nil)
		bytewise := make([]int, len(body))
		for k := range bytewise {
			bytewise[k] = k
		}
		check("byte by byte", bytewise)
		for k := range len(body) + 1 {
			check("split in two", []int{k})
		}
		rng := rand.New(rand.NewPCG(1, uint64(i)))
		for range 200 {
			var cuts []int
			for k := rng.IntN(8); k < len(body); k += 1 + rng.IntN(64) {
				cuts = append(cuts, k)
			}
			check("random chunks", cuts)
		}
	}
}

// A body closed early gives either no final usage or the right one — never
// a count cut short — and a final one only once the document carrying it
// has ended.
func TestEarlyClose(t *testing.T) {
	for i, b := range bodies {
		body := load(t, b.file)
		finalFrom := -1
		for n := 0; n <= len(body); n++ {
			got, final := read(t, i, body[:n], nil)
			if final && got != b.want {
				t.Fatalf("%s cut at %d: final %+v, want %+v", b.file, n, got, b.want)
			}
			if final && finalFrom < 0 {
				finalFrom = n
			}
			if !final && finalFrom >= 0 {
				t.Fatalf("%s: final at %d bytes, not at %d", b.file, finalFrom, n)
			}
			if got.Output > b.want.Output || got.InputTotal() > b.want.InputTotal() {
				t.Fatalf("%s cut at %d: %+v exceeds the whole body's %+v", b.file, n, got, b.want)
			}
		}
		// The usage is final once the document that carries it is whole:
		// the closing brace of a JSON body, the blank line after the event
		// with the usage — after message_stop for Anthropic, whose stream
		// may send several running totals.
		marker := []byte(`"usage"`)
		if b.file == "anthropic-messages.sse" || b.file == "anthropic-cache.sse" {
			marker = []byte(`"message_stop"`)
		}
		last := bytes.LastIndex(body, marker)
		if strings.HasSuffix(b.file, ".json") {
			if end := bytes.LastIndexByte(body, '}') + 1; finalFrom != end {
				t.Errorf("%s: final from %d bytes, want %d (the closing brace)", b.file, finalFrom, end)
			}
		} else if end := last + bytes.Index(body[last:], []byte("\n\n")) + 2; finalFrom != end {
			t.Errorf("%s: final from %d bytes, want %d (the blank line after the last event)", b.file, finalFrom, end)
		}
	}
}

// An Anthropic stream closed after message_start has its input but only the
// output counted when it began: not final.
func TestAnthropicStreamClosedBeforeDelta(t *testing.T) {
	body := load(t, "anthropic-cache.sse")
	cut := bytes.Index(body, []byte("event: content_block_start"))
	got, final := read(t, 7, body[:cut], nil)
	want := Usage{Input: 21, CacheRead: 10000, CacheWrite: 1000, CacheWrite1h: 2000, Output: 1}
	if final || got != want {
		t.Errorf("got %+v final %v, want %+v not final", got, final, want)
	}
}

func TestStreamLineEndings(t *testing.T) {
	body := load(t, "openai-chat.sse")
	for _, eol := range []string{"\r\n", "\r"} {
		got, final := read(t, 1, bytes.ReplaceAll(body, []byte("\n"), []byte(eol)), nil)
		if !final || got != bodies[1].want {
			t.Errorf("%q line endings: got %+v final %v", eol, got, final)
		}
	}
	// A document split over several data lines, a comment, an unknown
	// field, and "data:" without its space.
	multi := "retry: 10\n: a comment\nid: 7\ndata:{\"usage\":\ndata: {\"prompt_tokens\": 5,\ndata:\"completion_tokens\":3}}\n\n"
	r := OpenAI(request("/v1/chat/completions"), response("text/event-stream"))
	r.Observe([]byte(multi))
	if got, final := r.End(); !final || got != (Usage{Input: 5, Output: 3}) {
		t.Errorf("multi-line data: got %+v final %v", got, final)
	}
}

// What is not a token count at a usage path is not read.
func TestIgnores(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       Usage
		final      bool
	}{
		{"fraction", `{"usage":{"prompt_tokens":5.5,"completion_tokens":3}}`, Usage{Output: 3}, false},
		{"exponent", `{"usage":{"prompt_tokens":5e3,"completion_tokens":3}}`, Usage{Output: 3}, false},
		{"negative", `{"usage":{"prompt_tokens":-5,"completion_tokens":3}}`, Usage{Output: 3}, false},
		{"too large", `{"usage":{"prompt_tokens":99999999999999999999999,"completion_tokens":3}}`, Usage{Output: 3}, false},
		{"string", `{"usage":{"prompt_tokens":"5","completion_tokens":3}}`, Usage{Output: 3}, false},
		{"in an array", `{"usage":[{"prompt_tokens":5}],"x":{"usage":{"prompt_tokens":6}}}`, Usage{}, false},
		{"escaped key", `{"usage":{"prompt\u005ftokens":5}}`, Usage{}, false},
		{"null", `{"usage":null}`, Usage{}, false},
		{"trailing garbage", `{"usage":{"prompt_tokens":5}} x`, Usage{}, false},
		{"unclosed", `{"usage":{"prompt_tokens":5}`, Usage{}, false},
		{"mismatched", `{"usage":{"prompt_tokens":5]}`, Usage{}, false},
		{"cached more than input", `{"usage":{"prompt_tokens":5,"prompt_tokens_details":{"cached_tokens":9}}}`,
			Usage{CacheRead: 9}, true},
		{"whitespace", " \t\r\n{ \"usage\" : { \"prompt_tokens\" : 5 , \"completion_tokens\" : 3 } } \n",
			Usage{Input: 5, Output: 3}, true},
	} {
		r := OpenAI(request("/v1/chat/completions"), response("application/json"))
		r.Observe([]byte(tc.body))
		if got, final := r.End(); got != tc.want || final != tc.final {
			t.Errorf("%s: got %+v final %v, want %+v final %v", tc.name, got, final, tc.want, tc.final)
		}
	}
}

func TestEndTwiceAndObserveAfterEnd(t *testing.T) {
	r := newFor(t, 0)
	r.Observe(load(t, bodies[0].file))
	first, _ := r.End()
	r.Observe([]byte(`{"usage":{"prompt_tokens":1000}}`))
	if again, final := r.End(); again != first || !final {
		t.Errorf("End again: %+v final %v, want %+v", again, final, first)
	}
}

func TestSelectors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		selector Selector
		method   string
		path     string
		status   int
		header   http.Header
		want     bool
	}{
		{"chat", OpenAI, "POST", "/v1/chat/completions", 200, http.Header{"Content-Type": {"application/json"}}, true},
		{"chat, Azure prefix", OpenAI, "POST", "/openai/deployments/x/chat/completions/", 200, http.Header{"Content-Type": {"Application/JSON; charset=utf-8"}}, true},
		{"responses stream", OpenAI, "POST", "/v1/responses", 200, http.Header{"Content-Type": {"text/event-stream"}}, true},
		{"embeddings", OpenAI, "POST", "/v1/embeddings", 200, http.Header{"Content-Type": {"application/json"}}, true},
		{"legacy completions", OpenAI, "POST", "/v1/completions", 200, http.Header{"Content-Type": {"application/json"}}, true},
		{"models list", OpenAI, "GET", "/v1/models", 200, http.Header{"Content-Type": {"application/json"}}, false},
		{"images", OpenAI, "POST", "/v1/images/generations", 200, http.Header{"Content-Type": {"application/json"}}, false},
		{"rate limited", OpenAI, "POST", "/v1/chat/completions", 429, http.Header{"Content-Type": {"application/json"}}, false},
		{"server error", OpenAI, "POST", "/v1/chat/completions", 500, http.Header{"Content-Type": {"application/json"}}, false},
		{"audio", OpenAI, "POST", "/v1/chat/completions", 200, http.Header{"Content-Type": {"audio/mpeg"}}, false},
		{"no content type", OpenAI, "POST", "/v1/chat/completions", 200, http.Header{}, false},
		{"gzip the caller asked for", OpenAI, "POST", "/v1/chat/completions", 200, http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"gzip"}}, false},
		{"messages", Anthropic, "POST", "/v1/messages", 200, http.Header{"Content-Type": {"application/json"}}, true},
		{"messages stream", Anthropic, "POST", "/v1/messages", 200, http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}}, true},
		{"count tokens", Anthropic, "POST", "/v1/messages/count_tokens", 200, http.Header{"Content-Type": {"application/json"}}, false},
		{"batches", Anthropic, "POST", "/v1/messages/batches", 200, http.Header{"Content-Type": {"application/json"}}, false},
		{"overloaded", Anthropic, "POST", "/v1/messages", 529, http.Header{"Content-Type": {"application/json"}}, false},
	} {
		req := &http.Request{Method: tc.method, URL: &url.URL{Path: tc.path}}
		resp := &http.Response{StatusCode: tc.status, Header: tc.header}
		if got := tc.selector(req, resp) != nil; got != tc.want {
			t.Errorf("%s: reader %v, want %v", tc.name, got, tc.want)
		}
	}
	if OpenAI(nil, nil) != nil || Anthropic(&http.Request{Method: "POST"}, &http.Response{}) != nil {
		t.Error("a nil request, URL or response must select no reader")
	}
}
