// Package pacer is an http.RoundTripper that calls third-party APIs without
// getting rate-limited, without burning money, and without letting a batch job
// starve interactive traffic.
//
// # Sharing buckets across a fleet
//
// Each Transport keeps its buckets in memory unless given a Store: N
// instances of a service, each paced to the provider's limit, then send N
// times that limit. With a shared store they pace against one bucket:
//
//	t := pacer.New(nil, pacer.WithLimit(pacer.PerSecond(100)),
//		pacer.WithStore(redisstore.New(rdb)),   // or pgstore.New(pool)
//		pacer.WithStoreFailure(pacer.FallBackLocal(10)), // 10 instances
//		pacer.WithAdaptiveLease(16))
//
// Packages store/redisstore and store/pgstore are the shared stores; package
// storetest is the conformance suite every Store passes, so all of them pace
// alike. WithStoreFailure chooses what happens while the store is down (fail
// open, fail closed, or pace locally at 1/N of the limit, the default with
// N = 1); WithStoreTimeout bounds each call. WithLease and
// WithAdaptiveLease trade a bounded overshoot (k units per instance) for
// fewer round trips; BENCHMARKS.md has the figures.
package pacer
