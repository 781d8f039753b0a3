package openai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"
)

// An Estimate is what a request will cost on OpenAI's tokens-per-minute
// limit before it runs.
type Estimate struct {
	Model  string // the body's "model", as sent
	Input  int64  // the prompt, estimated from its text
	Output int64  // the output reserved: max tokens times the choices asked for
}

// Total is the request's charge on the tokens scopes: the larger of its
// input and its output reservation, not their sum. OpenAI's rate-limits
// guide, "Reduce the max_tokens to match the size of your completions"
// (https://developers.openai.com/api/docs/guides/rate-limits, read
// 2026-12-01 in the mirror
// https://github.com/crasuna/openai-dev-docs-cn-mirror/blob/a86c1ba4443e6f6a6e218d314f19ac54428392ce/sources/en/api/docs/guides/rate-limits.md,
// the page as developers.openai.com served it on 2026-06-27): "Your rate
// limit is calculated as the maximum of `max_tokens` and the estimated
// number of tokens based on the character count of your request. Try to
// set the `max_tokens` value as close to your expected response size as
// possible." Budgets are billed, not rate-limited: they count Input and
// Output both (see the Meter).
func (e Estimate) Total() int64 { return max(e.Input, e.Output) }

// The estimate's constants. OpenAI's tokenizers average about four
// characters of English per token; text in other scripts takes about a
// token per character, so a non-ASCII character is counted as one token, an
// overestimate for accented Latin that errs on the safe side.
const (
	charsPerToken = 4
	// messageOverhead is what each message or input item adds for its role
	// and delimiters, and replyPriming what every chat reply adds, per the
	// counting rule of OpenAI's cookbook ("How to count tokens with
	// tiktoken").
	messageOverhead = 4
	replyPriming    = 3
	// imageTokens is the cost of one image at detail "high" for a
	// 1024×1024 image: 85 base tokens plus 4 tiles of 170.
	// https://platform.openai.com/docs/guides/images-vision#calculating-costs
	imageTokens = 765
	// legacyMaxTokens is the legacy Completions API's default max_tokens.
	// https://platform.openai.com/docs/api-reference/completions/create
	legacyMaxTokens = 16
)

// Endpoint kinds the estimate understands.
type endpoint int

const (
	notCharged endpoint = iota
	chatCompletions
	responses
	completions
	embeddings
)

// endpointOf tells which token-counted endpoint a request calls. The path
// may have a prefix (a proxy's, or Azure's "/openai/deployments/x").
// A nil request (one a caller passes to the Meter itself) calls none.
func endpointOf(req *http.Request) endpoint {
	if req == nil || req.Method != http.MethodPost || req.URL == nil {
		return notCharged
	}
	p := strings.TrimSuffix(req.URL.Path, "/")
	switch {
	case strings.HasSuffix(p, "/chat/completions"):
		return chatCompletions
	case strings.HasSuffix(p, "/responses"):
		return responses
	case strings.HasSuffix(p, "/completions"):
		return completions
	case strings.HasSuffix(p, "/embeddings"):
		return embeddings
	}
	return notCharged
}

// EstimateTokens estimates what a request to path (such as
// "/v1/chat/completions") with the JSON body will be charged on OpenAI's
// tokens-per-minute limit, the larger of the two (Estimate.Total):
//
//   - input: a token per four ASCII characters and per other character of
//     the text it carries (message contents, instructions, prompts, tool
//     arguments and definitions), plus 4 tokens per message or input item,
//     3 for the reply of a chat completion, and 765 per image;
//   - output: max_completion_tokens, max_tokens or max_output_tokens, times
//     n; defaultOutput when the request sets none (16 for the legacy
//     Completions API, its documented default; nothing for embeddings).
//
// It returns an error for a body that is not a JSON object, or a path it
// does not know.
func EstimateTokens(path string, body []byte, defaultOutput int64) (Estimate, error) {
	kind := endpointOf(&http.Request{Method: http.MethodPost, URL: &url.URL{Path: path}})
	if kind == notCharged {
		return Estimate{}, fmt.Errorf("openai: %q is not an endpoint charged in tokens", path)
	}
	return estimate(kind, body, defaultOutput)
}

func estimate(kind endpoint, body []byte, defaultOutput int64) (Estimate, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return Estimate{}, fmt.Errorf("openai: the request body is not a JSON object: %w", err)
	}
	var e Estimate
	_ = json.Unmarshal(fields["model"], &e.Model)

	var t text
	switch kind {
	case chatCompletions:
		t.items(fields["messages"])
		t.raw(fields["tools"], fields["functions"], fields["response_format"])
		t.tokens += replyPriming
	case responses:
		t.value(fields["instructions"], "")
		if !t.items(fields["input"]) {
			t.value(fields["input"], "")
		}
		t.raw(fields["tools"], fields["text"])
	case completions:
		t.value(fields["prompt"], "")
		t.raw(fields["suffix"])
		defaultOutput = legacyMaxTokens
	case embeddings:
		t.embeddingInput(fields["input"])
		defaultOutput = 0
	}
	e.Input = t.total()

	e.Output = defaultOutput
	for _, k := range []string{"max_completion_tokens", "max_tokens", "max_output_tokens"} {
		var n int64
		if json.Unmarshal(fields[k], &n) == nil && n > 0 {
			e.Output = n
			break
		}
	}
	choices := int64(1)
	for _, k := range []string{"n", "best_of"} {
		var n int64
		if json.Unmarshal(fields[k], &n) == nil && n > choices && n <= 128 {
			choices = n
		}
	}
	e.Output *= choices
	return e, nil
}

// text accumulates the text of a request and the flat costs beside it.
type text struct {
	ascii, other int64 // characters
	tokens       int64 // flat costs: message overheads, images, token arrays
}

func (t *text) total() int64 {
	return (t.ascii+charsPerToken-1)/charsPerToken + t.other + t.tokens
}

func (t *text) add(s string) {
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			t.ascii++
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		t.other++
		i += size
	}
}

// items counts a list of messages or input items, with their overhead. It
// reports false when raw is not a list.
func (t *text) items(raw json.RawMessage) bool {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return false
	}
	for _, item := range list {
		t.tokens += messageOverhead
		t.value(item, "")
	}
	return true
}

// raw counts JSON that the model reads as it is — tool definitions, JSON
// schemas — by its length.
func (t *text) raw(parts ...json.RawMessage) {
	for _, p := range parts {
		if len(p) > 0 && string(p) != "null" {
			t.add(string(p))
		}
	}
}

// Keys whose string values are structure, not text the model reads, and
// the content types that are images.
var (
	structuralKeys = map[string]bool{"role": true, "type": true, "id": true, "call_id": true,
		"tool_call_id": true, "detail": true, "status": true, "format": true, "file_id": true}
	imageTypes = map[string]bool{"image_url": true, "input_image": true, "image": true}
)

// value counts the text of a decoded JSON value found under key.
func (t *text) value(raw json.RawMessage, key string) {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return
	}
	t.walk(v, key)
}

func (t *text) walk(v any, key string) {
	switch v := v.(type) {
	case string:
		if !structuralKeys[key] {
			t.add(v)
		}
	case []any:
		for _, x := range v {
			t.walk(x, key)
		}
	case map[string]any:
		if typ, _ := v["type"].(string); imageTypes[typ] {
			t.tokens += imageTokens
			return
		}
		for k, x := range v {
			t.walk(x, k)
		}
	}
}

// embeddingInput counts an embeddings input: a string, a list of strings,
// a list of token ids, or a list of such lists.
func (t *text) embeddingInput(raw json.RawMessage) {
	var ids []json.RawMessage
	if json.Unmarshal(raw, &ids) == nil {
		for _, x := range ids {
			var n float64
			if json.Unmarshal(x, &n) == nil {
				t.tokens++ // a token id
				continue
			}
			t.embeddingInput(x)
		}
		return
	}
	t.value(raw, "")
}
