package stripe_test

import (
	"fmt"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/stripe"
)

func Example() {
	// One Transport per Stripe account and mode, shared by every caller.
	// Preset takes Stripe's own settings only, as every provider's does;
	// pacer's options go to pacer.New beside it, and one given after the
	// preset wins, so pacer.New is the one place to configure the
	// Transport.
	t := pacer.New(nil, stripe.Preset(stripe.Live),
		// An account with a raised global limit overrides the preset's.
		pacer.WithScope(pacer.Scope{Name: stripe.ScopeGlobal, Limit: pacer.PerSecond(200)}),
	)
	if err := t.Err(); err != nil {
		panic(err)
	}
	client := t.Client() // pass to stripe.NewBackends(client) with stripe-go
	_ = client

	global, endpoint := stripe.Limits(stripe.Live)
	fmt.Println("live mode:", global, "in all,", endpoint, "per endpoint")
	// Output: live mode: 100/1s in all, 25/1s per endpoint
}
