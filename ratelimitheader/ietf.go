package ratelimitheader

import (
	"net/http"
	"time"

	"github.com/dunglas/httpsfv"
)

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
