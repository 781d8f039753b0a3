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
// (ErrThrottled, ErrBudgetExhausted); Example shows all five. The rest —
// scopes and routes, budgets in money (usage/prices), a store shared by a
// fleet (package store), permits for calls that are not HTTP, events and
// metrics (package observe), retries (package retry), classifiers (package
// classify) — is for when that is not enough. Every wait runs on one clock,
// so code that calls through a Transport tests in testing/synctest bubbles.
package pacer

// The path of a request, for those who read the source: Transport's doc
// lists the eight steps of RoundTrip in transport.go, each a file of its
// own: route.go, workload.go, budget.go (with meter.go), admission.go (with
// slots.go), send, learn.go, retry.go and body.go (with settle.go).
// bucket.go is where a bucket's parts meet; errors.go holds every error the
// package returns. Permits take steps 3 and 4 in permit.go; waitqueue.go,
// storeguard.go and the mechanisms' packages under internal/ (queue, slots,
// lease, outputs, storeguard, retryrule, pace) each state their contract in
// their own doc. Stats (stats.go) snapshot the scopes and workloads; their
// forecasts — a budget's spend rate and when it runs out, a scope's backlog
// and when it drains — are computed in forecast.go when Stats are read, and
// when the alerter looks for a budget running out early.
