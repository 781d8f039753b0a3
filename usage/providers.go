package usage

// Where OpenAI and Anthropic report usage. Every field name below was read
// on 2026-12-01 from the providers' own API definitions:
//
//   - OpenAI: the OpenAPI description in github.com/openai/openai-go,
//     api_reference/openapi.transformed.yml, and the types generated from it
//     (completion.go CompletionUsage, embedding.go
//     CreateEmbeddingResponseUsage, responses/response.go ResponseUsage and
//     ResponseCompletedEvent), commit 4e5a07a6a205 of 2026-08-21.
//   - Anthropic: github.com/anthropics/anthropic-sdk-go, message.go (Usage,
//     MessageDeltaUsage, CacheCreation) and messageutil.go (how a stream's
//     events accumulate into a Message), commit b43f0d7a327f of 2026-07-23;
//     the stream's shape as in that repository's
//     lib/betafallback/testdata/fallbackstream/fallback-end.sse, and the
//     event flow documented at https://docs.anthropic.com/fr/api/messages-streaming
//     ("un ou plusieurs événements message_delta").

// OpenAI reports one usage object per response:
//
//   - Chat completions and legacy completions, as JSON: "usage" with
//     prompt_tokens, completion_tokens and prompt_tokens_details.cached_tokens
//     and .cache_write_tokens. Streamed, each chunk is an event whose data is
//     a chat.completion.chunk; with stream_options.include_usage, "usage is
//     null except for the last chunk which contains the token usage
//     statistics for the entire request" (CompletionUsage's doc), and "if the
//     stream is interrupted or cancelled, you may not receive the final usage
//     chunk".
//   - Embeddings: "usage" with prompt_tokens (and total_tokens).
//   - Responses, as JSON: "usage" with input_tokens, output_tokens and
//     input_tokens_details.cached_tokens and .cache_write_tokens. Streamed,
//     the events response.completed, response.incomplete and response.failed
//     carry the whole response, its usage at "response.usage"; the earlier
//     response.created and response.in_progress carry "usage": null.
//
// prompt_tokens and input_tokens count the whole input, cached and written
// to the cache included (the Usage API's input_uncached_tokens is the input
// "excluding cache-write tokens", and cached_tokens are the part "retrieved
// from the cache"), so the uncached input is what remains after both.
var openAITree = newTree(map[string]int8{
	"usage.prompt_tokens":                                    slotInput,
	"usage.input_tokens":                                     slotInput,
	"usage.completion_tokens":                                slotOutput,
	"usage.output_tokens":                                    slotOutput,
	"usage.prompt_tokens_details.cached_tokens":              slotCacheRead,
	"usage.prompt_tokens_details.cache_write_tokens":         slotCacheWrite,
	"usage.input_tokens_details.cached_tokens":               slotCacheRead,
	"usage.input_tokens_details.cache_write_tokens":          slotCacheWrite,
	"response.usage.input_tokens":                            slotInput,
	"response.usage.output_tokens":                           slotOutput,
	"response.usage.input_tokens_details.cached_tokens":      slotCacheRead,
	"response.usage.input_tokens_details.cache_write_tokens": slotCacheWrite,
	"object=chat.completion.chunk":                           slotStreaming,
	"type=response.created":                                  slotStreaming,
	"item.type=reasoning":                                    slotHidden,
}, openAIDeltas...)

// The output OpenAI streams, counted for a stream cut before its usage
// (Counter), from the same definitions:
//
//   - chat.completion.chunk: choices[].delta's content, refusal,
//     tool_calls[].function.arguments and the deprecated
//     function_call.arguments; the legacy completions' chunks, choices[].text;
//   - the Responses API's delta events (response.output_text.delta,
//     response.refusal.delta, response.function_call_arguments.delta and
//     the rest): their top-level "delta". The ".done" events and
//     response.completed repeat the text in full under other keys, and are
//     not counted.
//
// A stream is known as OpenAI's by its chunks' object, or by
// response.created, the Responses stream's first event. A Responses
// stream with a reasoning item (an output item of type "reasoning") is
// billed reasoning tokens that it does not stream, at most as a summary:
// its count is not offered. A reasoning model's chat completion streams
// no sign of its reasoning; the caller must know the model (see pacer's
// CallEstimate.HiddenOutput).
var openAIDeltas = []string{
	"choices[].delta.content",
	"choices[].delta.refusal",
	"choices[].delta.tool_calls[].function.arguments",
	"choices[].delta.function_call.arguments",
	"choices[].text",
	"delta",
}

// openAIResult: the usage is final once a usage object gave the input,
// which every one of OpenAI's does (an embedding has no output).
func openAIResult(v *values, _ bool) (Usage, bool) {
	cached := v.n[slotCacheRead]
	written := v.n[slotCacheWrite]
	u := Usage{
		Input:      max(0, v.n[slotInput]-cached-written),
		CacheRead:  cached,
		CacheWrite: written,
		Output:     v.n[slotOutput],
	}
	return u, v.has(slotInput)
}

// Anthropic reports usage in three places:
//
//   - A JSON Message: "usage" with input_tokens (the input neither read
//     from nor written to the cache), cache_read_input_tokens,
//     cache_creation_input_tokens, its breakdown by duration
//     cache_creation.ephemeral_5m_input_tokens and
//     .ephemeral_1h_input_tokens, and output_tokens.
//   - A stream's message_start event: the Message so far at
//     "message.usage", its input final, its output_tokens only what was
//     counted when the stream began.
//   - A stream's message_delta events: "usage" whose counts are
//     cumulative (MessageDeltaUsage: "The cumulative number of output
//     tokens which were used"); each replaces what came before, and its
//     input fields, when present, replace message_start's (messageutil.go).
//     Its "iterations" array repeats the counts per iteration and is not
//     read: nothing under an array is.
//
// A JSON Message's usage is final. A stream's is final once its
// message_stop event came: the stream may send "one or more" message_delta
// events, each a running total, so one is final only when no other can
// follow. A stream closed before then has message_start's input and the
// output counted so far, which End returns as not final.
var anthropicTree = newTree(map[string]int8{
	"usage.input_tokens":                                     slotInput,
	"usage.cache_read_input_tokens":                          slotCacheRead,
	"usage.cache_creation_input_tokens":                      slotCacheWrite,
	"usage.cache_creation.ephemeral_5m_input_tokens":         slotCacheWrite5m,
	"usage.cache_creation.ephemeral_1h_input_tokens":         slotCacheWrite1h,
	"usage.output_tokens":                                    slotOutput,
	"message.usage.input_tokens":                             slotInput,
	"message.usage.cache_read_input_tokens":                  slotCacheRead,
	"message.usage.cache_creation_input_tokens":              slotCacheWrite,
	"message.usage.cache_creation.ephemeral_5m_input_tokens": slotCacheWrite5m,
	"message.usage.cache_creation.ephemeral_1h_input_tokens": slotCacheWrite1h,
	"message.usage.output_tokens":                            slotOutputSoFar,
	"type=message_stop":                                      slotStopped,
	"content_block.type=thinking":                            slotHidden,
	"content_block.data=*":                                   slotHidden,
}, anthropicDeltas...)

// The output Anthropic streams, counted for a stream cut before its
// message_stop (Counter): content_block_delta events' delta.text
// (text_delta), delta.partial_json (input_json_delta, a tool's input) and
// delta.thinking (thinking_delta), as in message.go's delta types. A stream
// is known as Anthropic's by message_start's input. One with a thinking
// block (content_block_start of type "thinking", or "redacted_thinking",
// whose "data" is encrypted) is billed its full thinking, of which the
// Claude 4 models stream a summary: its count is not offered.
var anthropicDeltas = []string{"delta.text", "delta.partial_json", "delta.thinking"}

func anthropicResult(v *values, stream bool) (Usage, bool) {
	written := v.n[slotCacheWrite]
	if !v.has(slotCacheWrite) {
		written = v.n[slotCacheWrite5m] + v.n[slotCacheWrite1h]
	}
	// The 1-hour part is priced apart; cache_creation_input_tokens is the
	// total, and a breakdown that claims more than it is not believed.
	hour := min(v.n[slotCacheWrite1h], written)
	u := Usage{
		Input:        v.n[slotInput],
		CacheRead:    v.n[slotCacheRead],
		CacheWrite:   written - hour,
		CacheWrite1h: hour,
		Output:       v.n[slotOutputSoFar],
	}
	if v.has(slotOutput) {
		u.Output = v.n[slotOutput]
	}
	return u, v.has(slotOutput) && (!stream || v.has(slotStopped))
}
