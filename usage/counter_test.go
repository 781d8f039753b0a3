package usage

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// streamed reads body through sel's reader for path, in the chunks cuts
// says, and returns what it counted.
func streamed(t *testing.T, sel Selector, path, body string, cuts ...int) (Streamed, bool) {
	t.Helper()
	r := sel(request(path), response("text/event-stream"))
	prev := 0
	for _, c := range cuts {
		r.Observe([]byte(body[prev:c]))
		prev = c
	}
	r.Observe([]byte(body[prev:]))
	if _, final := r.End(); final {
		t.Fatalf("the stream's usage is final: not a cut stream")
	}
	return r.(Counter).Streamed()
}

func chunk(delta string) string {
	return `data: {"id":"c","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}],"usage":null}` + "\n\n"
}

func event(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }

// Each format's deltas are counted: a token per StreamBytesPerToken bytes
// of their text, at least one a delta; text repeated in full by a ".done"
// event or a final response is not counted again.
func TestCounterCountsEachStreamFormat(t *testing.T) {
	long := strings.Repeat("abcdefghij", 30) // 300 bytes in one delta: 100 tokens
	for _, c := range []struct {
		name, path string
		sel        Selector
		body       string
		want       Streamed
	}{
		{"chat completions", "/v1/chat/completions", OpenAI,
			chunk(`{"role":"assistant","content":""}`) + chunk(`{"content":"Hello"}`) + chunk(`{"content":" there"}`) + chunk(`{"content":"`+long+`"}`),
			// "", "Hello", " there", long: 3 deltas, 311 bytes.
			Streamed{Usage: Usage{Output: 104}}},
		{"chat completions, a delta a token", "/v1/chat/completions", OpenAI,
			chunk(`{"content":"a"}`) + chunk(`{"content":"b"}`) + chunk(`{"content":"c"}`) + chunk(`{"content":"d"}`),
			Streamed{Usage: Usage{Output: 4}}},
		{"chat completions, a tool call and a refusal", "/v1/chat/completions", OpenAI,
			chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}`) +
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`) +
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`) +
				chunk(`{"refusal":"No."}`),
			// The name is not output text; the arguments are 8 and 8 bytes
			// (an escape counts as its character), the refusal 3: 19 bytes.
			Streamed{Usage: Usage{Output: 7}}},
		{"legacy completions", "/v1/completions", OpenAI,
			`data: {"id":"c","object":"text_completion","choices":[{"text":"Once upon","index":0}]}` + "\n\n",
			Streamed{Usage: Usage{Output: 3}}},
		{"responses", "/v1/responses", OpenAI,
			event("response.created", `{"type":"response.created","response":{"id":"r","output":[],"text":{"format":{"type":"text"}},"usage":null}}`) +
				event("response.output_item.added", `{"type":"response.output_item.added","output_index":0,"item":{"id":"m","type":"message","content":[]}}`) +
				event("response.output_text.delta", `{"type":"response.output_text.delta","item_id":"m","output_index":0,"content_index":0,"delta":"Hi there"}`) +
				event("response.output_text.delta", `{"type":"response.output_text.delta","item_id":"m","output_index":0,"content_index":0,"delta":", friend"}`) +
				event("response.output_text.done", `{"type":"response.output_text.done","item_id":"m","output_index":0,"content_index":0,"text":"Hi there, friend"}`) +
				event("response.content_part.done", `{"type":"response.content_part.done","part":{"type":"output_text","text":"Hi there, friend"}}`),
			// 16 bytes in 2 deltas; the .done events' repeats are not counted.
			Streamed{Usage: Usage{Output: 6}}},
		{"responses, before any delta", "/v1/responses", OpenAI,
			event("response.created", `{"type":"response.created","response":{"id":"r","usage":null}}`),
			Streamed{}},
		{"anthropic messages", "/v1/messages", Anthropic,
			event("message_start", `{"type":"message_start","message":{"id":"m","usage":{"input_tokens":31,"cache_read_input_tokens":100,"cache_creation_input_tokens":0,"output_tokens":1}}}`) +
				event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`) +
				event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello, how can I help?"}}`) +
				event("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"get_weather","input":{}}}`) +
				event("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Pa"}}`),
			// 22 + 13 bytes: 12 tokens; the input is message_start's.
			Streamed{Usage: Usage{Input: 31, CacheRead: 100, Output: 12}, InputKnown: true}},
		{"anthropic messages, a running total above the count", "/v1/messages", Anthropic,
			event("message_start", `{"type":"message_start","message":{"id":"m","usage":{"input_tokens":31,"output_tokens":1}}}`) +
				event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`) +
				event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":40}}`),
			Streamed{Usage: Usage{Input: 31, Output: 40}, InputKnown: true}},
		{"anthropic messages, before any delta", "/v1/messages", Anthropic,
			event("message_start", `{"type":"message_start","message":{"id":"m","usage":{"input_tokens":31,"output_tokens":1}}}`),
			Streamed{Usage: Usage{Input: 31, Output: 1}, InputKnown: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := streamed(t, c.sel, c.path, c.body)
			if !ok || got != c.want {
				t.Fatalf("Streamed() = %+v, %v; want %+v, true", got, ok, c.want)
			}
			// Split anywhere, across reads, a delta counts the same.
			for n := 1; n < len(c.body); n++ {
				if got, ok := streamed(t, c.sel, c.path, c.body, n); !ok || got != c.want {
					t.Fatalf("split at %d (%q|%q): Streamed() = %+v, %v; want %+v", n, c.body[max(0, n-10):n], c.body[n:min(len(c.body), n+10)], got, ok, c.want)
				}
			}
		})
	}
}

// A delta cut mid-way counts the text that passed: the caller has it.
func TestCounterCountsADeltaCutMidway(t *testing.T) {
	body := chunk(`{"content":"abcdefghijklmnopqrstuvwxyz"}`)
	cut := strings.Index(body, "klm")
	got, ok := streamed(t, OpenAI, "/v1/chat/completions", chunk(`{"content":"a"}`)+body[:cut])
	// "a", a delta, and "abcdefghij" passing: 11 bytes, 4 tokens.
	if want := (Streamed{Usage: Usage{Output: 4}}); !ok || got != want {
		t.Errorf("Streamed() = %+v, %v; want %+v, true", got, ok, want)
	}
}

// No count is offered where the stream may not show what is billed: a JSON
// body, a stream of no event of the provider's, a reasoning item, a
// thinking block; nor once the usage is final.
func TestCounterOffersNoCount(t *testing.T) {
	for _, c := range []struct {
		name, path, contentType string
		sel                     Selector
		body                    string
	}{
		{"a JSON body cut short", "/v1/chat/completions", "application/json", OpenAI,
			`{"id":"c","object":"chat.completion","choices":[{"message":{"content":"Hello`},
		{"an empty stream", "/v1/chat/completions", "text/event-stream", OpenAI, ""},
		{"a stream of someone else's events", "/v1/chat/completions", "text/event-stream", OpenAI,
			event("token", `{"text":"hello","index":3}`)},
		{"a Responses reasoning item", "/v1/responses", "text/event-stream", OpenAI,
			event("response.created", `{"type":"response.created","response":{"usage":null}}`) +
				event("response.output_item.added", `{"type":"response.output_item.added","output_index":0,"item":{"id":"rs","type":"reasoning","summary":[]}}`) +
				event("response.reasoning_summary_text.delta", `{"type":"response.reasoning_summary_text.delta","delta":"Thinking"}`)},
		{"an Anthropic thinking block", "/v1/messages", "text/event-stream", Anthropic,
			event("message_start", `{"type":"message_start","message":{"usage":{"input_tokens":31,"output_tokens":1}}}`) +
				event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`) +
				event("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me"}}`)},
		{"an Anthropic redacted thinking block", "/v1/messages", "text/event-stream", Anthropic,
			event("message_start", `{"type":"message_start","message":{"usage":{"input_tokens":31,"output_tokens":1}}}`) +
				event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"EmwKAhgB"}}`)},
		{"a final usage", "/v1/chat/completions", "text/event-stream", OpenAI,
			chunk(`{"content":"Hi"}`) + `data: {"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1}}` + "\n\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := c.sel(request(c.path), response(c.contentType))
			r.Observe([]byte(c.body))
			if got, ok := r.(Counter).Streamed(); ok {
				t.Errorf("before End: Streamed() = %+v, true; want no count", got)
			}
			r.End()
			if got, ok := r.(Counter).Streamed(); ok {
				t.Errorf("Streamed() = %+v, true; want no count", got)
			}
		})
	}
}

// Garbage never panics and never counts negative, however it is cut; the
// count never falls as more of the stream passes.
func TestCounterGarbage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	valid := []byte(chunk(`{"content":"Hello \"world\" \u00e9"}`) + chunk(`{"tool_calls":[{"function":{"arguments":"{}"}}]}`))
	shapes := [][]byte{
		valid,
		[]byte(`data: {"choices":[[[[{"delta":{"content":"x"}}]]]],"object":"chat.completion.chunk"}` + "\n\n"),
		[]byte(`data: {"choices":[{"delta":{"content":-5}}],"delta":{"a":"b"},"object":"chat.completion.chunk"}` + "\n\n"),
		[]byte(`data: {"choices":{"delta":{"content":"not in an array"}},"object":"chat.completion.chunk"}` + "\n\n"),
		bytes.Repeat([]byte(`data: {"choices":[`), 100),
		[]byte("data: {\"delta\":\"\\"),
	}
	for i := 0; i < 200; i++ {
		b := make([]byte, rng.IntN(400))
		for j := range b {
			b[j] = valid[rng.IntN(len(valid))]
			if rng.IntN(20) == 0 {
				b[j] = byte(rng.IntN(256))
			}
		}
		shapes = append(shapes, b)
	}
	for _, body := range shapes {
		for _, sel := range []Selector{OpenAI, Anthropic} {
			r := selectAny(sel, "text/event-stream").(*reader)
			var last int64
			for p := body; len(p) > 0; {
				n := min(len(p), 1+rng.IntN(17))
				r.Observe(p[:n])
				p = p[n:]
				if got := r.out.tokens(); got < last || got < 0 || r.out.bytes < 0 || r.out.deltas < 0 {
					t.Fatalf("%q: the count went from %d to %d (%+v)", body, last, got, r.out)
				}
				last = r.out.tokens()
			}
			r.End()
			if s, ok := r.Streamed(); ok && (s.Output < 0 || s.Input < 0 || s.CacheRead < 0 || s.CacheWrite < 0 || s.CacheWrite1h < 0) {
				t.Fatalf("%q: negative %+v", body, s)
			}
		}
	}
}
