package usage

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unsafe"
)

// readerBytes is the bound on a reader's memory that the package doc
// states. A reader has no slice, map or pointer it grows: its size is its
// memory, whatever it reads.
const readerBytes = 320

func TestReaderSize(t *testing.T) {
	if n := unsafe.Sizeof(reader{}); n > readerBytes {
		t.Errorf("a reader is %d bytes, over the %d the package doc states", n, readerBytes)
	}
}

// hostile returns n bytes of each shape that could make a reader that
// buffers grow: a string, a key, a line, nesting, numbers.
func hostile(n int) map[string][]byte {
	return map[string][]byte{
		"a huge string":  []byte(`{"choices":[{"delta":{"content":"` + strings.Repeat("ab\\\"c", n/5) + `"}}],"usage":{"prompt_tokens":3}}`),
		"a huge key":     []byte(`{"` + strings.Repeat("k", n) + `":1,"usage":{"prompt_tokens":3}}`),
		"deep nesting":   bytes.Repeat([]byte(`{"usage":[`), n/10),
		"a huge number":  []byte(`{"usage":{"prompt_tokens":` + strings.Repeat("9", n) + `}}`),
		"a huge line":    []byte("data: " + strings.Repeat("x", n)),
		"a huge field":   []byte(strings.Repeat("d", n) + ": {}\n\n"),
		"many events":    bytes.Repeat([]byte("data: {\"usage\":{\"prompt_tokens\":3}}\n\n"), n/36),
		"a huge comment": []byte(":" + strings.Repeat(" ", n)),
	}
}

// Whatever it reads, a reader allocates nothing once made: its memory holds
// at its size.
func TestObserveAllocatesNothing(t *testing.T) {
	for name, body := range hostile(8 << 20) {
		for _, ct := range []string{"application/json", "text/event-stream"} {
			r := OpenAI(request("/v1/chat/completions"), response(ct))
			allocs := testing.AllocsPerRun(1, func() {
				for p := body; len(p) > 0; p = p[min(len(p), 4096):] {
					r.Observe(p[:min(len(p), 4096)])
				}
				r.End()
			})
			if allocs != 0 {
				t.Errorf("%s as %s: %v allocations", name, ct, allocs)
			}
		}
	}
}

// A response that is not JSON or SSE from a known endpoint costs no
// allocation to pass over.
func TestSelectNothingAllocatesNothing(t *testing.T) {
	get := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/v1/models"}}
	post := request("/v1/chat/completions")
	messages := request("/v1/messages")
	image := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"image/png"}}}
	html := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}}}
	limited := &http.Response{StatusCode: 429, Header: http.Header{"Content-Type": {"application/json"}}}
	json := response("application/json")
	allocs := testing.AllocsPerRun(1000, func() {
		for _, sel := range []Selector{OpenAI, Anthropic} {
			if sel(get, json) != nil || sel(post, image) != nil || sel(messages, html) != nil ||
				sel(post, limited) != nil {
				t.Fatal("selected a reader")
			}
		}
		if OpenAI(messages, json) != nil || Anthropic(post, json) != nil {
			t.Fatal("selected a reader")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations to select no reader, want 0", allocs)
	}
}

// Reading a streamed completion costs one allocation, the reader, and a few
// nanoseconds a byte.
func BenchmarkObserveStream(b *testing.B) {
	body := load(b, "anthropic-messages.sse")
	req, resp := request("/v1/messages"), response("text/event-stream")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		r := Anthropic(req, resp)
		r.Observe(body)
		r.End()
	}
}
