package ratelimitheader

import (
	"net/http"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// unifiedHeader builds a response header from canonical-form-agnostic pairs.
func unifiedHeader(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func share(name string, period time.Duration, used float64, reset time.Duration) Window {
	return Window{Name: name, Period: period, Used: used, Limit: -1, Remaining: -1, Reset: reset, HasReset: reset != 0, Threshold: -1}
}

// The vectors are the responses public parsers quote (unified.go cites
// them); Anthropic's own documentation states none. The clock is
// quotaNow, 2025-10-25 12:00 UTC, and the resets are Unix seconds.
func TestParseUnified(t *testing.T) {
	const week = 7 * 24 * time.Hour
	in2h := quotaNow.Add(2 * time.Hour).Unix()
	in3d := quotaNow.Add(72 * time.Hour).Unix()
	for _, tt := range []struct {
		name   string
		header http.Header
		want   Unified
	}{
		{"CLIProxyAPI #3169: a warning on the weekly window",
			unifiedHeader("anthropic-ratelimit-unified-status", "allowed_warning",
				"anthropic-ratelimit-unified-5h-utilization", "0.35",
				"anthropic-ratelimit-unified-7d-utilization", "0.85",
				"anthropic-ratelimit-unified-7d-surpassed-threshold", "0.75"),
			Unified{Status: "allowed_warning", FallbackShare: -1, Windows: []Window{
				share("5h", 5*time.Hour, 0.35, 0),
				func() Window { w := share("7d", week, 0.85, 0); w.Threshold = 0.75; return w }(),
			}}},
		{"opencode #49499: both windows with their resets",
			unifiedHeader("anthropic-ratelimit-unified-status", "allowed",
				"anthropic-ratelimit-unified-5h-utilization", "0.42",
				"anthropic-ratelimit-unified-5h-reset", itoa(in2h),
				"anthropic-ratelimit-unified-7d-utilization", "0.30",
				"anthropic-ratelimit-unified-7d-reset", itoa(in3d),
				"anthropic-ratelimit-unified-representative-claim", "five_hour",
				"anthropic-ratelimit-unified-reset", itoa(in2h)),
			Unified{Status: "allowed", Reset: 2 * time.Hour, HasReset: true, Claim: "five_hour", FallbackShare: -1, Windows: []Window{
				share("5h", 5*time.Hour, 0.42, 2*time.Hour), share("7d", week, 0.30, 72*time.Hour)}}},
		{"claude-code #41506: fallback and overage on every response",
			unifiedHeader("anthropic-ratelimit-unified-fallback-percentage", "0.5",
				"anthropic-ratelimit-unified-overage-status", "rejected",
				"anthropic-ratelimit-unified-overage-disabled-reason", "org_level_disabled",
				"anthropic-ratelimit-unified-5h-utilization", "0.7370692663445869"), // weave-os/router #837's precision
			Unified{FallbackShare: 0.5, OverageStatus: "rejected", Windows: []Window{share("5h", 5*time.Hour, 0.737069266, 0)}}}, // nine digits kept
		{"an RFC 3339 reset, a rejected window",
			unifiedHeader("anthropic-ratelimit-unified-5h-reset", quotaNow.Add(90*time.Minute).Format(time.RFC3339),
				"anthropic-ratelimit-unified-5h-status", "rejected",
				"anthropic-ratelimit-unified-5h-utilization", "1"),
			Unified{FallbackShare: -1, Windows: []Window{func() Window { w := share("5h", 5*time.Hour, 1, 90*time.Minute); w.Status = "rejected"; return w }()}}},
		{"garbage is not said; a share past 1 is 1",
			unifiedHeader("anthropic-ratelimit-unified-status", "allowed; drop table",
				"anthropic-ratelimit-unified-5h-utilization", "-0.5",
				"anthropic-ratelimit-unified-7d-utilization", "1.7",
				"anthropic-ratelimit-unified-7d_opus-utilization", "NaN",
				"anthropic-ratelimit-unified-7d-reset", "soon",
				"anthropic-ratelimit-unified-fallback-percentage", "lots"),
			Unified{FallbackShare: -1, Windows: []Window{share("5h", 5*time.Hour, -1, 0), share("7d", week, 1, 0), share("7d_opus", week, -1, 0)}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseUnified(tt.header, quotaNow)
			if !ok || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseUnified = %+v, %v\nwant %+v", got, ok, tt.want)
			}
		})
	}
	if _, ok := ParseUnified(unifiedHeader("anthropic-ratelimit-requests-limit", "50"), quotaNow); ok {
		t.Error("ParseUnified reported unified limits on a response without them")
	}
}

func TestParseUnifiedAllocatesNothingWithoutUnifiedHeaders(t *testing.T) {
	h := unifiedHeader("x-ratelimit-limit-requests", "500", "x-ratelimit-remaining-requests", "499", "content-type", "application/json")
	if n := testing.AllocsPerRun(100, func() { ParseUnified(h, quotaNow) }); n != 0 {
		t.Errorf("ParseUnified allocates %v times on a response without unified headers, want 0", n)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
