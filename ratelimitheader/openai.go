package ratelimitheader

import (
	"net/http"
	"strings"
	"time"
)

// appendOpenAIQuotas appends OpenAI's requests, tokens and project-tokens
// quotas. https://developers.openai.com/api/docs/guides/rate-limits ("Rate
// limits in headers"), read 2026-12-01 in the mirror of 2026-06-27,
// https://github.com/crasuna/openai-dev-docs-cn-mirror/blob/a86c1ba4443e6f6a6e218d314f19ac54428392ce/sources/en/api/docs/guides/rate-limits.md:
// "x-ratelimit-limit-project-tokens | 60000 | The token limit for the
// project." … "Project-token headers may be present when a project-scoped
// token limit applies."
func appendOpenAIQuotas(qs []Quota, h http.Header) []Quota {
	qs = appendOpenAIQuota(qs, h, "requests", "requests",
		"X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests")
	qs = appendOpenAIQuota(qs, h, "tokens", "tokens",
		"X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens")
	const limit, remaining, reset = "X-Ratelimit-Limit-Project-Tokens", "X-Ratelimit-Remaining-Project-Tokens", "X-Ratelimit-Reset-Project-Tokens"
	// Most responses carry no project-token headers: three lookups of the
	// canonical keys cost less than three h.Get, which canonicalize theirs.
	if h[limit] == nil && h[remaining] == nil && h[reset] == nil {
		return qs
	}
	return appendOpenAIQuota(qs, h, "project-tokens", "tokens", limit, remaining, reset)
}

func appendOpenAIQuota(qs []Quota, h http.Header, name, unit, limitKey, remainingKey, resetKey string) []Quota {
	q := newQuota(name, unit)
	if n, ok := parseHeaderCount(h.Get(limitKey)); ok {
		// OpenAI's limits are per minute (RPM, TPM); the headers say the
		// count but not the window, which the rate-limits guide gives. It
		// gives none for the project's token limit, read as per minute as
		// the tokens one is: its remaining count clamps the bucket anyway.
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
