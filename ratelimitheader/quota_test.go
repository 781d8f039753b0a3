package ratelimitheader

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// quotaNow is the client's clock in these tests.
var quotaNow = time.Date(2025, 10, 25, 12, 0, 0, 0, time.UTC)

// httpDate formats a Unix time as a Date header would carry it.
func httpDate(unix int64) string { return time.Unix(unix, 0).UTC().Format(http.TimeFormat) }

// q builds an expected Quota tersely.
func q(name, unit string, limit, remaining int64, window, reset time.Duration) Quota {
	return Quota{Name: name, Unit: unit, Limit: limit, Remaining: remaining, Window: window, Reset: reset, HasReset: reset != 0}
}

// resetsNow marks an expected Quota's reset of 0 as given: quota comes back
// now, or — in whole seconds — within the second.
func resetsNow(q Quota) Quota {
	q.HasReset = true
	return q
}

type quotaTest struct {
	name   string
	header http.Header
	want   []Quota
}

func runQuotaTests(t *testing.T, tests []quotaTest) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseQuotas(tt.header, quotaNow)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseQuotas(%v)\n got %+v\nwant %+v", tt.header, got, tt.want)
			}
		})
	}
}

func TestParseQuotasNone(t *testing.T) {
	runQuotaTests(t, []quotaTest{
		{"nil header", nil, nil},
		{"empty header", http.Header{}, nil},
		{"unrelated headers", http.Header{"Content-Type": {"application/json"}, "Retry-After": {"5"}}, nil},
		{"prefix alone is not a family", http.Header{"X-Ratelimit-Scope": {"user"}}, nil},
	})
}

// The examples are those of draft-ietf-httpapi-ratelimit-headers-11
// (https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/),
// sections 3.2, 4.2 and Appendix B, unless marked otherwise.
func TestParseQuotasIETFCurrentDraft(t *testing.T) {
	runQuotaTests(t, []quotaTest{
		{"§3 two policies", http.Header{"Ratelimit-Policy": {`"burst";q=100;w=60,"daily";q=1000;w=86400`}}, []Quota{
			q("burst", "requests", 100, -1, time.Minute, 0),
			q("daily", "requests", 1000, -1, 24*time.Hour, 0),
		}},
		{"§3.2 window", http.Header{"Ratelimit-Policy": {`"default";q=100;w=10`}}, []Quota{
			q("default", "requests", 100, -1, 10*time.Second, 0),
		}},
		{"§3.2 multiple policies", http.Header{"Ratelimit-Policy": {`"permin";q=50;w=60,"perhr";q=1000;w=3600`}}, []Quota{
			q("permin", "requests", 50, -1, time.Minute, 0),
			q("perhr", "requests", 1000, -1, time.Hour, 0),
		}},
		{"§3.2 partition key", http.Header{"Ratelimit-Policy": {`"peruser";q=100;w=60;pk=:cHsdsRa894==:`}}, []Quota{
			q("peruser", "requests", 100, -1, time.Minute, 0),
		}},
		{"§3.2 quota unit", http.Header{"Ratelimit-Policy": {`"peruser";q=65535;qu="content-bytes";w=10;pk=:sdfjLJUOUH==:`}}, []Quota{
			q("peruser", "content-bytes", 65535, -1, 10*time.Second, 0),
		}},
		{"§4 service limit", http.Header{"Ratelimit": {`"default";r=50;t=30`}}, []Quota{
			q("default", "requests", -1, 50, 0, 30*time.Second),
		}},
		{"§4.2 no window", http.Header{"Ratelimit": {`"default";r=999;pk=:dHJpYWwxMjEzMjM=:`}}, []Quota{
			q("default", "requests", -1, 999, 0, 0),
		}},
		{"§4.2 big quota", http.Header{"Ratelimit": {`"default";r=300000000;t=60;pk=:QXBwLTk5OQ==:`}}, []Quota{
			q("default", "requests", -1, 300000000, 0, time.Minute),
		}},
		{"B.1.1 exhausted", http.Header{"Ratelimit": {`"default";r=0;t=50`}}, []Quota{
			q("default", "requests", -1, 0, 0, 50*time.Second),
		}},
		{"B.1.3 policy and limit", http.Header{"Ratelimit-Policy": {`"basic";q=100;w=60`}, "Ratelimit": {`"basic";r=60;t=58`}}, []Quota{
			q("basic", "requests", 100, 60, time.Minute, 58*time.Second),
		}},
		{"B.2.3 pushing back", http.Header{"Ratelimit-Policy": {`"dynamic";q=15;w=20`}, "Ratelimit": {`"dynamic";r=0;t=20`}}, []Quota{
			q("dynamic", "requests", 15, 0, 20*time.Second, 20*time.Second),
		}},
		{"B.3.1 multiple windows", http.Header{"Ratelimit-Policy": {`"hour";q=1000;w=3600, "day";q=5000;w=86400`}, "Ratelimit": {`"day";r=100;t=36000`}}, []Quota{
			q("hour", "requests", 1000, -1, time.Hour, 0),
			q("day", "requests", 5000, 100, 24*time.Hour, 10*time.Hour),
		}},
		{"FAQ policy split over two lines", http.Header{
			"Ratelimit-Policy": {`"sliding";q=100;w=60;burst=1000`, `"fixed";q=5000;w=3600;burst=0`},
			"Ratelimit":        {`"sliding";r=50;t=44`},
		}, []Quota{
			q("sliding", "requests", 100, 50, time.Minute, 44*time.Second),
			q("fixed", "requests", 5000, -1, time.Hour, 0),
		}},
		{"appendix q on RateLimit", http.Header{"Ratelimit": {`"sliding";q=12;r=6;t=1`}}, []Quota{
			q("sliding", "requests", 12, 6, 0, time.Second),
		}},
		{"service limit without policy comes after policies", http.Header{
			"Ratelimit-Policy": {`"a";q=10`},
			"Ratelimit":        {`"b";r=1;t=2, "a";r=3`},
		}, []Quota{
			q("a", "requests", 10, 3, 0, 0),
			q("b", "requests", -1, 1, 0, 2*time.Second),
		}},
		{"token names", http.Header{"Ratelimit-Policy": {`default;q=10;w=1`}, "Ratelimit": {`default;r=5;t=1`}}, []Quota{
			q("default", "requests", 10, 5, time.Second, time.Second),
		}},
		{"concurrency unit as token", http.Header{"Ratelimit-Policy": {`"conc";q=4;qu=concurrent-requests`}}, []Quota{
			q("conc", "concurrent-requests", 4, -1, 0, 0),
		}},

		// Malformed fields are ignored, as the draft requires.
		{"malformed field", http.Header{"Ratelimit": {`"default";r=5;t=`}}, nil},
		{"unterminated string", http.Header{"Ratelimit-Policy": {`"default;q=5`}}, nil},
		{"policy without q", http.Header{"Ratelimit-Policy": {`"x";w=60, "y";q=1`}}, []Quota{q("y", "requests", 1, -1, 0, 0)}},
		{"q not an integer", http.Header{"Ratelimit-Policy": {`"x";q=1.5;w=60`}}, nil},
		{"negative r", http.Header{"Ratelimit": {`"default";r=-1;t=5`}}, nil},
		{"negative t", http.Header{"Ratelimit": {`"default";r=1;t=-5`}}, []Quota{q("default", "requests", -1, 1, 0, 0)}},
		{"zero window", http.Header{"Ratelimit-Policy": {`"x";q=1;w=0`}}, []Quota{q("x", "requests", 1, -1, 0, 0)}},
		{"inner list skipped", http.Header{"Ratelimit": {`("a" "b");r=1, "c";r=2`}}, []Quota{q("c", "requests", -1, 2, 0, 0)}},
		{"integer-named service limit skipped", http.Header{"Ratelimit": {`5;r=1`}}, nil},
		{"huge t saturates", http.Header{"Ratelimit": {`"d";r=1;t=999999999999999`}}, []Quota{
			q("d", "requests", -1, 1, 0, maxHeaderDuration),
		}},
		{"huge w saturates", http.Header{"Ratelimit-Policy": {`"d";q=999999999999999;w=999999999999999`}}, []Quota{
			q("d", "requests", 999999999999999, -1, maxHeaderDuration, 0),
		}},
		{"empty field", http.Header{"Ratelimit": {""}}, nil},
	})
}

// draft-ietf-httpapi-ratelimit-headers-07, sections 3.5 and 5.
func TestParseQuotasIETFDraft07(t *testing.T) {
	runQuotaTests(t, []quotaTest{
		{"§3.5 policy gives the window", http.Header{"Ratelimit-Policy": {"100;w=10"}, "Ratelimit": {"limit=100, remaining=50, reset=5"}}, []Quota{
			q("", "requests", 100, 50, 10*time.Second, 5*time.Second),
		}},
		{"§5 without policy", http.Header{"Ratelimit": {"limit=10, remaining=1, reset=7"}}, []Quota{
			q("", "requests", 10, 1, 0, 7*time.Second),
		}},
		{"§3.5 many policies", http.Header{
			"Ratelimit-Policy": {"10;w=1, 50;w=60, 1000;w=3600, 5000;w=86400"},
			"Ratelimit":        {"limit=50, remaining=20, reset=30"},
		}, []Quota{
			q("", "requests", 50, 20, time.Minute, 30*time.Second),
		}},
		{"§4 redirect", http.Header{"Ratelimit": {"limit=10, remaining=0, reset=10"}}, []Quota{
			q("", "requests", 10, 0, 0, 10*time.Second),
		}},
		{"parameters ignored", http.Header{"Ratelimit": {"limit=10;foo=1, remaining=3"}}, []Quota{
			q("", "requests", 10, 3, 0, 0),
		}},
		{"non-integer members ignored", http.Header{"Ratelimit": {`limit="10", remaining=3`}}, []Quota{
			q("", "requests", -1, 3, 0, 0),
		}},
		{"malformed dictionary", http.Header{"Ratelimit": {"limit=10, remaining=="}}, nil},
	})
}

// draft-ietf-httpapi-ratelimit-headers-01 to -06: separate fields; the
// RateLimit-Limit examples are the drafts' own.
func TestParseQuotasIETFSeparateFields(t *testing.T) {
	runQuotaTests(t, []quotaTest{
		{"three fields", http.Header{"Ratelimit-Limit": {"100"}, "Ratelimit-Remaining": {"50"}, "Ratelimit-Reset": {"50"}}, []Quota{
			q("", "requests", 100, 50, 0, 50*time.Second),
		}},
		{"policy in limit", http.Header{"Ratelimit-Limit": {"100, 100;w=10"}, "Ratelimit-Remaining": {"1"}}, []Quota{
			q("", "requests", 100, 1, 10*time.Second, 0),
		}},
		{"many policies in limit", http.Header{"Ratelimit-Limit": {"10, 10;w=1, 50;w=60, 1000;w=3600, 5000;w=86400"}}, []Quota{
			q("", "requests", 10, -1, time.Second, 0),
		}},
		{"burst parameter", http.Header{"Ratelimit-Limit": {"10, 10;w=1;burst=1000, 1000;w=3600"}}, []Quota{
			q("", "requests", 10, -1, time.Second, 0),
		}},
		{"policy in RateLimit-Policy (-03 to -06)", http.Header{"Ratelimit-Policy": {"10;w=1, 50;w=60"}, "Ratelimit-Limit": {"50"}, "Ratelimit-Reset": {"20"}}, []Quota{
			q("", "requests", 50, -1, time.Minute, 20*time.Second),
		}},
		{"reset as a date", http.Header{"Date": {"Sat, 25 Oct 2025 11:00:00 GMT"}, "Ratelimit-Remaining": {"0"}, "Ratelimit-Reset": {"Sat, 25 Oct 2025 11:00:30 GMT"}}, []Quota{
			q("", "requests", -1, 0, 0, 30*time.Second),
		}},
		{"garbage", http.Header{"Ratelimit-Limit": {"lots"}, "Ratelimit-Remaining": {"-3"}, "Ratelimit-Reset": {"later"}}, nil},
		{"negative limit in list", http.Header{"Ratelimit-Limit": {"-10, 10;w=1"}}, nil},
	})
}

// OpenAI, https://platform.openai.com/docs/guides/rate-limits ("Rate
// limits in headers"), and a live response quoted on
// https://community.openai.com/t/how-to-get-rate-limit-reset-time-for-response-api/1268905
func TestParseQuotasOpenAI(t *testing.T) {
	runQuotaTests(t, []quotaTest{
		{"docs sample", http.Header{
			"X-Ratelimit-Limit-Requests":     {"60"},
			"X-Ratelimit-Limit-Tokens":       {"150000"},
			"X-Ratelimit-Remaining-Requests": {"59"},
			"X-Ratelimit-Remaining-Tokens":   {"149984"},
			"X-Ratelimit-Reset-Requests":     {"1s"},
			"X-Ratelimit-Reset-Tokens":       {"6m0s"},
		}, []Quota{
			q("requests", "requests", 60, 59, time.Minute, time.Second),
			q("tokens", "tokens", 150000, 149984, time.Minute, 6*time.Minute),
		}},
		{"live response", http.Header{
			"X-Ratelimit-Limit-Requests":               {"5000"},
			"X-Ratelimit-Limit-Tokens":                 {"160000"},
			"X-Ratelimit-Limit-Tokens_usage_based":     {"160000"},
			"X-Ratelimit-Remaining-Requests":           {"4999"},
			"X-Ratelimit-Remaining-Tokens":             {"159976"},
			"X-Ratelimit-Remaining-Tokens_usage_based": {"159976"},
			"X-Ratelimit-Reset-Requests":               {"12ms"},
			"X-Ratelimit-Reset-Tokens":                 {"9ms"},
			"X-Ratelimit-Reset-Tokens_usage_based":     {"9ms"},
		}, []Quota{
			q("requests", "requests", 5000, 4999, time.Minute, 12*time.Millisecond),
			q("tokens", "tokens", 160000, 159976, time.Minute, 9*time.Millisecond),
		}},
		// The revision of 2026-06-26 of the rate-limits guide, its samples.
		{"project tokens", http.Header{
			"X-Ratelimit-Limit-Tokens":             {"150000"},
			"X-Ratelimit-Remaining-Tokens":         {"149984"},
			"X-Ratelimit-Reset-Tokens":             {"6m0s"},
			"X-Ratelimit-Limit-Project-Tokens":     {"60000"},
			"X-Ratelimit-Remaining-Project-Tokens": {"57000"},
			"X-Ratelimit-Reset-Project-Tokens":     {"3s"},
		}, []Quota{
			q("tokens", "tokens", 150000, 149984, time.Minute, 6*time.Minute),
			q("project-tokens", "tokens", 60000, 57000, time.Minute, 3*time.Second),
		}},
		// Azure OpenAI sends -1 and 0 when the limit does not apply:
		// https://github.com/openai/openai-dotnet/issues/838
		{"azure not applicable", http.Header{
			"X-Ratelimit-Limit-Tokens":     {"-1"},
			"X-Ratelimit-Remaining-Tokens": {"-1"},
			"X-Ratelimit-Reset-Tokens":     {"0"},
		}, nil},
		{"fractional and compound resets", http.Header{
			"X-Ratelimit-Reset-Requests": {"2m52.8s"},
			"X-Ratelimit-Reset-Tokens":   {"7.66s"},
		}, []Quota{
			q("requests", "requests", -1, -1, 0, 2*time.Minute+52800*time.Millisecond),
			q("tokens", "tokens", -1, -1, 0, 7660*time.Millisecond),
		}},
		{"hours", http.Header{"X-Ratelimit-Remaining-Requests": {"0"}, "X-Ratelimit-Reset-Requests": {"1h2m"}}, []Quota{
			q("requests", "requests", -1, 0, 0, time.Hour+2*time.Minute),
		}},
		{"garbage reset", http.Header{"X-Ratelimit-Remaining-Requests": {"3"}, "X-Ratelimit-Reset-Requests": {"soon"}}, []Quota{
			q("requests", "requests", -1, 3, 0, 0),
		}},
		{"huge reset saturates", http.Header{"X-Ratelimit-Reset-Tokens": {"9999999999999h"}}, []Quota{
			q("tokens", "tokens", -1, -1, 0, maxHeaderDuration),
		}},
		{"lower-case names via Set", func() http.Header {
			h := http.Header{}
			h.Set("x-ratelimit-limit-requests", "10")
			h.Set("x-ratelimit-remaining-requests", "9")
			return h
		}(), []Quota{q("requests", "requests", 10, 9, time.Minute, 0)}},
	})
}

func TestParseOpenAIReset(t *testing.T) {
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"1s", time.Second, true},
		{"6m0s", 6 * time.Minute, true},
		{"20ms", 20 * time.Millisecond, true},
		{"2m52.8s", 172800 * time.Millisecond, true},
		{"7.66s", 7660 * time.Millisecond, true},
		{"1h2m", 62 * time.Minute, true},
		{"1h2m3s4ms5us6ns", time.Hour + 2*time.Minute + 3*time.Second + 4*time.Millisecond + 5*time.Microsecond + 6, true},
		{"3µs", 3 * time.Microsecond, true},
		{"0", 0, true},
		{"42", 42 * time.Second, true},
		{"-1s", 0, true},
		{"-", 0, false},
		{"", 0, false},
		{"s", 0, false},
		{"1", time.Second, true},
		{"1x", 0, false},
		{"1d", 0, false},
		{"1s2", 0, false},
		{"1 s", 0, false},
		{"1..2s", 0, false},
		{"1s-2s", 0, false},
		{"99999999999999999999h", maxHeaderDuration, true},
		{"8759h59m59s9999999999ms", maxHeaderDuration, true},
	}
	for _, tt := range tests {
		got, ok := parseOpenAIReset(tt.in)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("parseOpenAIReset(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

// Anthropic, https://docs.anthropic.com/en/api/rate-limits ("Response
// headers"): resets are RFC 3339 times, measured against Date.
func TestParseQuotasAnthropic(t *testing.T) {
	runQuotaTests(t, []quotaTest{
		{"all four against Date", http.Header{
			"Date":                                        {"Sat, 25 Oct 2025 11:59:30 GMT"}, // 30 s behind quotaNow
			"Anthropic-Ratelimit-Requests-Limit":          {"50"},
			"Anthropic-Ratelimit-Requests-Remaining":      {"49"},
			"Anthropic-Ratelimit-Requests-Reset":          {"2025-10-25T12:00:00Z"},
			"Anthropic-Ratelimit-Tokens-Limit":            {"50000"},
			"Anthropic-Ratelimit-Tokens-Remaining":        {"49000"},
			"Anthropic-Ratelimit-Tokens-Reset":            {"2025-10-25T12:01:00Z"},
			"Anthropic-Ratelimit-Input-Tokens-Limit":      {"40000"},
			"Anthropic-Ratelimit-Input-Tokens-Remaining":  {"39000"},
			"Anthropic-Ratelimit-Input-Tokens-Reset":      {"2025-10-25T11:59:31.5Z"},
			"Anthropic-Ratelimit-Output-Tokens-Limit":     {"8000"},
			"Anthropic-Ratelimit-Output-Tokens-Remaining": {"8000"},
			"Anthropic-Ratelimit-Output-Tokens-Reset":     {"2025-10-25T13:59:30+02:00"},
			"Retry-After": {"30"},
		}, []Quota{
			q("requests", "requests", 50, 49, time.Minute, 30*time.Second),
			q("tokens", "tokens", 50000, 49000, time.Minute, 90*time.Second),
			q("input-tokens", "input-tokens", 40000, 39000, time.Minute, 1500*time.Millisecond),
			resetsNow(q("output-tokens", "output-tokens", 8000, 8000, time.Minute, 0)),
		}},
		{"against now without Date", http.Header{
			"Anthropic-Ratelimit-Requests-Remaining": {"0"},
			"Anthropic-Ratelimit-Requests-Reset":     {"2025-10-25T12:00:10Z"},
		}, []Quota{q("requests", "requests", -1, 0, 0, 10*time.Second)}},
		{"reset in the past", http.Header{
			"Anthropic-Ratelimit-Tokens-Remaining": {"5"},
			"Anthropic-Ratelimit-Tokens-Reset":     {"2020-01-01T00:00:00Z"},
		}, []Quota{resetsNow(q("tokens", "tokens", -1, 5, 0, 0))}},
		{"garbage", http.Header{
			"Anthropic-Ratelimit-Tokens-Limit": {"many"},
			"Anthropic-Ratelimit-Tokens-Reset": {"tomorrow"},
		}, nil},
	})
}

// GitHub, https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api;
// Discord, https://discord.com/developers/docs/topics/rate-limits.
func TestParseQuotasXRateLimit(t *testing.T) {
	runQuotaTests(t, []quotaTest{
		{"github", http.Header{
			"Date":                  {httpDate(1666132381 - 600)},
			"X-Ratelimit-Limit":     {"5000"},
			"X-Ratelimit-Remaining": {"4997"},
			"X-Ratelimit-Reset":     {"1666132381"},
			"X-Ratelimit-Used":      {"3"},
			"X-Ratelimit-Resource":  {"core"},
		}, []Quota{q("core", "requests", 5000, 4997, 0, 10*time.Minute)}},
		{"github used without remaining", http.Header{
			"X-Ratelimit-Limit":    {"60"},
			"X-Ratelimit-Used":     {"70"},
			"X-Ratelimit-Resource": {"search"},
		}, []Quota{q("search", "requests", 60, 0, 0, 0)}},
		{"discord header example", http.Header{
			"X-Ratelimit-Limit":       {"5"},
			"X-Ratelimit-Remaining":   {"0"},
			"X-Ratelimit-Reset":       {"1470173023"},
			"X-Ratelimit-Reset-After": {"1"},
			"X-Ratelimit-Bucket":      {"abcd1234"},
		}, []Quota{q("abcd1234", "requests", 5, 0, 0, time.Second)}},
		{"discord 429", http.Header{
			"Retry-After":             {"65"},
			"X-Ratelimit-Limit":       {"10"},
			"X-Ratelimit-Remaining":   {"0"},
			"X-Ratelimit-Reset":       {"1470173023.123"},
			"X-Ratelimit-Reset-After": {"64.57"},
			"X-Ratelimit-Bucket":      {"abcd1234"},
			"X-Ratelimit-Scope":       {"user"},
		}, []Quota{q("abcd1234", "requests", 10, 0, 0, 64570*time.Millisecond)}},
		{"fractional epoch against Date", http.Header{
			"Date":              {httpDate(1470173020)},
			"X-Ratelimit-Limit": {"10"},
			"X-Ratelimit-Reset": {"1470173023.123"},
		}, []Quota{q("", "requests", 10, -1, 0, 3123*time.Millisecond)}},
		{"epoch against now without Date", http.Header{
			"X-Ratelimit-Remaining": {"1"},
			"X-Ratelimit-Reset":     {fmt.Sprint(quotaNow.Unix() + 42)},
		}, []Quota{q("", "requests", -1, 1, 0, 42*time.Second)}},
		{"epoch milliseconds", http.Header{
			"Date":                  {httpDate(1470173020)},
			"X-Ratelimit-Remaining": {"1"},
			"X-Ratelimit-Reset":     {"1470173023123"},
		}, []Quota{q("", "requests", -1, 1, 0, 3123*time.Millisecond)}},
		{"delta seconds", http.Header{"X-Ratelimit-Limit": {"20"}, "X-Ratelimit-Remaining": {"7"}, "X-Ratelimit-Reset": {"60"}}, []Quota{
			q("", "requests", 20, 7, 0, time.Minute),
		}},
		{"just below the epoch threshold is a delta", http.Header{"X-Ratelimit-Reset": {"999999999"}}, []Quota{
			q("", "requests", -1, -1, 0, maxHeaderDuration),
		}},
		{"HTTP-date reset", http.Header{"Date": {"Sat, 25 Oct 2025 11:00:00 GMT"}, "X-Ratelimit-Reset": {"Sat, 25 Oct 2025 11:00:05 GMT"}}, []Quota{
			q("", "requests", -1, -1, 0, 5*time.Second),
		}},
		// go-chi/httprate: the window's end in Unix seconds, truncated, in
		// the Date's second: quota comes back within the second, which is
		// not a reset left unsaid.
		{"epoch in the Date's second", http.Header{"Date": {httpDate(1761393600)}, "X-Ratelimit-Limit": {"100"},
			"X-Ratelimit-Remaining": {"40"}, "X-Ratelimit-Reset": {"1761393600"}}, []Quota{
			resetsNow(q("", "requests", 100, 40, 0, 0)),
		}},
		{"epoch in the past", http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"1000000000"}}, []Quota{
			resetsNow(q("", "requests", -1, 0, 0, 0)),
		}},
		{"absurd epoch saturates", http.Header{"X-Ratelimit-Reset": {"99999999999999999999999999"}}, []Quota{
			q("", "requests", -1, -1, 0, maxHeaderDuration),
		}},
		// Envoy and Lokalise send the draft's policy syntax in X-RateLimit-Limit.
		{"envoy policy in limit", http.Header{"X-Ratelimit-Limit": {"10, 10;w=1"}, "X-Ratelimit-Remaining": {"9"}, "X-Ratelimit-Reset": {"1"}}, []Quota{
			q("", "requests", 10, 9, time.Second, time.Second),
		}},
		{"repeated limit lines", http.Header{"X-Ratelimit-Limit": {"100", "100"}}, []Quota{q("", "requests", 100, -1, 0, 0)}},
		{"negatives are not said", http.Header{"X-Ratelimit-Limit": {"-5"}, "X-Ratelimit-Remaining": {"-1"}, "X-Ratelimit-Reset": {"-3"}}, nil},
		{"garbage", http.Header{"X-Ratelimit-Limit": {"ten"}, "X-Ratelimit-Remaining": {"1.5"}, "X-Ratelimit-Reset": {"Tue Feb 16 2021 09:02:42 GMT+0100"}}, nil},
		{"huge counts saturate", http.Header{"X-Ratelimit-Limit": {"99999999999999999999999"}}, []Quota{
			q("", "requests", headerDecimalMax, -1, 0, 0),
		}},
		{"empty values", http.Header{"X-Ratelimit-Limit": {""}, "X-Ratelimit-Remaining": {" "}}, nil},
	})
}

// Shopify, https://shopify.dev/docs/api/admin-rest/usage/rate-limits
func TestParseQuotasShopify(t *testing.T) {
	runQuotaTests(t, []quotaTest{
		{"docs example", http.Header{"X-Shopify-Shop-Api-Call-Limit": {"32/40"}}, []Quota{q("", "requests", 40, 8, 0, 0)}},
		{"full bucket", http.Header{"X-Shopify-Shop-Api-Call-Limit": {"40/40"}}, []Quota{q("", "requests", 40, 0, 0, 0)}},
		{"over full", http.Header{"X-Shopify-Shop-Api-Call-Limit": {"41/40"}}, []Quota{q("", "requests", 40, 0, 0, 0)}},
		{"spaces", http.Header{"X-Shopify-Shop-Api-Call-Limit": {" 1 / 80 "}}, []Quota{q("", "requests", 80, 79, 0, 0)}},
		{"no slash", http.Header{"X-Shopify-Shop-Api-Call-Limit": {"32"}}, nil},
		{"missing limit", http.Header{"X-Shopify-Shop-Api-Call-Limit": {"32/"}}, nil},
		{"negative", http.Header{"X-Shopify-Shop-Api-Call-Limit": {"-1/40"}}, nil},
	})
}

// TestParseQuotasOrder checks the documented order when one response
// carries every family.
func TestParseQuotasOrder(t *testing.T) {
	h := http.Header{
		"X-Shopify-Shop-Api-Call-Limit":      {"1/40"},
		"Anthropic-Ratelimit-Requests-Limit": {"50"},
		"X-Ratelimit-Limit":                  {"5000"},
		"X-Ratelimit-Limit-Tokens":           {"1000"},
		"X-Ratelimit-Limit-Requests":         {"60"},
		"Ratelimit-Limit":                    {"7"},
		"Ratelimit":                          {`"p";r=1`},
		"Ratelimit-Policy":                   {`"p";q=2`},
	}
	var got []string
	for _, q := range ParseQuotas(h, quotaNow) {
		got = append(got, fmt.Sprintf("%s/%d", q.Name, q.Limit))
	}
	want := []string{"p/2", "/7", "requests/60", "tokens/1000", "/5000", "requests/50", "/40"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
}

// TestParseQuotasBounded checks that a huge header cannot make ParseQuotas
// return, or parse, without bound.
func TestParseQuotasBounded(t *testing.T) {
	var b strings.Builder
	for i := range 300 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%d";q=%d`, i, i)
	}
	if got := ParseQuotas(http.Header{"Ratelimit-Policy": {b.String()}}, quotaNow); len(got) != maxQuotas {
		t.Errorf("300 policies: got %d quotas, want %d", len(got), maxQuotas)
	}

	huge := strings.Repeat(`"p";q=1,`, 100_000) + `"p";q=1`
	if got := ParseQuotas(http.Header{"Ratelimit-Policy": {huge}, "Ratelimit": {huge}}, quotaNow); len(got) != 0 {
		t.Errorf("100k-member fields: got %d quotas, want them ignored", len(got))
	}
	allocs := testing.AllocsPerRun(10, func() {
		ParseQuotas(http.Header{"Ratelimit-Policy": {huge}}, quotaNow)
	})
	if allocs > 2 {
		t.Errorf("an overlong field was parsed: %v allocations", allocs)
	}
}

// TestParseQuotasNoAllocWithoutHeaders pins the hot path: most responses
// carry no rate-limit header and must cost no allocation.
func TestParseQuotasNoAllocWithoutHeaders(t *testing.T) {
	h := http.Header{
		"Content-Type":   {"application/json"},
		"Content-Length": {"1234"},
		"Date":           {"Sat, 25 Oct 2025 11:59:30 GMT"},
		"Server":         {"cloudflare"},
		"X-Request-Id":   {"req_123"},
	}
	if allocs := testing.AllocsPerRun(100, func() { ParseQuotas(h, quotaNow) }); allocs != 0 {
		t.Errorf("ParseQuotas without rate-limit headers: %v allocations, want 0", allocs)
	}
}

func openAIHeaders() http.Header {
	return http.Header{
		"Date":                           {"Sat, 25 Oct 2025 11:59:30 GMT"},
		"Content-Type":                   {"application/json"},
		"Openai-Processing-Ms":           {"1032"},
		"X-Request-Id":                   {"req_deaa3616cbd15d33b4db96b3ba74d2b4"},
		"X-Ratelimit-Limit-Requests":     {"60"},
		"X-Ratelimit-Limit-Tokens":       {"150000"},
		"X-Ratelimit-Remaining-Requests": {"59"},
		"X-Ratelimit-Remaining-Tokens":   {"149984"},
		"X-Ratelimit-Reset-Requests":     {"1s"},
		"X-Ratelimit-Reset-Tokens":       {"6m0s"},
	}
}

func BenchmarkParseQuotas_OpenAI(b *testing.B) {
	h := openAIHeaders()
	b.ReportAllocs()
	for b.Loop() {
		ParseQuotas(h, quotaNow)
	}
}

func BenchmarkParseQuotas_NoHeaders(b *testing.B) {
	h := http.Header{
		"Date":           {"Sat, 25 Oct 2025 11:59:30 GMT"},
		"Content-Type":   {"application/json"},
		"Content-Length": {"1234"},
		"Server":         {"cloudflare"},
		"X-Request-Id":   {"req_deaa3616cbd15d33b4db96b3ba74d2b4"},
	}
	b.ReportAllocs()
	for b.Loop() {
		ParseQuotas(h, quotaNow)
	}
}

func BenchmarkParseQuotas_IETF(b *testing.B) {
	h := http.Header{
		"Date":             {"Sat, 25 Oct 2025 11:59:30 GMT"},
		"Content-Type":     {"application/json"},
		"Ratelimit-Policy": {`"hour";q=1000;w=3600, "day";q=5000;w=86400`},
		"Ratelimit":        {`"day";r=100;t=36000`},
	}
	b.ReportAllocs()
	for b.Loop() {
		ParseQuotas(h, quotaNow)
	}
}

// quotaFuzzKeys are the headers FuzzParseQuotas fills, one per argument.
var quotaFuzzKeys = [...]string{
	"Ratelimit-Policy", "Ratelimit", "Ratelimit-Limit", "Ratelimit-Reset",
	"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset",
	"X-Ratelimit-Reset-Tokens", "Anthropic-Ratelimit-Tokens-Reset",
	"X-Shopify-Shop-Api-Call-Limit", "Date",
}

func FuzzParseQuotas(f *testing.F) {
	f.Add(`"burst";q=100;w=60,"daily";q=1000;w=86400`, `"burst";r=50;t=30`, "", "", "", "", "", "", "", "", "")
	f.Add("100;w=10", "limit=100, remaining=50, reset=5", "", "", "", "", "", "", "", "", "")
	f.Add("", "", "10, 10;w=1, 50;w=60", "50", "", "", "", "", "", "", "")
	f.Add("", "", "", "", "5000", "4997", "1666132381", "", "", "", "Tue, 18 Oct 2022 22:23:01 GMT")
	f.Add("", "", "", "", "10, 10;w=1", "0", "1470173023.123", "6m0s", "2025-10-25T12:00:00Z", "32/40", "")
	f.Add(`"d";q=999999999999999;w=999999999999999`, `"d";r=-1;t=999999999999999`, "-1", "-1", "-1", "-1", "-1", "-1s", "9999-12-31T23:59:59Z", "-1/-1", "Mon, 01 Jan 0001 00:00:00 GMT")
	f.Add("", "", "", "99999999999999999999", "99999999999999999999", "", "99999999999999999999.9", "99999999999h", "", "99999999999999999999/1", "")
	f.Fuzz(func(t *testing.T, policy, limits, rlLimit, rlReset, xLimit, xRemaining, xReset, openAIReset, anthropicReset, shopify, date string) {
		h := http.Header{}
		for i, v := range [...]string{policy, limits, rlLimit, rlReset, xLimit, xRemaining, xReset, openAIReset, anthropicReset, shopify, date} {
			if v != "" {
				h[quotaFuzzKeys[i]] = strings.Split(v, "\n") // let the fuzzer try multi-line fields
			}
		}
		qs := ParseQuotas(h, quotaNow)
		if len(qs) > maxQuotas {
			t.Fatalf("%d quotas, more than %d", len(qs), maxQuotas)
		}
		for _, q := range qs {
			if q.Limit < -1 || q.Remaining < -1 {
				t.Errorf("%+v: count below -1", q)
			}
			if q.Window < 0 || q.Window > maxHeaderDuration || q.Reset < 0 || q.Reset > maxHeaderDuration {
				t.Errorf("%+v: duration outside [0, %v]", q, maxHeaderDuration)
			}
			if q.Unit == "" {
				t.Errorf("%+v: no unit", q)
			}
		}
	})
}
