package pacer

import (
	"net/http"
	"strings"
	"time"

	"github.com/dunglas/httpsfv"
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
//     and Unit "requests", then "tokens". Resets are Go-style durations
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

// ---- IETF RateLimit fields ----

// appendIETFQuotas appends the quotas of every shape of the IETF draft
// present in h: the -08+ Lists, the -07 Dictionary, and the -01..-06
// separate fields.
func appendIETFQuotas(qs []Quota, h http.Header, now time.Time) []Quota {
	start := len(qs)
	policies, _ := parseIETFList(h.Values("Ratelimit-Policy"))

	// -08 and later: named policies.
	for _, m := range policies {
		item, ok := m.(httpsfv.Item)
		if !ok {
			continue
		}
		name, ok := ietfPolicyName(item)
		if !ok {
			continue
		}
		limit, ok := ietfIntParam(item.Params, "q")
		if !ok {
			continue // q is required
		}
		q := newQuota(name, "requests")
		q.Limit = limit
		if unit, ok := ietfStringParam(item.Params, "qu"); ok {
			q.Unit = unit
		}
		if w, ok := ietfIntParam(item.Params, "w"); ok && w > 0 {
			q.Window = secondsDuration(w)
		}
		qs = appendQuota(qs, q)
	}

	if lines := h.Values("Ratelimit"); len(lines) > 0 {
		if limits, ok := parseIETFList(lines); ok {
			qs = appendIETFServiceLimits(qs, start, limits)
		} else if d, ok := parseIETFDictionary(lines); ok {
			qs = appendIETF07Quota(qs, d, policies)
		}
	}

	return appendIETFSeparateFieldsQuota(qs, h, now, policies)
}

// appendIETFServiceLimits merges the -08+ RateLimit items into the policies
// already in qs[start:] by name, and appends the ones without a policy.
func appendIETFServiceLimits(qs []Quota, start int, limits httpsfv.List) []Quota {
	for _, m := range limits {
		item, ok := m.(httpsfv.Item)
		if !ok {
			continue
		}
		name, ok := ietfPolicyName(item)
		if !ok {
			continue
		}
		remaining, ok := ietfIntParam(item.Params, "r")
		if !ok {
			continue // r is required
		}
		var reset time.Duration
		t, hasReset := ietfIntParam(item.Params, "t")
		if hasReset {
			reset = secondsDuration(t)
		}
		if i := indexQuotaByName(qs[start:], name); i >= 0 {
			qs[start+i].Remaining = remaining
			qs[start+i].Reset, qs[start+i].HasReset = reset, hasReset
			continue
		}
		q := newQuota(name, "requests")
		if limit, ok := ietfIntParam(item.Params, "q"); ok { // the draft's own examples send q here too
			q.Limit = limit
		}
		q.Remaining = remaining
		q.Reset, q.HasReset = reset, hasReset
		qs = appendQuota(qs, q)
	}
	return qs
}

// appendIETF07Quota appends the quota of a -07 "RateLimit: limit=100,
// remaining=50, reset=5" Dictionary.
func appendIETF07Quota(qs []Quota, d *httpsfv.Dictionary, policies httpsfv.List) []Quota {
	q := newQuota("", "requests")
	if n, ok := ietfDictInt(d, "limit"); ok {
		q.Limit = n
		q.Window = ietfWindowForLimit(policies, n)
	}
	if n, ok := ietfDictInt(d, "remaining"); ok {
		q.Remaining = n
	}
	if n, ok := ietfDictInt(d, "reset"); ok {
		q.Reset, q.HasReset = secondsDuration(n), true
	}
	return appendQuota(qs, q)
}

// appendIETFSeparateFieldsQuota appends the quota of the -01..-06 drafts'
// RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset fields.
func appendIETFSeparateFieldsQuota(qs []Quota, h http.Header, now time.Time, policies httpsfv.List) []Quota {
	q := newQuota("", "requests")
	if lines := h.Values("Ratelimit-Limit"); len(lines) > 0 {
		if limit, window, ok := parseLimitField(lines); ok {
			q.Limit = limit
			q.Window = window
			if window == 0 {
				q.Window = ietfWindowForLimit(policies, limit)
			}
		}
	}
	if n, ok := parseHeaderCount(h.Get("Ratelimit-Remaining")); ok {
		q.Remaining = n
	}
	if d, ok := parseResetField(h.Get("Ratelimit-Reset"), h, now); ok {
		q.Reset, q.HasReset = d, true
	}
	return appendQuota(qs, q)
}

// parseIETFList parses a structured-field List, refusing empty and overlong
// fields.
func parseIETFList(lines []string) (httpsfv.List, bool) {
	if !structuredFieldFits(lines) {
		return nil, false
	}
	l, err := httpsfv.UnmarshalList(lines)
	if err != nil || len(l) == 0 {
		return nil, false
	}
	return l, true
}

// parseIETFDictionary parses a structured-field Dictionary, refusing empty
// and overlong fields.
func parseIETFDictionary(lines []string) (*httpsfv.Dictionary, bool) {
	if !structuredFieldFits(lines) {
		return nil, false
	}
	d, err := httpsfv.UnmarshalDictionary(lines)
	if err != nil {
		return nil, false
	}
	return d, true
}

func structuredFieldFits(lines []string) bool {
	if len(lines) == 0 {
		return false
	}
	n := 0
	for _, l := range lines {
		n += len(l) + 2 // httpsfv joins lines with ", "
		if n > maxStructuredFieldLen {
			return false
		}
	}
	return true
}

// ietfPolicyName returns the name of a -08+ policy or service-limit item: a
// String, or a Token as some servers send.
func ietfPolicyName(item httpsfv.Item) (string, bool) {
	switch v := item.Value.(type) {
	case string:
		return v, true
	case httpsfv.Token:
		return string(v), true
	}
	return "", false
}

// ietfIntParam returns a non-negative Integer parameter. Negative values
// are invalid in every draft and are treated as absent.
func ietfIntParam(p *httpsfv.Params, key string) (int64, bool) {
	if p == nil {
		return 0, false
	}
	v, ok := p.Get(key)
	if !ok {
		return 0, false
	}
	n, ok := v.(int64)
	return n, ok && n >= 0
}

// ietfStringParam returns a non-empty String or Token parameter.
func ietfStringParam(p *httpsfv.Params, key string) (string, bool) {
	if p == nil {
		return "", false
	}
	v, ok := p.Get(key)
	if !ok {
		return "", false
	}
	switch v := v.(type) {
	case string:
		return v, v != ""
	case httpsfv.Token:
		return string(v), v != ""
	}
	return "", false
}

// ietfDictInt returns a non-negative Integer member of a -07 Dictionary.
func ietfDictInt(d *httpsfv.Dictionary, key string) (int64, bool) {
	m, ok := d.Get(key)
	if !ok {
		return 0, false
	}
	item, ok := m.(httpsfv.Item)
	if !ok {
		return 0, false
	}
	n, ok := item.Value.(int64)
	return n, ok && n >= 0
}

// ietfWindowForLimit returns the window of the first pre-08 quota policy
// ("50;w=60") whose quota equals limit, or 0. That equality is how the
// -02..-07 drafts tie the expiring limit to its policy.
func ietfWindowForLimit(policies httpsfv.List, limit int64) time.Duration {
	for _, m := range policies {
		item, ok := m.(httpsfv.Item)
		if !ok {
			continue
		}
		if n, ok := item.Value.(int64); !ok || n != limit {
			continue
		}
		if w, ok := ietfIntParam(item.Params, "w"); ok && w > 0 {
			return secondsDuration(w)
		}
	}
	return 0
}

// parseLimitField parses RateLimit-Limit or X-RateLimit-Limit: a plain
// count, or the -02..-06 list "expiring-limit, quota-policy..." such as
// "10, 10;w=1, 50;w=60". The plain count, by far the common case, is parsed
// without the structured-field machinery.
func parseLimitField(lines []string) (limit int64, window time.Duration, ok bool) {
	if len(lines) == 1 {
		if n, ok := parseHeaderCount(lines[0]); ok {
			return n, 0, true
		}
	}
	l, ok := parseIETFList(lines)
	if !ok {
		return 0, 0, false
	}
	first, ok := l[0].(httpsfv.Item)
	if !ok {
		return 0, 0, false
	}
	n, ok := first.Value.(int64)
	if !ok || n < 0 {
		return 0, 0, false
	}
	return n, ietfWindowForLimit(l[1:], n), true
}

// ---- OpenAI ----

// appendOpenAIQuotas appends OpenAI's requests and tokens quotas.
// https://platform.openai.com/docs/guides/rate-limits (rate limits in headers)
func appendOpenAIQuotas(qs []Quota, h http.Header) []Quota {
	qs = appendOpenAIQuota(qs, h, "requests",
		"X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests")
	return appendOpenAIQuota(qs, h, "tokens",
		"X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens")
}

func appendOpenAIQuota(qs []Quota, h http.Header, kind, limitKey, remainingKey, resetKey string) []Quota {
	q := newQuota(kind, kind)
	if n, ok := parseHeaderCount(h.Get(limitKey)); ok {
		// OpenAI's limits are per minute (RPM, TPM); the headers say the
		// count but not the window, which the rate-limits guide gives.
		q.Limit, q.Window = n, time.Minute
	}
	if n, ok := parseHeaderCount(h.Get(remainingKey)); ok {
		q.Remaining = n
	}
	if d, ok := parseOpenAIReset(h.Get(resetKey)); ok {
		q.Reset, q.HasReset = d, true
	}
	return appendQuota(qs, q)
}

// parseOpenAIReset parses OpenAI's reset durations. They look like Go
// durations ("1s", "6m0s", "20ms", "2m52.8s", "7.66s", "1h2m"), but a
// parser of our own saturates at maxHeaderDuration where time.ParseDuration
// would fail, reads a bare number as seconds (Azure OpenAI sends "0"), and
// turns a negative duration into 0.
func parseOpenAIReset(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	if d, ok := parseHeaderDecimal(s, time.Second); ok {
		return d, true
	}
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	var total time.Duration
	if s == "" {
		return 0, false
	}
	for s != "" {
		i := 0
		for i < len(s) && (isASCIIDigit(s[i]) || s[i] == '.') {
			i++
		}
		j := i
		for j < len(s) && !isASCIIDigit(s[j]) && s[j] != '.' {
			j++
		}
		number, unit := s[:i], s[i:j]
		s = s[j:]
		var u time.Duration
		switch unit {
		case "h":
			u = time.Hour
		case "m":
			u = time.Minute
		case "s":
			u = time.Second
		case "ms":
			u = time.Millisecond
		case "us", "µs", "μs":
			u = time.Microsecond
		case "ns":
			u = time.Nanosecond
		default:
			return 0, false
		}
		n, ok := parseDecimalNumber(number)
		if !ok || n.neg {
			return 0, false
		}
		total = min(total+n.duration(u), maxHeaderDuration) // each term ≤ the ceiling: no overflow
	}
	if neg {
		return 0, true
	}
	return total, true
}

// ---- X-RateLimit-* (GitHub, Discord, SendGrid, ...) ----

// appendXRateLimitQuota appends the quota of the X-RateLimit-* family.
// https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
// https://discord.com/developers/docs/topics/rate-limits
func appendXRateLimitQuota(qs []Quota, h http.Header, now time.Time) []Quota {
	q := newQuota("", "requests")
	if lines := h.Values("X-Ratelimit-Limit"); len(lines) > 0 {
		if limit, window, ok := parseLimitField(lines); ok {
			q.Limit, q.Window = limit, window
		}
	}
	if n, ok := parseHeaderCount(h.Get("X-Ratelimit-Remaining")); ok {
		q.Remaining = n
	} else if used, ok := parseHeaderCount(h.Get("X-Ratelimit-Used")); ok && q.Limit >= 0 {
		q.Remaining = max(q.Limit-used, 0)
	}
	if d, ok := parseHeaderDecimal(h.Get("X-Ratelimit-Reset-After"), time.Second); ok {
		q.Reset, q.HasReset = d, true
	} else if d, ok := parseResetField(h.Get("X-Ratelimit-Reset"), h, now); ok {
		q.Reset, q.HasReset = d, true
	}
	if name := strings.TrimSpace(h.Get("X-Ratelimit-Resource")); name != "" {
		q.Name = name
	} else {
		q.Name = strings.TrimSpace(h.Get("X-Ratelimit-Bucket"))
	}
	return appendQuota(qs, q)
}

// parseResetField parses a reset that may be delta seconds, Unix seconds,
// Unix milliseconds (told apart by epochSecondsThreshold and
// epochMillisThreshold) or an HTTP-date. Absolute times are measured from
// the response's Date header, or now.
func parseResetField(v string, h http.Header, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	n, ok := parseDecimalNumber(v)
	if !ok {
		t, err := http.ParseTime(v)
		if err != nil {
			return 0, false
		}
		return clampHeaderDuration(t.Sub(responseTime(h, now))), true
	}
	var at time.Time
	switch {
	case n.neg || n.whole < epochSecondsThreshold:
		return n.duration(time.Second), true
	case n.whole < epochMillisThreshold:
		at = time.Unix(n.whole, n.frac*(1e9/n.scale))
	case n.whole < headerDecimalMax:
		at = time.UnixMilli(n.whole)
	default:
		return maxHeaderDuration, true
	}
	return clampHeaderDuration(at.Sub(responseTime(h, now))), true
}

// ---- Anthropic ----

// anthropicQuotaHeaders lists Anthropic's limits in the order ParseQuotas
// reports them, with their header names in canonical form.
// https://docs.anthropic.com/en/api/rate-limits (response headers)
var anthropicQuotaHeaders = [...]struct{ kind, limit, remaining, reset string }{
	{"requests", "Anthropic-Ratelimit-Requests-Limit", "Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Requests-Reset"},
	{"tokens", "Anthropic-Ratelimit-Tokens-Limit", "Anthropic-Ratelimit-Tokens-Remaining", "Anthropic-Ratelimit-Tokens-Reset"},
	{"input-tokens", "Anthropic-Ratelimit-Input-Tokens-Limit", "Anthropic-Ratelimit-Input-Tokens-Remaining", "Anthropic-Ratelimit-Input-Tokens-Reset"},
	{"output-tokens", "Anthropic-Ratelimit-Output-Tokens-Limit", "Anthropic-Ratelimit-Output-Tokens-Remaining", "Anthropic-Ratelimit-Output-Tokens-Reset"},
}

func appendAnthropicQuotas(qs []Quota, h http.Header, now time.Time) []Quota {
	base := responseTime(h, now)
	for _, k := range anthropicQuotaHeaders {
		q := newQuota(k.kind, k.kind)
		if n, ok := parseHeaderCount(h.Get(k.limit)); ok {
			// Per minute (RPM, ITPM, OTPM), as Anthropic's rate-limit
			// documentation says; the headers carry only the count.
			q.Limit, q.Window = n, time.Minute
		}
		if n, ok := parseHeaderCount(h.Get(k.remaining)); ok {
			q.Remaining = n
		}
		if v := strings.TrimSpace(h.Get(k.reset)); v != "" {
			if t, err := time.Parse(time.RFC3339, v); err == nil {
				q.Reset, q.HasReset = clampHeaderDuration(t.Sub(base)), true
			}
		}
		qs = appendQuota(qs, q)
	}
	return qs
}

// ---- Shopify ----

// appendShopifyQuota appends the quota of Shopify's REST Admin API call
// limit, "X-Shopify-Shop-Api-Call-Limit: 32/40" (used/limit).
// https://shopify.dev/docs/api/admin-rest/usage/rate-limits
func appendShopifyQuota(qs []Quota, h http.Header) []Quota {
	usedText, limitText, ok := strings.Cut(h.Get("X-Shopify-Shop-Api-Call-Limit"), "/")
	if !ok {
		return qs
	}
	used, ok1 := parseHeaderCount(usedText)
	limit, ok2 := parseHeaderCount(limitText)
	if !ok1 || !ok2 {
		return qs
	}
	q := newQuota("", "requests")
	q.Limit = limit
	q.Remaining = max(limit-used, 0)
	return appendQuota(qs, q)
}

// ---- numbers ----

// parseHeaderCount parses a non-negative integer count such as a limit or a
// remaining quota, allowing surrounding white space. Negative numbers,
// fractions and anything else are rejected; counts beyond headerDecimalMax
// saturate there.
func parseHeaderCount(s string) (int64, bool) {
	n, ok := parseDecimalNumber(s)
	if !ok || n.neg || n.scale != 1 || strings.IndexByte(s, '.') >= 0 {
		return 0, false
	}
	return n.whole, true
}

// secondsDuration converts a non-negative count of seconds to a Duration
// clamped to maxHeaderDuration.
func secondsDuration(n int64) time.Duration {
	if n <= 0 {
		return 0
	}
	if n > int64(maxHeaderDuration/time.Second) {
		return maxHeaderDuration
	}
	return time.Duration(n) * time.Second
}

// indexQuotaByName returns the index of the first quota in qs named name,
// or -1.
func indexQuotaByName(qs []Quota, name string) int {
	for i := range qs {
		if qs[i].Name == name {
			return i
		}
	}
	return -1
}
