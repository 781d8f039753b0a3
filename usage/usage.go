package usage

import (
	"net/http"
	"strings"
)

// Usage is what a provider billed one call for, in tokens, in categories
// that do not overlap, so that each is priced once: the input is the sum of
// Input, CacheRead, CacheWrite and CacheWrite1h.
type Usage struct {
	// Input is the input billed at the model's base input rate: neither
	// read from nor written to the prompt cache.
	Input int64
	// CacheRead is the input read from the prompt cache.
	CacheRead int64
	// CacheWrite is the input written to the prompt cache at the default
	// duration (OpenAI's cache; Anthropic's 5-minute cache).
	CacheWrite int64
	// CacheWrite1h is the input written to Anthropic's 1-hour cache.
	CacheWrite1h int64
	// Output is the output, reasoning included: providers bill reasoning
	// as output.
	Output int64
}

// InputTotal is all the input, however it was billed.
func (u Usage) InputTotal() int64 { return u.Input + u.CacheRead + u.CacheWrite + u.CacheWrite1h }

// Total is every token of the call.
func (u Usage) Total() int64 { return u.InputTotal() + u.Output }

// A Reader reads a response body's usage as the body passes to the caller.
//
// Observe is given, in order, every byte the caller reads; it must not
// retain p, modify it, block, or fail — whatever the bytes. End is called
// once the body is finished, read to its end or closed early; it returns the
// usage read and whether it is the provider's final figure. When it is not
// (the body ended before the provider reported, or reported only a part),
// the usage returned is what was read, which may be zero, and the caller
// settles on its own estimate. Observe after End does nothing; End may be
// called again and returns the same.
//
// A Reader is used by one body: Observe and End must not be called
// concurrently.
type Reader interface {
	Observe(p []byte)
	End() (u Usage, final bool)
}

// A Counter is a Reader of an event stream that counts the output it has
// seen pass, for a stream that ends before the provider reports its usage
// (a chat UI's "stop" button closes the body mid-way). The readers of
// OpenAI and Anthropic are Counters.
//
// Streamed, called after End reported no final usage, returns what the
// stream showed: the input the provider reported before its final usage
// (Anthropic's message_start; InputKnown says whether it did, and when it
// did not, the input is zero), and the output counted from the text of the
// deltas that passed (see StreamBytesPerToken), or the provider's running
// count of it if that is larger. It reports false when it has no count
// to offer: the body is not a stream, End has not been called or found a
// final usage, the stream showed no event of its provider's (it may not
// be one), or it showed output it does not stream in full (reasoning:
// OpenAI's Responses reasoning items, Anthropic's thinking blocks, both
// billed beyond the text, if any, that they stream). The count is what
// passed to the caller: what the provider generated but had not yet
// sent is the caller's to add.
type Counter interface {
	Reader
	Streamed() (s Streamed, ok bool)
}

// Streamed is what a stream showed of a call's usage: see Counter.
type Streamed struct {
	Usage
	InputKnown bool
}

// StreamBytesPerToken is how many bytes of a stream's delta text a
// Counter counts as one output token, with at least one token per delta
// that holds any text. Three, where English averages about four characters
// a token in OpenAI's and Anthropic's tokenizers: a character of Chinese,
// Japanese or Korean is three bytes of UTF-8 and about a token, so three
// bytes a token counts those right and English a third high, never low:
// a cut stream's count errs toward charging the budget more, not less.
// A delta is at least a token, as OpenAI sends one per token or so.
const StreamBytesPerToken = 3

// A Selector returns the Reader for a response, or nil when the response
// carries no usage it knows how to read. It runs on every response, before
// the body is handed to the caller, so it must be quick and should not
// allocate when it returns nil. It must not read the body.
type Selector func(req *http.Request, resp *http.Response) Reader

// OpenAI is the Selector for the OpenAI API: a successful POST to chat
// completions, the Responses API, embeddings or the legacy completions,
// answered in JSON or as an event stream, under any path prefix (a proxy's,
// Azure's). A streamed chat completion reports its usage only when the
// request sets stream_options.include_usage; without it, End reports no
// final usage.
func OpenAI(req *http.Request, resp *http.Response) Reader {
	if !succeeded(req, resp) {
		return nil
	}
	p := strings.TrimSuffix(req.URL.Path, "/")
	if !strings.HasSuffix(p, "/chat/completions") && !strings.HasSuffix(p, "/responses") &&
		!strings.HasSuffix(p, "/completions") && !strings.HasSuffix(p, "/embeddings") {
		return nil
	}
	return newReader(resp, openAITree, openAIResult)
}

// Anthropic is the Selector for the Claude API: a successful POST to the
// Messages API (a path ending in "/messages"), answered in JSON or as an
// event stream. Counting tokens and message batches carry no usage to bill.
func Anthropic(req *http.Request, resp *http.Response) Reader {
	if !succeeded(req, resp) {
		return nil
	}
	if !strings.HasSuffix(strings.TrimSuffix(req.URL.Path, "/"), "/messages") {
		return nil
	}
	return newReader(resp, anthropicTree, anthropicResult)
}

// succeeded reports whether resp is a 2xx answer to a POST. A refused call
// (429, 5xx) is not billed by OpenAI or Anthropic, and its body carries no
// usage.
func succeeded(req *http.Request, resp *http.Response) bool {
	return req != nil && req.Method == http.MethodPost && req.URL != nil &&
		resp != nil && resp.StatusCode >= 200 && resp.StatusCode < 300
}

// newReader returns a reader for resp's body if its Content-Type is JSON
// or an event stream, and its body is not compressed — Go's transport
// decompresses the bodies it asked to be compressed, and removes the
// Content-Encoding header; a body the caller asked to be compressed (its
// own Accept-Encoding, a transport with DisableCompression) is passed as
// it is, and not read: compress/gzip pulls its input, so decoding the
// bytes as they pass to the caller would take a goroutine per body, or
// hold the body back, and a Reader neither buffers nor delays. The caller
// of a Selector that returns nil settles the call on its estimate.
func newReader(resp *http.Response, t *tree, result func(*values, bool) (Usage, bool)) Reader {
	if e := resp.Header.Get("Content-Encoding"); e != "" && !strings.EqualFold(e, "identity") {
		return nil
	}
	var stream bool
	switch ct := mediaType(resp.Header.Get("Content-Type")); {
	case strings.EqualFold(ct, "application/json"):
	case strings.EqualFold(ct, "text/event-stream"):
		stream = true
	default:
		return nil
	}
	return &reader{scanner: scanner{tree: t}, stream: stream, result: result}
}

// mediaType returns the media type of a Content-Type value, without its
// parameters, allocating nothing (mime.ParseMediaType allocates).
func mediaType(ct string) string {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.TrimSpace(ct)
}
