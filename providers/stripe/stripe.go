// Package stripe is pacer's preset for the Stripe API: the global limit of
// an account in live mode and in a sandbox, the default limit of each
// endpoint (a scope keyed by endpoint), the stricter limits of the Files
// and Search APIs, an Idempotency-Key on every POST so that writes can be
// retried, and Stripe-Should-Retry honoured.
//
// Last verified: 2026-12-01, against https://docs.stripe.com/rate-limits.
// Figures lists every figure with its source and quote; "pacer presets
// stripe" prints them. Stripe says it may lower them for abuse and raise
// them on request, so every one can be overridden: a WithScope given to
// pacer.New after Preset with the same scope name replaces the preset's.
//
//	t := pacer.New(nil, stripe.Preset(stripe.Live),
//		pacer.WithScope(pacer.Scope{Name: stripe.ScopeGlobal, Limit: pacer.PerSecond(200)}))
//
// A key has one limit for all its callers: share one Transport (or a shared
// Store) among everything that uses the same Stripe account and mode.
//
// # Workloads on one endpoint
//
// Every endpoint has a bucket of its own (25 requests a second), and a
// pacer.Workload's Max is a share of each scope on its own, not of the
// account. A backfill with Max 0.7 that calls one endpoint gets
// 25 × 0.9 (pacer's headroom) × 0.7 ≈ 15.8 requests a second, not the
// 100 × 0.9 × 0.7 = 63 that the live global limit suggests; it reaches 63
// only spread over four endpoints or more. To let a one-endpoint backfill
// go faster, raise its Max, or leave Max unset and give the interactive
// workload a Reserve instead.
package stripe

import (
	"fmt"

	"net/http"
	"strings"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/figures"
	"github.com/pacer-go/pacer/providers/internal/presetopt"
)

// Mode is a Stripe account's mode; live mode and sandboxes have separate
// limits.
type Mode int

const (
	Live Mode = iota // live mode: real payments
	Test             // sandboxes and test mode
)

func (m Mode) String() string {
	if m == Test {
		return "test"
	}
	return "live"
}

// The scopes the preset declares.
const (
	ScopeGlobal     = "stripe/global"      // every request of the account
	ScopeEndpoint   = "stripe/endpoint"    // one bucket per endpoint, keyed by EndpointKey
	ScopeFilesRead  = "stripe/files/read"  // reads of the Files API
	ScopeFilesWrite = "stripe/files/write" // writes of the Files API
	ScopeSearch     = "stripe/search"      // the Search API
)

// The figures, from https://docs.stripe.com/rate-limits, read 2026-12-01.
// Figures quotes each.
const (
	liveGlobalPerSecond    = 100
	sandboxGlobalPerSecond = 25
	endpointPerSecond      = 25
	filesReadsPerSecond    = 20
	filesWritesPerSecond   = 20
	searchReadsPerSecond   = 20
)

// headroom is the share of a limit pacer paces at unless WithHeadroom
// says otherwise, for the figures' notes.
const headroom = 0.9

const (
	ratePage = "https://docs.stripe.com/rate-limits"
	readOn   = "2026-12-01"
)

// Figures returns every figure the preset uses, with its source.
func Figures() []figures.Figure {
	return []figures.Figure{
		{Preset: "stripe live", Name: "global requests", Scope: ScopeGlobal, Value: liveGlobalPerSecond, Unit: "requests/s",
			Source: ratePage + "?locale=en-GB", Read: readOn,
			Quote: "Global API rate limit: Live mode: 100 requests per second",
			Note:  "the page before its rewrite said \"100 read operations and 100 write operations\"; the current page counts all requests together, which the preset follows"},
		{Preset: "stripe test", Name: "global requests", Scope: ScopeGlobal, Value: sandboxGlobalPerSecond, Unit: "requests/s",
			Source: ratePage + "?locale=en-GB", Read: readOn,
			Quote: "Global API rate limit: Sandbox: 25 requests per second"},
		{Preset: "stripe", Name: "requests per endpoint", Scope: ScopeEndpoint, Value: endpointPerSecond, Unit: "requests/s",
			Source: ratePage, Read: readOn,
			Quote: "API endpoints have a default limit of 25 requests per second.",
			Note: "\"Stripe treats each named API operation as a separate endpoint (for example, POST /v1/payment_intents and GET /v1/payment_intents/{id} are separate endpoints). Requests to GET /v1/payment_intents/{id} for different PaymentIntent IDs count towards the same endpoint limit.\" (read in the de-DE and ja-JP copies of the page). " +
				fmt.Sprintf("A workload's Max is a share of each scope on its own: Max 0.7 gives a backfill that calls one endpoint %.1f/s (%d × %v headroom × 0.7), not the %.0f/s that 0.7 of the live global limit suggests",
					endpointPerSecond*headroom*0.7, endpointPerSecond, headroom, liveGlobalPerSecond*headroom*0.7)},
		{Preset: "stripe", Name: "Files API reads", Scope: ScopeFilesRead, Value: filesReadsPerSecond, Unit: "requests/s",
			Source: ratePage + "?locale=ja-JP", Read: readOn,
			Quote: "Files API: 20 read operations and 20 write operations per second (stripe.com/docs/rate-limits); the current table: 1 秒あたり 20 件の読み取りリクエスト"},
		{Preset: "stripe", Name: "Files API writes", Scope: ScopeFilesWrite, Value: filesWritesPerSecond, Unit: "requests/s",
			Source: ratePage + "?locale=ja-JP", Read: readOn,
			Quote: "Files API: 20 read operations and 20 write operations per second (stripe.com/docs/rate-limits); the current table: 1 秒あたり 20 件の書き込みリクエスト"},
		{Preset: "stripe", Name: "Search API reads", Scope: ScopeSearch, Value: searchReadsPerSecond, Unit: "requests/s",
			Source: "https://stripe.com/docs/rate-limits", Read: readOn,
			Quote: "Search API: 20 read operations per second",
			Note:  "the stored copies of the current page cut off before the Search row; the figure is the earlier English page's"},
		{Preset: "stripe", Name: "calls in flight", Unit: "calls",
			Read:       readOn,
			Quote:      "100 parallel requests per second for live mode",
			Unverified: "Stripe has a concurrency limiter but publishes no number for it (docs.stripe.com/rate-limits). The support article's figure is a rate, not a cap on calls in flight: the preset sets no cap",
			Source:     "https://support.stripe.com/questions/rate-limit-error-when-creating-bulk-api-requests"},
	}
}

// Limits returns Stripe's published limits in mode m: the account's global
// limit and the default limit of each endpoint.
func Limits(m Mode) (global, endpoint pacer.Limit) {
	if m == Test {
		return pacer.PerSecond(sandboxGlobalPerSecond), pacer.PerSecond(endpointPerSecond)
	}
	return pacer.PerSecond(liveGlobalPerSecond), pacer.PerSecond(endpointPerSecond)
}

// Preset returns the options for calling Stripe in mode m. Options given
// to pacer.New after it override what it sets. A mode other than Live and
// Test is a configuration error.
//
// It declares the scopes above and routes every request to ScopeGlobal and
// to ScopeEndpoint keyed by its endpoint (see EndpointKey); calls under
// /v1/files (or to files.stripe.com) and to a /search endpoint also to
// their stricter scopes. It adds an Idempotency-Key to every POST that has
// none, the same on every attempt, as Stripe recommends, so that a POST can
// be retried; Stripe honours the key for 24 hours. Stripe-Should-Retry,
// which Stripe sends to say whether a failed call may be retried, wins over
// the status (pacer's default retry.Policy reads it).
//
// Stripe sends no rate-limit headers besides a 429: pacer learns from the
// 429s themselves (each one empties the charged buckets and cuts their
// rate until calls succeed again). Stripe publishes no cap on calls in
// flight; add one with pacer.WithScope if your calls are long (list calls
// with expansions are the ones Stripe names).
//
// If you use stripe-go, turn its own retries off (MaxNetworkRetries: 0) so
// that attempts are not multiplied; see examples/sdk/stripe.
func Preset(m Mode) pacer.Option {
	global, endpoint := Limits(m)
	preset := []pacer.Option{
		pacer.WithScope(pacer.Scope{Name: ScopeGlobal, Limit: global}),
		pacer.WithScope(pacer.Scope{Name: ScopeEndpoint, Limit: endpoint}),
		pacer.WithScope(pacer.Scope{Name: ScopeFilesRead, Limit: pacer.PerSecond(filesReadsPerSecond)}),
		pacer.WithScope(pacer.Scope{Name: ScopeFilesWrite, Limit: pacer.PerSecond(filesWritesPerSecond)}),
		pacer.WithScope(pacer.Scope{Name: ScopeSearch, Limit: pacer.PerSecond(searchReadsPerSecond)}),
		pacer.WithRoute(Route),
		pacer.WithIdempotencyKey(),
	}
	if m != Live && m != Test {
		var errs presetopt.Errors
		errs.Add(fmt.Sprintf("stripe.Preset(%d)", int(m)), fmt.Errorf("no such Mode; use stripe.Live or stripe.Test"))
		preset = append(preset, errs.Options()...)
	}
	return pacer.Options(preset...)
}

// Route charges a request to the Stripe scopes it counts against, in place
// of the charges before it. Preset installs it.
func Route(req *http.Request, charges []pacer.Charge) []pacer.Charge {
	charges = append(charges[:0],
		pacer.Charge{Scope: ScopeGlobal},
		pacer.Charge{Scope: ScopeEndpoint, Key: EndpointKey(req.Method, req.URL.Path)})
	reading := req.Method == http.MethodGet || req.Method == http.MethodHead
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
	return charges
}

// EndpointKey names the endpoint a request counts against: its method and
// its path with every object ID replaced by "{id}", so that
// GET /v1/customers/cus_A and GET /v1/customers/cus_B share a bucket, as
// Stripe counts them, and POST /v1/customers has one of its own.
//
// A path segment is taken for an ID when it holds anything but lowercase
// letters and underscores, as Stripe's generated IDs ("cus_NffrFeUfNV2Hib")
// and most IDs chosen by users ("gold-plan", "25OFF") do. An ID of
// lowercase letters alone (a coupon named "summer") is taken for a
// resource name, and so gets a bucket of its own: the global limit still
// holds for it.
func EndpointKey(method, path string) string {
	var b strings.Builder
	b.Grow(len(method) + 1 + len(path))
	b.WriteString(method)
	b.WriteByte(' ')
	for i, seg := range strings.Split(strings.Trim(path, "/"), "/") {
		b.WriteByte('/')
		if i > 0 && isID(seg) {
			b.WriteString("{id}")
		} else {
			b.WriteString(seg)
		}
	}
	return b.String()
}

func isID(seg string) bool {
	if seg == "" {
		return false
	}
	for i := 0; i < len(seg); i++ {
		if c := seg[i]; c != '_' && (c < 'a' || c > 'z') {
			return true
		}
	}
	return false
}
