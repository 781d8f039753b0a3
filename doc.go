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
// Everything else is for when that is not enough: more scopes and routes,
// budgets in money, a store shared by a fleet, permits for calls that are
// not HTTP, observers and metrics.
//
// # The path of a request
//
// RoundTrip, in transport.go, takes each request through the same steps:
// route it to the scopes it is charged to and its cost on each (route.go,
// scope.go); read its workload from the context (workload.go); spend the
// workload's budget (budget.go, whose meter learns what each model's calls
// produce in internal/outputs); admit it — a concurrency slot and tokens on
// every scope, all or none, higher-reserve workloads first, failing at once
// when the wait cannot end before the context's deadline (admission.go,
// waitqueue.go with package internal/queue, concurrency.go with package
// internal/slots); send it; learn from the response's headers
// (adaptive.go, with package ratelimitheader, and the provider's
// classifiers: classify.go, with package classify); retry it if that is
// safe (retry.go, with package retry); and hand back the response with its body wrapped, so the
// call's slot is released exactly once, when the body is closed or read to
// its end. A pooled call carries the request through (call.go).
//
// # Calls that are not HTTP
//
// Acquire, TryAcquire and Reserve (permit.go) admit a call charged as
// given through the same steps 3 and 4 (call.enter, admission.go), so a
// permit and a request share limits and cannot drift apart; the permit's
// end (Accept, Reject, Drop) goes through the same learning as a response,
// and releases its slots once. The grpc module's interceptors are built on it.
// Inside a workload, calls are ordered by priority (Call.Priority),
// then by their tenant's fair-queuing tag (tenant.go names the tenant,
// internal/queue tags it), then by arrival; Workload.MaxWaiting bounds the
// waiting (internal/queue again). SetLimit and
// SetWorkload change limits and shares at runtime (livelimit.go), and
// store.Policy.LimitSync carries a SetLimit, and a cut a refusal makes, to
// the fleet (limitsync.go).
//
// # Watching it work
//
// What a Transport does is told as events, in the vocabulary of package
// observe (Event, its kinds, Observer, Func, the Origin values, Alert),
// which imports nothing of pacer's. The root keeps only the options that
// take them: WithObserver (observer.go, where emit calls each observer on
// the request's goroutine) and WithAlerts (alerts.go, which folds throttled
// calls into one observe.Alert per interval for the fleet). Stats
// (stats.go) snapshot the scopes and workloads; their forecasts — a
// budget's spend rate and when it runs out, a scope's backlog and when it
// drains — are computed in forecast.go when Stats are read, and when the
// alerter looks for a budget running out early. The adapters observe/slog,
// observe/prometheus and observe/otel are observers.
//
// # Retries and classifiers
//
// Two other vocabularies live in packages of their own, which import
// nothing of pacer's either. Package retry holds what tunes retries
// (Policy, Budget) and what a retried call returns (Error,
// ErrAttemptTimeout); the root keeps WithRetry and WithoutRetry, and
// retry.go keeps the loop and the replay of bodies. The rule deciding
// between attempts lives in internal/retryrule, so that retry.Policy's
// Retryable and the loop apply the same one; the root's
// ErrBudgetExhausted is its sentinel, and a *QuotaError matches its
// ErrSpentQuota. Package classify holds what a provider preset implements:
// Func, the Verdict it returns, and BackPressure; the root keeps
// WithClassifier, and classify.go reads the error body for them and
// combines their verdicts.
//
// # Time
//
// Every wait goes through one clock (internal/clock), and a request's
// deadline is compared on it too, so that tests and the simulator run in
// virtual time. Callers test their own code in testing/synctest bubbles,
// which need no clock of pacer's.
//
// # Sharing buckets across a fleet
//
// Each Transport keeps its buckets in memory unless given a Store: N
// instances of a service, each paced to the provider's limit, then send N
// times that limit. With a shared store they pace against one bucket:
//
//	t := pacer.New(nil, pacer.WithLimit(pacer.PerSecond(100)),
//		pacer.WithStore(redisstore.New(rdb), // or pgstore.New(pool)
//			store.Policy{Instances: 10, Lease: 16, AdaptiveLease: true}))
//
// Packages store/redisstore and store/pgstore are the shared stores; package
// store holds the interface they implement and its contract, and package
// storetest is the conformance suite every store passes, so all of them pace
// alike. A store.Policy, whose zero value is the default, says how a
// Transport uses its store: OnFailure chooses what happens while the store
// is down (fail open, fail closed, or pace locally at 1/Instances of the
// limit, the default with one instance); Timeout bounds each call; Lease
// and AdaptiveLease (internal/lease) trade a bounded overshoot (Lease units per instance)
// for fewer round trips, BENCHMARKS.md has the figures. A refusal that cuts a
// shared scope's pace is measured as the share of the instance's calls
// the provider accepted, and with Policy.LimitSync the whole fleet climbs back
// from it together; without it, each instance learns it on its own. A
// provider's remaining count is measured against what the whole fleet took
// from the shared bucket, which the store reports with each take
// (store.Decision.Taken), so a fleet paces at the edge of the provider's
// limit as one process does; a lease takes in batches and reports no such
// total, and a fleet on one keeps its blind pace behind a remaining count.
//
// Between a Transport and a shared store stands internal/storeguard
// (storeguard.go is the seam): it applies the Policy's failure mode,
// bounds each call, sends the writes nobody waits for (clamps, refunds,
// settlements) in the background, which Flush waits for (flush.go), and
// keeps this process's own count of each budget, so that a budget holds
// across an outage. Every error the root returns is declared in errors.go.
package pacer
