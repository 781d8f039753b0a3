// Command stripe calls Stripe through stripe-go with pacer underneath: the
// stripe preset paces reads and writes, caps calls in flight, and retries.
//
// stripe-go takes an *http.Client through its BackendConfig, its documented
// way to replace the HTTP client. It also retries by itself (two retries by
// default), and pacer retries too: left as they are, each of stripe-go's
// attempts would get pacer's three, up to nine sends for one call. So this
// program turns stripe-go's retries off (MaxNetworkRetries: 0) and lets
// pacer retry, which waits in admission like any call, within a retry
// budget, and keeps stripe-go's Idempotency-Key on every attempt (stripe-go
// sets one on each POST; pacer adds none when one is there).
//
// Usage:
//
//	STRIPE_SECRET_KEY=sk_test_... go run ./stripe [-base-url https://api.stripe.com]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"

	"github.com/pacer-go/pacer"
	pacerstripe "github.com/pacer-go/pacer/providers/stripe"
	"github.com/stripe/stripe-go/v83"
)

func main() {
	baseURL := flag.String("base-url", "https://api.stripe.com", "the Stripe API's base URL")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *baseURL, os.Getenv("STRIPE_SECRET_KEY"), nil); err != nil {
		log.Fatal(err)
	}
}

// run creates a customer and reads it back, sending through base
// (http.DefaultTransport when nil) under pacer.
func run(ctx context.Context, out io.Writer, baseURL, key string, base http.RoundTripper) error {
	mode := pacerstripe.Live
	if strings.Contains(key, "_test_") {
		mode = pacerstripe.Test
	}
	t := pacer.New(base, pacerstripe.Preset(mode))
	if err := t.Err(); err != nil {
		return err
	}
	backends := stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		HTTPClient:        t.Client(),
		MaxNetworkRetries: stripe.Int64(0), // pacer retries; see the package doc
		URL:               stripe.String(baseURL),
	})
	sc := stripe.NewClient(key, stripe.WithBackends(backends))

	created, err := sc.V1Customers.Create(ctx, &stripe.CustomerCreateParams{Email: stripe.String("jenny.rosen@example.com")})
	if err != nil {
		return fmt.Errorf("creating a customer: %w", err)
	}
	fmt.Fprintf(out, "created customer %s (%s mode)\n", created.ID, mode)
	got, err := sc.V1Customers.Retrieve(ctx, created.ID, nil)
	if err != nil {
		return fmt.Errorf("retrieving customer %s: %w", created.ID, err)
	}
	fmt.Fprintf(out, "retrieved customer %s <%s>\n", got.ID, got.Email)
	return nil
}
