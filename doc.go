// Package pacer is an http.RoundTripper that calls third-party APIs without
// getting rate-limited, without burning money, and without letting a batch job
// starve interactive traffic.
//
// Wrap any http.Client, or an official SDK's, and every call is paced below
// the provider's published limit, capped in flight, charged to its
// workload's share and budget, informed by the provider's Retry-After and
// RateLimit headers, and retried only when it is safe to send twice.
//
// Most callers need five things: New with the provider's limit (WithLimit,
// or a preset from providers/...), Err to check the configuration when the
// program starts, Client for the *http.Client to use, ContextWithWorkload
// to say which workload a call belongs to, and errors.Is on what comes back
// (ErrThrottled, ErrBudgetExhausted):
//
//	t := pacer.New(nil,
//		pacer.WithLimit(pacer.PerMinute(3500)),
//		pacer.WithConcurrency(50),
//		pacer.WithWorkload("interactive", pacer.Workload{Reserve: 0.3}))
//	if err := t.Err(); err != nil {
//		log.Fatal(err) // a configuration mistake: it never panics
//	}
//	client := t.Client()
//	req, _ := http.NewRequestWithContext(
//		pacer.ContextWithWorkload(ctx, "interactive"), "GET", url, nil)
//	resp, err := client.Do(req)
//	if errors.Is(err, pacer.ErrThrottled) {
//		// not sent: the wait could not end before ctx's deadline
//	}
//
// Everything else is for when that is not enough: scopes and routes
// (WithScope, WithRoute), budgets in money (Budget, usage/prices), a store
// shared by a fleet (WithStore, store/redisstore, store/pgstore), permits
// for calls that are not HTTP (Transport.Acquire), events and metrics
// (WithObserver, package observe), retries (WithRetry, package retry) and
// provider classifiers (package classify). Every wait runs on one clock, so
// code that calls through a Transport tests in testing/synctest bubbles.
//
// # The path of a request
//
// Transport's doc lists the eight steps of RoundTrip in transport.go, each
// a file of its own: route.go, workload.go, budget.go (with meter.go),
// admission.go (with slots.go), send, learn.go, retry.go and body.go (with
// settle.go). bucket.go is where a bucket's parts meet; errors.go holds every
// error the package returns. Permits take steps 3 and 4 in permit.go;
// waitqueue.go, storeguard.go and the mechanisms' packages under internal/
// (queue, slots, lease, outputs, storeguard, retryrule, pace) each state
// their contract in their own doc. Stats (stats.go) snapshot the scopes and
// workloads; their forecasts — a budget's spend rate and when it runs out,
// a scope's backlog and when it drains — are computed in forecast.go when
// Stats are read, and when the alerter looks for a budget running out early.
package pacer
