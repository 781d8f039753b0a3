// Package usage reads what an LLM provider billed a call for — its input,
// cached input and output tokens — from the response body as the body
// passes to the caller.
//
// A Selector looks at a request and its response and returns a Reader for
// the body, or nil. The body's wrapper gives the Reader every byte the
// caller reads, as it reads it, and calls End when the body is finished:
//
//	r := usage.OpenAI(req, resp) // nil: nothing to read, and nothing spent
//	…
//	n, err := body.Read(p)
//	r.Observe(p[:n])
//	…
//	u, final := r.End()
//
// # Contract
//
// A Reader never buffers the body and never delays a byte: Observe looks at
// the bytes the caller already has and returns. Its memory is fixed, under
// 320 bytes, whatever the body holds (a gigabyte of streamed text, a key a
// megabyte long, arrays nested a million deep): it is a state machine that
// keeps the current JSON key (up to 32 bytes; a longer key matches nothing),
// the path of open objects (up to 64 deep; a deeper document is not read),
// the number being read, and the counts found. It allocates nothing after it
// is made, and it never panics, whatever the bytes.
//
// A Selector that returns nil — the request is not a POST to an endpoint it
// knows, the status is not 2xx, the Content-Type is neither
// application/json nor text/event-stream, or the body is compressed (a
// Content-Encoding other than identity: Go's transport decodes the gzip
// it asks for itself, and this reader does not decode) — allocates
// nothing, so a response that is not an LLM's costs nothing but that look
// at its headers. Its caller settles such a call on its own estimate.
//
// Counts are taken only from whole documents: a JSON body read to its
// closing brace, or an event of a stream whose data is a whole JSON document
// and that ended with its blank line. A body cut short therefore never
// yields a count that may have lost digits, nor a total the provider did not
// finish sending; End then reports final false. A stream's reader is also a
// Counter: it counts the output text of the deltas that passed, which the
// caller may settle on (pacer does); else the caller settles on its
// estimate.
//
// # Providers
//
// OpenAI reads the Chat Completions, Responses, Embeddings and legacy
// Completions APIs; Anthropic the Messages API; each both as JSON and as an
// event stream. providers.go says where each reports its usage, and the
// source of every field name. For another provider, write a Reader and a
// Selector of its own.
package usage
