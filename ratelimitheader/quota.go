// Package ratelimitheader reads the rate-limit headers of an HTTP response:
// RetryAfter the wait a server asks for (Retry-After and its variants),
// ParseQuotas the quotas it describes, in every family pacer knows (the IETF
// RateLimit fields, OpenAI, X-RateLimit-*, Anthropic, Shopify; a file
// each), ParseUnified Anthropic's unified windows (5-hour, weekly), which
// report a share used rather than a count, and Present whether there is
// anything to parse at all.
//
// It depends on nothing in pacer, keeps no state and never panics; pacer's
// Transport learns from every response through it, and cmd/pacer probe and
// retryableinterop use it on their own. Values are checked, never trusted:
// counts that are negative or unparsable read as "not said", durations are
// clamped to [0, one year].
package ratelimitheader

import (
	"net/http"
	"strings"
	"time"
)

// Quota is one rate limit as a response's headers describe it: how much of
// something the client may spend, how much is left, and when more comes.
// Fields the headers do not state keep their "not said" values, so a Quota
// never claims more than the server did.
type Quota struct {
	Name      string        // the policy's name ("" when the headers give none)
	Unit      string        // "requests", "tokens", "content-bytes", "concurrent-requests", or a provider's narrower word containing one of them, e.g. "input-tokens"
	Limit     int64         // -1 when the headers do not say
	Remaining int64         // -1 when the headers do not say
	Window    time.Duration // 0 when the headers do not say
	Reset     time.Duration // time until more quota is available; 0 when not said, or when it is now
	HasReset  bool          // the headers gave a reset: tells a Reset of 0 that means now from one not said
}

// maxQuotas bounds what ParseQuotas returns, however many policies a
// response lists: a header with a hundred thousand list members yields at
// most this many quotas. Real APIs send one to four.
const maxQuotas = 16

// maxStructuredFieldLen is the longest structured field (all its lines
// together) that ParseQuotas will hand to the structured-field parser.
// Longer fields are ignored as malformed, so that the work and memory spent
// on one response stay bounded; sixteen policies fit in well under 1 KiB.
const maxStructuredFieldLen = 8 << 10

// A reset written as a plain number is read as delta seconds below
// epochSecondsThreshold (1e9 seconds is almost 32 years, and 1e9 as a Unix
// time is September 2001), as Unix seconds from there, and as Unix
// milliseconds from epochMillisThreshold on (1e12 ms is September 2001 too).
const (
	epochSecondsThreshold = 1_000_000_000
	epochMillisThreshold  = 1_000_000_000_000
)

// ParseQuotas reads the rate-limit headers of a response, h, and returns the
// quotas they describe. now is the client's current time; it is used only to
// turn an absolute reset time into a duration when the response has no valid
// Date header (with one, absolute times are measured from the Date, so the
// client's clock skew does not matter).
//
// It understands these families; a response that carries several gets a
// Quota from each, in this order:
//
//  1. The IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers), in
//     every published shape. From -08 on, RateLimit-Policy and RateLimit are
//     Lists of Items named by a String or Token, with q (quota → Limit), qu
//     (unit, default "requests"), w (window), and r (remaining), t (reset);
//     a RateLimit item is matched to the policy of the same name, and Name
//     is that name. Policies come in RateLimit-Policy order, then RateLimit
//     items that have no policy, in theirs. An item without its required
//     parameter (q on a policy, r on RateLimit) is skipped; the partition
//     key pk is not reported. In -07, RateLimit is a Dictionary (limit,
//     remaining, reset), and the window is that of the RateLimit-Policy item
//     ("100;w=60") whose quota equals the limit. In -01 to -06, the fields
//     are RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset, and
//     RateLimit-Limit may carry policies ("10, 10;w=1, 50;w=60": the window
//     is that of the first policy whose quota equals the leading limit).
//     The -07 and older shapes give Name "". A field that is not a valid
//     structured field, or is longer than 8 KiB, is ignored, as the draft
//     requires of malformed fields.
//  2. OpenAI's x-ratelimit-{limit,remaining,reset}-{requests,tokens}: Name
//     and Unit "requests", then "tokens"; then, where a project-scoped token
//     limit applies, x-ratelimit-{limit,remaining,reset}-project-tokens:
//     Name "project-tokens", Unit "tokens". Resets are Go-style durations
//     ("1s", "6m0s", "2m52.8s", "20ms"); a bare number is seconds. The
//     limits are per minute, so a Limit comes with a Window of one minute.
//  3. X-RateLimit-Limit, -Remaining, -Reset and -Used (GitHub, Discord,
//     SendGrid and many more): one Quota, Unit "requests", Name from
//     X-RateLimit-Resource (GitHub) or else X-RateLimit-Bucket (Discord),
//     else "". Remaining is Limit − Used when only Used is given.
//     X-RateLimit-Reset-After (fractional delta seconds, Discord) is
//     preferred over X-RateLimit-Reset. X-RateLimit-Reset may be an
//     HTTP-date or a number, read by its size: below 1e9 delta
//     seconds, below 1e12 Unix seconds (fractions allowed, as Discord's
//     "1470173023.123"), else Unix milliseconds. X-RateLimit-Limit accepts
//     the same policy syntax as RateLimit-Limit (Envoy sends "10, 10;w=1").
//  4. Anthropic's anthropic-ratelimit-{requests,tokens,input-tokens,
//     output-tokens}-{limit,remaining,reset}: Name and Unit "requests",
//     "tokens", "input-tokens", "output-tokens", in that order. Resets are
//     RFC 3339 times. The limits are per minute: Window is one minute.
//  5. Shopify's X-Shopify-Shop-Api-Call-Limit ("32/40", used/limit):
//     Limit 40, Remaining 8, Unit "requests", Name "". No Reset is invented:
//     the bucket leaks continuously.
//
// Values are checked, never trusted: a negative or unparsable limit or
// remaining is reported as -1, "not said" (Azure OpenAI sends -1 to mean
// exactly that; treating it as "0 left" would stall every caller), a Remaining
// larger than Limit is kept as sent, durations are clamped to
// [0, one year], and at most 16 quotas are returned. A quota
// of which every field is invalid, absent or zero is not reported.
//
// Headers are read with h.Get and h.Values, so keys must be canonical, as
// they are in every http.Response. When no rate-limit header is present
// ParseQuotas returns nil without allocating; it runs on every response.
// ParseQuotas never panics and keeps no state.
func ParseQuotas(h http.Header, now time.Time) []Quota {
	families := quotaHeaderFamilies(h)
	if families == 0 {
		return nil
	}
	var qs []Quota
	if families&quotaFamilyIETF != 0 {
		qs = appendIETFQuotas(qs, h, now)
	}
	if families&quotaFamilyXRateLimit != 0 {
		qs = appendOpenAIQuotas(qs, h)
		qs = appendXRateLimitQuota(qs, h, now)
	}
	if families&quotaFamilyAnthropic != 0 {
		qs = appendAnthropicQuotas(qs, h, now)
	}
	if families&quotaFamilyShopify != 0 {
		qs = appendShopifyQuota(qs, h)
	}
	return qs
}

const (
	quotaFamilyIETF       = 1 << iota // RateLimit, RateLimit-Policy, RateLimit-Limit, ...
	quotaFamilyXRateLimit             // X-RateLimit-*, OpenAI's included
	quotaFamilyAnthropic              // Anthropic-Ratelimit-*
	quotaFamilyShopify                // X-Shopify-Shop-Api-Call-Limit
)

// Present reports whether h holds a header of a family ParseQuotas reads;
// when it does not, ParseQuotas returns nil. It costs a few string
// comparisons per header and never allocates, so a caller can skip the
// rest of its work on the many responses that say nothing about limits.
func Present(h http.Header) bool { return quotaHeaderFamilies(h) != 0 }

// quotaHeaderFamilies tells which header families h contains, in one pass
// over its keys, so that a response without any of them costs a few string
// comparisons per header and no allocation.
func quotaHeaderFamilies(h http.Header) (families uint8) {
	if len(h) == 0 {
		return 0 // without starting an iteration, which costs more than this
	}
	for k := range h {
		switch {
		case strings.HasPrefix(k, "Ratelimit"):
			families |= quotaFamilyIETF
		case strings.HasPrefix(k, "X-Ratelimit-"):
			families |= quotaFamilyXRateLimit
		case strings.HasPrefix(k, "Anthropic-Ratelimit-"):
			families |= quotaFamilyAnthropic
		case k == "X-Shopify-Shop-Api-Call-Limit":
			families |= quotaFamilyShopify
		}
	}
	return families
}

// appendQuota appends q unless it says nothing at all (every field invalid
// or absent, or nothing but a reset that is now: Azure's "not applicable")
// or qs already holds maxQuotas quotas. The first append allocates room
// for a typical response (OpenAI: 2, Anthropic: 4).
func appendQuota(qs []Quota, q Quota) []Quota {
	if len(qs) >= maxQuotas || q.Limit < 0 && q.Remaining < 0 && q.Window == 0 && q.Reset == 0 {
		return qs
	}
	if qs == nil {
		qs = make([]Quota, 0, 4)
	}
	return append(qs, q)
}

// newQuota returns a Quota that says nothing yet.
func newQuota(name, unit string) Quota {
	return Quota{Name: name, Unit: unit, Limit: -1, Remaining: -1}
}
