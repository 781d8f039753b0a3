package openai_test

// Realistic requests: the shapes the SDKs send, with text of the lengths
// applications send.

type realistic struct {
	name string
	path string
	body []byte
}

const article = `Rate limits are restrictions that an API imposes on the number of times a user or client can access its services within a specified period of time. They protect the service against abuse, keep access fair when one customer sends far more traffic than the rest, and let the provider manage the load on its infrastructure. A client that ignores them is answered with status 429, and one that retries at once, from every worker, turns a short pause into a long outage. Pacing each call below the published limit costs a few milliseconds of waiting; a storm of rejected calls costs minutes, and on a metered API, money. The limits are counted in requests and in tokens, per minute and per day, per model and per organization, and they rise as the organization's usage grows. Each response says how much is left and when the bucket is full again.`

const goCode = "func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {\n\tif t.err != nil {\n\t\treturn nil, closeRequestBody(req, t.err)\n\t}\n\tif t.retry == nil {\n\t\treturn t.attempt(req, nil)\n\t}\n\treturn t.retry.roundTrip(t, req)\n}\n"

func realisticRequests() []realistic {
	msg := func(role, content string) map[string]any { return map[string]any{"role": role, "content": content} }
	return []realistic{
		{"short question", "/v1/chat/completions", jsonBody(map[string]any{
			"model": "gpt-4o-mini", "max_tokens": 256,
			"messages": []any{
				msg("system", "You are a helpful assistant who answers in one short paragraph."),
				msg("user", "What is the difference between a token bucket and a leaky bucket?"),
			}})},
		{"conversation", "/v1/chat/completions", jsonBody(map[string]any{
			"model": "gpt-4o-mini", "max_completion_tokens": 500,
			"messages": []any{
				msg("system", "You are a support agent for a payments company. Be precise and polite."),
				msg("user", "My card was charged twice for the same order yesterday. Can you help?"),
				msg("assistant", "I am sorry to hear that. Could you give me the order number and the last four digits of the card?"),
				msg("user", "The order is 48213-AB and the card ends in 4421."),
				msg("assistant", "Thank you. I can see two authorizations; one of them is a pending hold that will be released within three business days."),
				msg("user", "Will I get a confirmation when it is released? And can you make sure it does not happen again?"),
			}})},
		{"summary of an article", "/v1/chat/completions", jsonBody(map[string]any{
			"model": "gpt-4o", "max_tokens": 300,
			"messages": []any{
				msg("system", "Summarize the user's text in three bullet points."),
				msg("user", article+"\n\n"+article),
			}})},
		{"code review", "/v1/chat/completions", jsonBody(map[string]any{
			"model": "gpt-4o", "max_tokens": 800, "temperature": 0.2,
			"messages": []any{
				msg("system", "You review Go code for correctness and style. Point out bugs first."),
				msg("user", "Please review this function:\n\n```go\n"+goCode+"```"),
			}})},
		{"content parts", "/v1/chat/completions", jsonBody(map[string]any{
			"model": "gpt-4o-mini", "max_completion_tokens": 400,
			"messages": []any{
				map[string]any{"role": "user", "content": []any{
					map[string]any{"type": "text", "text": "Translate the following paragraph into French, keeping its tone."},
					map[string]any{"type": "text", "text": article},
				}},
			}})},
		{"function calling", "/v1/chat/completions", jsonBody(map[string]any{
			"model": "gpt-4o-mini", "max_tokens": 200,
			"messages": []any{msg("user", "What is the weather like in Paris and in Lyon today, in Celsius?")},
			"tools": []any{map[string]any{"type": "function", "function": map[string]any{
				"name": "get_weather", "description": "Get the current weather in a city",
				"parameters": map[string]any{"type": "object", "properties": map[string]any{
					"city": map[string]any{"type": "string", "description": "The city, e.g. Paris"},
					"unit": map[string]any{"type": "string", "enum": []string{"celsius", "fahrenheit"}},
				}, "required": []string{"city"}},
			}}},
		})},
		{"responses API", "/v1/responses", jsonBody(map[string]any{
			"model": "gpt-4o-mini", "max_output_tokens": 400,
			"instructions": "You are a careful technical writer. Answer with a numbered list.",
			"input":        "Explain how a client should react to HTTP 429 responses from an API that publishes its rate limits in headers.",
		})},
		{"long answer", "/v1/chat/completions", jsonBody(map[string]any{
			"model": "gpt-4o", "max_tokens": 2000,
			"messages": []any{msg("user", "Write a detailed design document for a rate limiter shared by a fleet of servers through Redis.")},
		})},
	}
}
