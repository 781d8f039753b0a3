package ratelimitheader

import (
	"net/http"
	"testing"
	"time"
)

// retryAfterNow is the client's clock in these tests. It is an hour ahead
// of the servers' Date headers, so a test that measured a date against it
// instead of against Date would be off by an hour.
var retryAfterNow = time.Date(2015, 10, 21, 8, 28, 0, 0, time.UTC)

func TestRetryAfter(t *testing.T) {
	const serverDate = "Wed, 21 Oct 2015 07:28:00 GMT" // an hour behind retryAfterNow
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
		wantOK bool
	}{
		{"no header", http.Header{}, 0, false},
		{"nil header", nil, 0, false},
		{"delay-seconds", http.Header{"Retry-After": {"120"}}, 120 * time.Second, true},
		{"zero", http.Header{"Retry-After": {"0"}}, 0, true},
		{"fractional seconds", http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond, true},
		{"white space", http.Header{"Retry-After": {" 7 "}}, 7 * time.Second, true},
		{"negative becomes zero", http.Header{"Retry-After": {"-5"}}, 0, true},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0, false},
		{"empty", http.Header{"Retry-After": {""}}, 0, false},
		{"exponent is not a number here", http.Header{"Retry-After": {"1e3"}}, 0, false},
		{"plus sign", http.Header{"Retry-After": {"+5"}}, 0, false},
		{"NaN", http.Header{"Retry-After": {"NaN"}}, 0, false},
		{"lone dot", http.Header{"Retry-After": {"."}}, 0, false},
		{"lone minus", http.Header{"Retry-After": {"-"}}, 0, false},
		{"huge saturates", http.Header{"Retry-After": {"99999999999999999999999999999"}}, maxHeaderDuration, true},
		{"huge, just short of saturating the parser (found by FuzzRetryAfter)", http.Header{"Retry-After": {"11000000000000000000"}}, maxHeaderDuration, true},
		{"just over the ceiling", http.Header{"Retry-After": {"31536001"}}, maxHeaderDuration, true},
		{"first line wins", http.Header{"Retry-After": {"10", "20"}}, 10 * time.Second, true},

		// RFC 9110 §5.6.7: all three HTTP-date forms, measured against Date.
		{"IMF-fixdate against Date", http.Header{"Date": {serverDate}, "Retry-After": {"Wed, 21 Oct 2015 07:28:30 GMT"}}, 30 * time.Second, true},
		{"RFC 850 against Date", http.Header{"Date": {serverDate}, "Retry-After": {"Wednesday, 21-Oct-15 07:28:30 GMT"}}, 30 * time.Second, true},
		{"asctime against Date", http.Header{"Date": {serverDate}, "Retry-After": {"Wed Oct 21 07:28:30 2015"}}, 30 * time.Second, true},
		{"Date itself in RFC 850", http.Header{"Date": {"Wednesday, 21-Oct-15 07:28:00 GMT"}, "Retry-After": {"Wed, 21 Oct 2015 07:28:30 GMT"}}, 30 * time.Second, true},
		{"date without Date header uses now", http.Header{"Retry-After": {"Wed, 21 Oct 2015 08:28:30 GMT"}}, 30 * time.Second, true},
		{"invalid Date header uses now", http.Header{"Date": {"yesterday"}, "Retry-After": {"Wed, 21 Oct 2015 08:28:30 GMT"}}, 30 * time.Second, true},
		{"date in the past", http.Header{"Date": {serverDate}, "Retry-After": {"Wed, 21 Oct 2015 07:00:00 GMT"}}, 0, true},
		{"date far in the future saturates", http.Header{"Date": {serverDate}, "Retry-After": {"Fri, 31 Dec 9999 23:59:59 GMT"}}, maxHeaderDuration, true},
		{"date with a non-GMT zone", http.Header{"Retry-After": {"Wed, 21 Oct 2015 07:28:30 PST"}}, 0, false},

		// draft-ietf-httpapi-ratelimit-headers-11, Appendix B.1.4.
		{"ratelimit draft B.1.4", http.Header{
			"Date":        {"Mon, 05 Aug 2019 09:27:00 GMT"},
			"Retry-After": {"Mon, 05 Aug 2019 09:27:05 GMT"},
			"Ratelimit":   {`"default";r=0;t=5`},
		}, 5 * time.Second, true},

		// OpenAI: retry-after-ms, preferred for its precision.
		{"retry-after-ms", http.Header{"Retry-After-Ms": {"1500"}}, 1500 * time.Millisecond, true},
		{"retry-after-ms fractional", http.Header{"Retry-After-Ms": {"20.5"}}, 20500 * time.Microsecond, true},
		{"retry-after-ms preferred", http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"1"}}, 250 * time.Millisecond, true},
		{"garbage retry-after-ms falls back", http.Header{"Retry-After-Ms": {"soon"}, "Retry-After": {"3"}}, 3 * time.Second, true},
		{"retry-after-ms negative", http.Header{"Retry-After-Ms": {"-1"}}, 0, true},
		{"retry-after-ms huge", http.Header{"Retry-After-Ms": {"100000000000000000000"}}, maxHeaderDuration, true},

		// Discord (https://discord.com/developers/docs/topics/rate-limits,
		// "Example Exceeded User Rate Limit Response"): Retry-After wins.
		{"discord 429", http.Header{
			"Retry-After":             {"65"},
			"X-Ratelimit-Limit":       {"10"},
			"X-Ratelimit-Remaining":   {"0"},
			"X-Ratelimit-Reset":       {"1470173023.123"},
			"X-Ratelimit-Reset-After": {"64.57"},
			"X-Ratelimit-Bucket":      {"abcd1234"},
			"X-Ratelimit-Scope":       {"user"},
		}, 65 * time.Second, true},
		{"reset-after fallback", http.Header{"X-Ratelimit-Reset-After": {"64.57"}}, 64570 * time.Millisecond, true},
		{"garbage Retry-After falls back to reset-after", http.Header{"Retry-After": {"x"}, "X-Ratelimit-Reset-After": {"1.234"}}, 1234 * time.Millisecond, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := RetryAfter(tt.header, retryAfterNow)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("RetryAfter(%v) = %v, %v; want %v, %v", tt.header, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// TestRetryAfterCanonicalKeys checks that header names set in any case are
// found, as they are for every http.Header built with Set or Add, and for
// every http.Response.
func TestRetryAfterCanonicalKeys(t *testing.T) {
	h := http.Header{}
	h.Set("retry-after-ms", "100")
	if got, ok := RetryAfter(h, retryAfterNow); got != 100*time.Millisecond || !ok {
		t.Errorf("lower-case retry-after-ms: got %v, %v", got, ok)
	}
	h = http.Header{}
	h.Add("RETRY-AFTER", "9")
	if got, ok := RetryAfter(h, retryAfterNow); got != 9*time.Second || !ok {
		t.Errorf("upper-case Retry-After: got %v, %v", got, ok)
	}
}

func TestParseHeaderDecimal(t *testing.T) {
	tests := []struct {
		in     string
		unit   time.Duration
		want   time.Duration
		wantOK bool
	}{
		{"1", time.Second, time.Second, true},
		{".5", time.Second, 500 * time.Millisecond, true},
		{"5.", time.Second, 5 * time.Second, true},
		{"0.000000001", time.Second, time.Nanosecond, true},
		{"0.0000000019", time.Second, time.Nanosecond, true}, // beyond nanoseconds is dropped
		{"1.5", time.Hour, 90 * time.Minute, true},
		{"0.123456789", time.Hour, 444444440400 * time.Nanosecond, true},
		{"8760", time.Hour, maxHeaderDuration, true},
		{"8761", time.Hour, maxHeaderDuration, true},
		{"1.5", time.Millisecond, 1500 * time.Microsecond, true},
		{"1..5", time.Second, 0, false},
		{"1.5.", time.Second, 0, false},
		{"١", time.Second, 0, false}, // a non-ASCII digit
		{"--1", time.Second, 0, false},
	}
	for _, tt := range tests {
		got, ok := parseHeaderDecimal(tt.in, tt.unit)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("parseHeaderDecimal(%q, %v) = %v, %v; want %v, %v", tt.in, tt.unit, got, ok, tt.want, tt.wantOK)
		}
	}
}

func FuzzRetryAfter(f *testing.F) {
	f.Add("", "120", "", "")
	f.Add("1500", "1", "", "")
	f.Add("", "Wed, 21 Oct 2015 07:28:30 GMT", "", "Wed, 21 Oct 2015 07:28:00 GMT")
	f.Add("", "Wednesday, 21-Oct-15 07:28:30 GMT", "", "Wed, 21 Oct 2015 07:28:00 GMT")
	f.Add("", "Wed Oct 21 07:28:30 2015", "", "")
	f.Add("", "65", "64.57", "")
	f.Add("-1", "-1", "-1", "")
	f.Add("1e400", "99999999999999999999999", "9999999999.9999999999", "")
	f.Add("", "Fri, 31 Dec 9999 23:59:59 GMT", "", "Mon, 01 Jan 0001 00:00:00 GMT")
	f.Fuzz(func(t *testing.T, retryAfterMs, retryAfter, resetAfter, date string) {
		h := http.Header{}
		for k, v := range map[string]string{
			"Retry-After-Ms": retryAfterMs, "Retry-After": retryAfter,
			"X-Ratelimit-Reset-After": resetAfter, "Date": date,
		} {
			if v != "" {
				h[k] = []string{v}
			}
		}
		d, ok := RetryAfter(h, retryAfterNow)
		if d < 0 || d > maxHeaderDuration {
			t.Fatalf("RetryAfter(%v) = %v, outside [0, %v]", h, d, maxHeaderDuration)
		}
		if !ok && d != 0 {
			t.Fatalf("RetryAfter(%v) = %v, false: a wait without ok", h, d)
		}
	})
}
