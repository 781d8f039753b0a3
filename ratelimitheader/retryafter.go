package ratelimitheader

import (
	"net/http"
	"strings"
	"time"
)

// maxHeaderDuration is the longest wait, window or reset that the header
// parsers in this package report. It is not a pacing policy — the Transport
// clamps waits to its own, configurable, maximum — but a bound on arithmetic:
// a server that sends "Retry-After: 99999999999999" must not overflow
// time.Duration, wrap to a negative wait, or be believed for centuries.
const maxHeaderDuration = 365 * 24 * time.Hour

// RetryAfter reports how long the server that produced the response headers
// h asked the client to wait before its next request. now is the client's
// current time; it is only consulted when a date has to be turned into a
// wait and the response carries no valid Date header.
//
// Three headers are read, in this order of precedence; the first one that
// holds a valid value wins, and one whose value is invalid is skipped as if
// it were absent:
//
//  1. Retry-After-Ms: milliseconds, possibly fractional ("1500", "20.5"), as
//     sent by OpenAI. It says the same as Retry-After with more precision,
//     so it is preferred when both are present.
//  2. Retry-After (RFC 9110 §10.2.3): delay-seconds ("120"; a fractional
//     "1.5" is accepted too), or an HTTP-date in any of the three forms
//     RFC 9110 §5.6.7 requires a recipient to accept — IMF-fixdate,
//     obsolete RFC 850 and ANSI C asctime. A date is measured against the
//     response's own Date header when that holds a valid HTTP-date, so a
//     skew between the server's clock and the client's does not change the
//     wait; otherwise it is measured against now.
//  3. X-RateLimit-Reset-After: fractional seconds ("64.57"), as sent by
//     Discord; a fallback for responses without Retry-After.
//
// Only the first line of each header is read. The wait is clamped to
// [0, one year]: a negative delay or a date in the past yields
// (0, true) — the server answered, and its answer is "now" — and a huge
// value saturates instead of overflowing. ok is false when none of the
// headers holds a usable value. RetryAfter never panics.
func RetryAfter(h http.Header, now time.Time) (wait time.Duration, ok bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if d, ok := parseHeaderDecimal(v, time.Millisecond); ok {
			return d, true
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if d, ok := parseRetryAfterValue(v, h, now); ok {
			return d, true
		}
	}
	if v := h.Get("X-Ratelimit-Reset-After"); v != "" {
		if d, ok := parseHeaderDecimal(v, time.Second); ok {
			return d, true
		}
	}
	return 0, false
}

// parseRetryAfterValue parses one Retry-After value: delay-seconds or an
// HTTP-date.
func parseRetryAfterValue(v string, h http.Header, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if d, ok := parseHeaderDecimal(v, time.Second); ok {
		return d, true
	}
	t, err := http.ParseTime(v) // IMF-fixdate, RFC 850 and asctime
	if err != nil {
		return 0, false
	}
	return clampHeaderDuration(t.Sub(ResponseTime(h, now))), true
}

// ResponseTime returns when the response with headers h was generated
// according to its Date header, or now when it has no valid one. Absolute times in other
// headers are measured from it, so that they are read on the server's clock.
func ResponseTime(h http.Header, now time.Time) time.Time {
	if v := h.Get("Date"); v != "" {
		if t, err := http.ParseTime(strings.TrimSpace(v)); err == nil {
			return t
		}
	}
	return now
}

// clampHeaderDuration bounds d to [0, maxHeaderDuration]. time.Time.Sub
// already saturates instead of overflowing, so this is all that is left.
func clampHeaderDuration(d time.Duration) time.Duration {
	return min(max(d, 0), maxHeaderDuration)
}

// headerDecimal is a number as written in a header: an optional minus sign,
// digits, and an optional fraction. whole saturates at headerDecimalMax;
// the fraction keeps at most nine digits (frac/scale).
type headerDecimal struct {
	whole int64
	frac  int64
	scale int64 // 10^(fraction digits kept); 1 when there is no fraction
	neg   bool
}

// headerDecimalMax is where headerDecimal.whole stops growing. Anything
// that large is far beyond maxHeaderDuration in any unit and beyond any
// epoch timestamp in milliseconds, so the exact value no longer matters.
const headerDecimalMax = 1 << 60

// parseDecimalNumber parses "120", "1.5", "-3", ".5" or "5." — surrounding
// white space allowed — and nothing else: no "+", exponents, hexadecimal,
// NaN or infinities, which no rate-limit header legitimately contains.
func parseDecimalNumber(s string) (headerDecimal, bool) {
	s = strings.TrimSpace(s)
	n := headerDecimal{scale: 1}
	if s != "" && s[0] == '-' {
		n.neg = true
		s = s[1:]
	}
	digits, i := 0, 0
	for ; i < len(s) && isASCIIDigit(s[i]); i++ {
		digits++
		if n.whole <= (headerDecimalMax-9)/10 {
			n.whole = n.whole*10 + int64(s[i]-'0')
		} else {
			n.whole = headerDecimalMax // saturate; never wrap around
		}
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && isASCIIDigit(s[i]); i++ {
			digits++
			if n.scale < 1e9 { // finer than a nanosecond is noise
				n.frac = n.frac*10 + int64(s[i]-'0')
				n.scale *= 10
			}
		}
	}
	if digits == 0 || i != len(s) {
		return headerDecimal{}, false
	}
	return n, true
}

// parseHeaderDecimal parses a decimal number of units ("120" seconds,
// "20.5" milliseconds). Negative values become 0 and values beyond
// maxHeaderDuration saturate; ok is false only for text that is not a
// number.
func parseHeaderDecimal(s string, unit time.Duration) (time.Duration, bool) {
	n, ok := parseDecimalNumber(s)
	if !ok {
		return 0, false
	}
	return n.duration(unit), true
}

// duration converts n units to a Duration clamped to [0, maxHeaderDuration].
func (n headerDecimal) duration(unit time.Duration) time.Duration {
	if n.neg {
		return 0
	}
	if n.whole > int64(maxHeaderDuration/unit) {
		return maxHeaderDuration
	}
	var frac time.Duration
	if unit <= time.Second {
		frac = time.Duration(n.frac) * unit / time.Duration(n.scale) // < 1e18: no overflow
	} else {
		frac = time.Duration(n.frac) * (unit / time.Duration(n.scale)) // minutes and hours are whole seconds
	}
	return min(time.Duration(n.whole)*unit+frac, maxHeaderDuration)
}

func isASCIIDigit(c byte) bool { return '0' <= c && c <= '9' }
