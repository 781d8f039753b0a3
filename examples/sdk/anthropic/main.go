// Command anthropic calls the Claude API through the official Go SDK, paced
// by pacer's Anthropic preset.
//
// The SDK takes an *http.Client with option.WithHTTPClient. It retries 408,
// 409, 429, 529 and 5xx by itself, twice by default; option.WithMaxRetries(0)
// leaves retries to pacer, which spaces them by retry-after, slows the
// whole model class down on 529 "overloaded", never retries a spend-limit
// 429, and counts every attempt against the limits.
//
//	ANTHROPIC_API_KEY=... go run ./anthropic
//
// ANTHROPIC_BASE_URL points it elsewhere (the tests use a local fake).
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/pacer-go/pacer"
	anthropicpreset "github.com/pacer-go/pacer/providers/anthropic"
)

func main() {
	base := os.Getenv("ANTHROPIC_BASE_URL")
	if base == "" {
		base = "https://api.anthropic.com/"
	}
	if err := run(context.Background(), base, os.Getenv("ANTHROPIC_API_KEY"), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, baseURL, key string, out io.Writer) error {
	t := pacer.New(nil, anthropicpreset.Preset(anthropicpreset.Start))
	if err := t.Err(); err != nil {
		return err
	}
	client := anthropic.NewClient(
		option.WithBaseURL(baseURL),
		option.WithAPIKey(key),
		option.WithHTTPClient(t.Client()),
		option.WithMaxRetries(0), // pacer retries, paced; the SDK must not multiply them
	)
	msg, err := client.Messages.New(ctx, anthropic.MessageNewParams{
		Model:     anthropic.ModelClaudeSonnet5_5,
		MaxTokens: 300,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What does a 529 mean?"))},
	})
	if err != nil {
		return err
	}
	for _, block := range msg.Content {
		fmt.Fprintln(out, block.Text)
	}
	fmt.Fprintf(out, "input %d, output %d tokens\n", msg.Usage.InputTokens, msg.Usage.OutputTokens)
	return nil
}
