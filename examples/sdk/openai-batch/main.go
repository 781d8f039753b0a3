// Command openai-batch shows a backfill and live traffic sharing one OpenAI
// key through one pacer Transport.
//
// Two workloads share the model's scopes: "interactive" reserves half of
// every burst, so a user's call is admitted at once even while the backfill
// runs flat out; "backfill" may use at most half of the rate, and whatever
// the interactive side leaves idle of the burst. Each call says which it
// is with pacer.ContextWithWorkload on its context, which the SDK passes to
// the request.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sync"
	"time"

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
	limits := openaipreset.Tier1.Limits()
	r, err := run(context.Background(), nil, base, os.Getenv("OPENAI_API_KEY"), limits, 200, 10, os.Stdout)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("interactive: slowest %v; backfill: %v for %d calls\n", r.slowestInteractive, r.backfill, r.backfillCalls)
}

type result struct {
	slowestInteractive time.Duration
	backfill           time.Duration
	backfillCalls      int
}

// run sends backfillN backfill calls at once and, meanwhile, interactiveN
// calls a user makes 50 ms apart, through one Transport over base (nil for
// http.DefaultTransport).
func run(ctx context.Context, base http.RoundTripper, baseURL, key string, limits openaipreset.Limits, backfillN, interactiveN int, out io.Writer) (result, error) {
	t := pacer.New(base,
		openaipreset.PresetLimits(limits),
		pacer.WithWorkload("interactive", pacer.Workload{Reserve: 0.5}),
		pacer.WithWorkload("backfill", pacer.Workload{Max: 0.5}),
	)
	if err := t.Err(); err != nil {
		return result{}, err
	}
	client := openai.NewClient(option.WithBaseURL(baseURL), option.WithAPIKey(key),
		option.WithHTTPClient(t.Client()), option.WithMaxRetries(0))
	ask := func(ctx context.Context, q string) error {
		_, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:               openai.ChatModelGPT5_4Mini,
			Messages:            []openai.ChatCompletionMessageParamUnion{openai.UserMessage(q)},
			MaxCompletionTokens: openai.Int(100),
		})
		return err
	}

	var r result
	var wg sync.WaitGroup
	errs := make(chan error, backfillN+interactiveN)
	start := time.Now()
	backfill := pacer.ContextWithWorkload(ctx, "backfill")
	var bmu sync.Mutex
	for i := range backfillN {
		wg.Go(func() {
			if err := ask(backfill, fmt.Sprintf("Summarize record %d.", i)); err != nil {
				errs <- err
				return
			}
			bmu.Lock()
			r.backfillCalls++
			r.backfill = max(r.backfill, time.Since(start))
			bmu.Unlock()
		})
	}
	live := pacer.ContextWithWorkload(ctx, "interactive")
	for i := range interactiveN {
		time.Sleep(50 * time.Millisecond) // users arrive while the backfill runs
		began := time.Now()
		if err := ask(live, fmt.Sprintf("User question %d", i)); err != nil {
			return r, err
		}
		r.slowestInteractive = max(r.slowestInteractive, time.Since(began))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return r, err
	}
	fmt.Fprintf(out, "backfill: %d calls in %v; interactive: slowest %v\n", r.backfillCalls, r.backfill, r.slowestInteractive)
	return r, nil
}
