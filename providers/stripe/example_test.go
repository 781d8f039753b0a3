package stripe_test

import (
	"fmt"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/stripe"
)

func Example() {
	// One Transport per Stripe account and mode, shared by every caller.
	t := pacer.New(nil, stripe.Preset(stripe.Live,
		// An account with a raised write limit overrides the preset's.
		pacer.WithScope(pacer.Scope{Name: stripe.ScopeWrite, Limit: pacer.PerSecond(200)}),
	))
	if err := t.Err(); err != nil {
		panic(err)
	}
	client := t.Client() // pass to stripe.NewBackends(client) with stripe-go
	_ = client

	read, write := stripe.Limits(stripe.Test)
	fmt.Println("test mode:", read, "reads,", write, "writes,", stripe.Concurrency(stripe.Test), "in flight")
	// Output: test mode: 25/1s reads, 25/1s writes, 25 in flight
}
