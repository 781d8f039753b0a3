package ratelimitheader

import (
	"net/http"
	"strings"
	"time"
)

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
	base := ResponseTime(h, now)
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
