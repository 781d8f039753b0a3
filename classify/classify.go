// Package classify is how a provider's rules about its error responses
// reach a pacer Transport: a Func reads an error response and returns a
// Verdict, which says what its status alone does not (the provider is
// shedding load, a quota is spent, the call was never processed, how long
// to wait, which limit was hit). A Transport takes classifiers with
// pacer.WithClassifier(f); the provider presets bring their own.
//
//	tr := pacer.New(nil, pacer.WithClassifier(classify.BackPressure(529)))
//
// The package depends on nothing of pacer's root package.
package classify

import (
	"net/http"
	"time"
)

// A Verdict is what a provider's rules say about an error response beyond
// what its status tells. The zero Verdict says nothing. Verdicts of several
// classifiers combine: a flag set by one is set, the longest Wait wins, the
// first Quota wins, and a verdict that concerns every scope wins over one
// that names some.
type Verdict struct {
	// BackPressure says the provider is shedding load (Anthropic's 529
	// "overloaded", say): pacer slows the scopes down as for a 429, and
	// honours the response's Retry-After.
	BackPressure bool
	// Quota, when not empty, says the response is a spend cap or quota
	// that waiting will not restore ("insufficient_quota"), in the words
	// the caller should read. The call is not retried, the scopes are not
	// paused, and RoundTrip returns a *pacer.QuotaError with this Message
	// instead of the response.
	Quota string
	// NeverProcessed says the provider documents this failure as happening
	// before any processing (Twilio's 20429), so that even a POST without an
	// idempotency key may be sent again.
	NeverProcessed bool
	// Wait, when positive, is how long the provider's documented rules say
	// to wait when the response's headers name no time (GitHub: "wait for at
	// least one minute" after a secondary rate limit without Retry-After).
	// With BackPressure, it pauses the call's scopes as a Retry-After would,
	// and it delays a retry; a Retry-After header wins over it. The
	// Transport's maximum wait caps it.
	Wait time.Duration
	// Scopes, when not empty, names the scopes a rate-limit response
	// concerns, when the provider says which of its limits was hit
	// (WhatsApp's pair rate limit, say): only they are slowed and paused,
	// and the call's other scopes keep their pace. Empty means every scope
	// the call was charged to.
	Scopes []string
}

// A Func reads an error response — its status, headers and the first
// bytes of its body (at most 8 KiB) — and says what it means. It must not
// read resp.Body; the body it is given is a copy, and the response keeps
// every byte for the caller. It is called on the request's goroutine, from
// many goroutines at once.
//
// Pacer waits for those bytes no longer than the request's context allows,
// and at most a second: a server that stalls an error body must not hold
// the call past the point where a plain transport would have returned it.
// A Func then sees no body (nil) and must judge by status and headers.
type Func func(resp *http.Response, body []byte) Verdict

// BackPressure returns a Func that names statuses, beyond 429, that mean
// the provider wants fewer calls: with pacer.WithClassifier, they cut the
// rate as a 429 does, their Retry-After pauses the scopes as a 503's does,
// and they are retried like 429.
func BackPressure(statuses ...int) Func {
	statuses = append([]int(nil), statuses...) // the caller's slice may change
	return func(resp *http.Response, _ []byte) Verdict {
		for _, s := range statuses {
			if resp.StatusCode == s {
				return Verdict{BackPressure: true}
			}
		}
		return Verdict{}
	}
}
