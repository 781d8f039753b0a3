package ratelimitheader

import (
	"net/http"
	"strings"
)

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
