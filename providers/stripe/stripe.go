// Package stripe is pacer's preset for the Stripe API: its published limits
// in live and test mode, reads and writes in separate buckets, a cap on
// calls in flight, an Idempotency-Key on every POST so that writes can be
// retried, and Stripe-Should-Retry honoured.
//
// The figures were read on 2026-11-30 from Stripe's documentation; each is
// cited beside its constant. Stripe says it may lower them for abuse and
// raise them on request, so every one can be overridden: a WithScope given
// after Preset with the same scope name replaces the preset's.
//
//	t := pacer.New(nil, stripe.Preset(stripe.Live,
//		pacer.WithScope(pacer.Scope{Name: stripe.ScopeWrite, Limit: pacer.PerSecond(50)})))
//
// A key has one limit for all its callers: share one Transport (or a shared
// Store) among everything that uses the same Stripe account and mode.
package stripe

import (
	"net/http"
	"strings"

	"github.com/pacer-go/pacer"
)

// Mode is a Stripe account's mode; live and test mode have separate limits.
type Mode int

const (
	Live Mode = iota // live mode: real payments
	Test             // test mode and sandboxes
)

func (m Mode) String() string {
	if m == Test {
		return "test"
	}
	return "live"
}

// The scopes the preset declares.
const (
	ScopeRead        = "stripe/read"        // GET and HEAD: the basic rate limiter's read operations
	ScopeWrite       = "stripe/write"       // every other method: its write operations
	ScopeFilesRead   = "stripe/files/read"  // reads of the Files API, on top of ScopeRead
	ScopeFilesWrite  = "stripe/files/write" // writes of the Files API, on top of ScopeWrite
	ScopeSearch      = "stripe/search"      // the Search API, on top of ScopeRead
	ScopeConcurrency = "stripe/concurrency" // calls in flight
)

// Stripe's basic rate limiter: "Live mode: 100 read operations and 100 write
// operations" and "Test mode: 25 read operations and 25 write operations",
// per second. https://docs.stripe.com/rate-limits ("Rate limiter").
const (
	liveReadsPerSecond  = 100
	liveWritesPerSecond = 100
	testReadsPerSecond  = 25
	testWritesPerSecond = 25
)

// Stricter limits that "also count against the basic limits" and apply to
// each mode alike: "Files API: 20 read operations and 20 write operations per
// second", "Search API: 20 read operations per second".
// https://docs.stripe.com/rate-limits ("Rate limiter").
const (
	filesReadsPerSecond  = 20
	filesWritesPerSecond = 20
	searchReadsPerSecond = 20
)

// Stripe has a concurrency limiter but publishes no number for it
// (https://docs.stripe.com/rate-limits, "Concurrency limiter"). Its support
// article speaks of "100 parallel requests per second for live mode
// transactions, and 25 parallel requests per second for test mode"
// (https://support.stripe.com/questions/rate-limit-error-when-creating-bulk-api-requests);
// pacer takes those as the caps on calls in flight. Lower them if your calls
// are long (list calls with expansions are the ones Stripe names).
const (
	liveConcurrency = 100
	testConcurrency = 25
)

// Limits returns Stripe's published basic limits for reads and writes in
// mode m.
func Limits(m Mode) (read, write pacer.Limit) {
	if m == Test {
		return pacer.PerSecond(testReadsPerSecond), pacer.PerSecond(testWritesPerSecond)
	}
	return pacer.PerSecond(liveReadsPerSecond), pacer.PerSecond(liveWritesPerSecond)
}

// Concurrency returns the cap on calls in flight the preset uses in mode m.
func Concurrency(m Mode) int {
	if m == Test {
		return testConcurrency
	}
	return liveConcurrency
}

// Preset returns the options for calling Stripe in mode m, followed by
// opts, which override it.
//
// It declares the scopes above and routes every request to them: a GET or
// HEAD to ScopeRead, any other method to ScopeWrite, both also to
// ScopeConcurrency, and calls under /v1/files (or to files.stripe.com) and
// to a /search endpoint also to their stricter scopes. It adds an
// Idempotency-Key to every POST that has none, the same on every attempt,
// as Stripe recommends, so that a POST can be retried; Stripe honours the
// key for 24 hours. Stripe-Should-Retry, which Stripe sends to say whether
// a failed call may be retried, wins over the status (pacer's default
// RetryPolicy reads it).
//
// Stripe sends no rate-limit headers besides a 429: pacer learns from the
// 429s themselves (each one empties the charged buckets and cuts their rate,
// and ScopeConcurrency's cap on calls in flight, until calls succeed again).
//
// If you use stripe-go, turn its own retries off (MaxNetworkRetries: 0) so
// that attempts are not multiplied; see examples/sdk/stripe.
func Preset(m Mode, opts ...pacer.Option) pacer.Option {
	read, write := Limits(m)
	preset := []pacer.Option{
		pacer.WithScope(pacer.Scope{Name: ScopeRead, Limit: read}),
		pacer.WithScope(pacer.Scope{Name: ScopeWrite, Limit: write}),
		pacer.WithScope(pacer.Scope{Name: ScopeFilesRead, Limit: pacer.PerSecond(filesReadsPerSecond)}),
		pacer.WithScope(pacer.Scope{Name: ScopeFilesWrite, Limit: pacer.PerSecond(filesWritesPerSecond)}),
		pacer.WithScope(pacer.Scope{Name: ScopeSearch, Limit: pacer.PerSecond(searchReadsPerSecond)}),
		pacer.WithScope(pacer.Scope{Name: ScopeConcurrency, Concurrency: Concurrency(m)}),
		pacer.WithRoute(Route),
		pacer.WithIdempotencyKey(),
	}
	return pacer.Options(append(preset, opts...)...)
}

// Route charges a request to the Stripe scopes it counts against, in place
// of the charges before it. Preset installs it.
func Route(req *http.Request, charges []pacer.Charge) []pacer.Charge {
	charges = charges[:0]
	reading := req.Method == http.MethodGet || req.Method == http.MethodHead
	if reading {
		charges = append(charges, pacer.Charge{Scope: ScopeRead})
	} else {
		charges = append(charges, pacer.Charge{Scope: ScopeWrite})
	}
	path := req.URL.Path
	switch {
	case req.URL.Hostname() == "files.stripe.com" || path == "/v1/files" || strings.HasPrefix(path, "/v1/files/"):
		if reading {
			charges = append(charges, pacer.Charge{Scope: ScopeFilesRead})
		} else {
			charges = append(charges, pacer.Charge{Scope: ScopeFilesWrite})
		}
	case reading && strings.HasSuffix(path, "/search"):
		charges = append(charges, pacer.Charge{Scope: ScopeSearch})
	}
	return append(charges, pacer.Charge{Scope: ScopeConcurrency})
}
