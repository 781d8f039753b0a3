// Command openai calls the OpenAI API through the official Go SDK, paced by
// pacer's OpenAI preset.
//
// The SDK takes an *http.Client with option.WithHTTPClient; pacer's
// Transport is that client's RoundTripper. The SDK retries by itself too
// (twice by default): option.WithMaxRetries(0) turns that off, so each
// logical call is at most pacer's attempts — paced, within the retry budget,
// honouring x-should-retry — and not the SDK's attempts times pacer's.
//
//	OPENAI_API_KEY=... go run ./openai
//
// OPENAI_BASE_URL points it elsewhere (the tests use a local fake).
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/pacer-go/pacer"
	openaipreset "github.com/pacer-go/pacer/providers/openai"
)

func main() {
	base := os.Getenv("OPENAI_BASE_URL")
	if base == "" {
		base = "https://api.openai.com/v1/"
	}
	if err := run(context.Background(), base, os.Getenv("OPENAI_API_KEY"), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, baseURL, key string, out io.Writer) error {
	t := pacer.New(nil, openaipreset.Preset(openaipreset.Tier1))
	if err := t.Err(); err != nil {
		return err
	}
	client := openai.NewClient(
		option.WithBaseURL(baseURL),
		option.WithAPIKey(key),
		option.WithHTTPClient(t.Client()),
		option.WithMaxRetries(0), // pacer retries, paced; the SDK must not multiply them
	)
	for _, q := range []string{"What is a token bucket?", "What does HTTP 429 mean?", "Why pace API calls?"} {
		resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:               openai.ChatModelGPT5_4Mini,
			Messages:            []openai.ChatCompletionMessageParamUnion{openai.UserMessage(q)},
			MaxCompletionTokens: openai.Int(200),
		})
		if err != nil {
			return fmt.Errorf("%q: %w", q, err)
		}
		fmt.Fprintf(out, "%s -> %s (%d tokens)\n", q, resp.Choices[0].Message.Content, resp.Usage.TotalTokens)
	}
	for _, s := range t.Stats().Scopes {
		if s.Admitted > 0 {
			fmt.Fprintf(out, "scope %s: %d admitted\n", s.Name, s.Admitted)
		}
	}
	return nil
}
