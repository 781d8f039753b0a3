package ratelimitheader

import (
	"strings"
	"time"
)

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
