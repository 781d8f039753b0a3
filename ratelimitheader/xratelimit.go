package ratelimitheader

import (
	"net/http"
	"strings"
	"time"
)

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
		return clampHeaderDuration(t.Sub(ResponseTime(h, now))), true
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
	return clampHeaderDuration(at.Sub(ResponseTime(h, now))), true
}
