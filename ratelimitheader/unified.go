package ratelimitheader

import (
	"net/http"
	"strings"
	"time"
)

// Anthropic's unified limits: the windows of a subscription (a 5-hour
// window, a weekly one, and weekly ones per model family), each reported
// as the share of it used and when it reopens, with an overall status.
//
// Anthropic's own rate-limits page does not document them: read
// 2026-12-02, https://docs.anthropic.com/en/api/rate-limits ("Response
// headers") lists retry-after and the anthropic-ratelimit-{requests,
// tokens,input-tokens,output-tokens}-{limit,remaining,reset} headers only.
// What follows is what public parsers and captures show, read 2026-12-02:
//
//   - https://github.com/Aider-AI/aider/pull/5722: "Anthropic sends
//     anthropic-ratelimit-unified-5h-utilization and -reset";
//   - https://github.com/weave-os/router/pull/837, from a capture of 53,796
//     production responses: the weekly window is spelled "7d" ("the parser
//     read -weekly-* (zero occurrences in the capture)"), and utilization
//     values "are 0–1 fractions on the wire (e.g. 0.7370692663445869), not
//     0–100 percents";
//   - https://github.com/router-for-me/CLIProxyAPI/pull/3169: a real
//     response with "anthropic-ratelimit-unified-status: allowed_warning",
//     "-5h-utilization: 0.35", "-7d-utilization: 0.85",
//     "-7d-surpassed-threshold: 0.75";
//   - https://github.com/manaflow-ai/subrouter/pull/24: status "allowed |
//     allowed_warning | rejected", and -reset, -fallback,
//     -representative-claim, -overage-status, -overage-reset beside the
//     windows' own -reset;
//   - https://github.com/anthropics/claude-code/issues/41506: "-fallback-
//     percentage: 0.5" and "-overage-status: rejected" on every response;
//   - https://github.com/lidge-jun/opencodex/pull/3809: each window's
//     -reset is "the epoch each window reopens" (Unix seconds).
//
// A reset is read as parseResetField reads X-RateLimit-Reset (Unix seconds
// from 1e9 on, an HTTP-date), or as an RFC 3339 time, which some
// captures show.

// unifiedPrefix starts every unified header, in canonical form.
const unifiedPrefix = "Anthropic-Ratelimit-Unified-"

// A Window is a long quota a response reports: one of Anthropic's unified
// windows, as a share used, or (in pacer's Stats) a count whose window is
// an hour or more. Fields the headers do not state keep their "not said"
// values. Its zero value says nothing but a Used of 0; use the parsers.
type Window struct {
	// Name is the window's as the headers spell it, lower-case: "5h",
	// "7d", "7d_opus"; for a count, the quota's Name.
	Name string
	// Period is how long the window is: 5 hours for "5h" and "five_hour",
	// 7 days for a name that starts with "7d", "seven_day" or "weekly";
	// 0 when the name does not say.
	Period time.Duration
	// Used is the share of the window spent, from 0 to 1; -1 when not said.
	// A value beyond 1 reads as 1; a negative or unparsable one as not said.
	Used float64
	// Limit and Remaining are the window's counts, for a quota that gives
	// them; -1 for a share-only window.
	Limit, Remaining int64
	// Reset is the time until the window reopens (clamped to a year), when
	// HasReset.
	Reset    time.Duration
	HasReset bool
	// Status is the window's own status ("allowed", "allowed_warning",
	// "rejected"), "" when not said.
	Status string
	// Threshold is the share past which the provider warns
	// (-surpassed-threshold), -1 when not said.
	Threshold float64
}

// Unified is what Anthropic's unified headers say of an account's limits.
type Unified struct {
	// Status is anthropic-ratelimit-unified-status: "allowed",
	// "allowed_warning" or "rejected"; "" when not said.
	Status string
	// Reset is anthropic-ratelimit-unified-reset, the time until the
	// binding window reopens, when HasReset.
	Reset    time.Duration
	HasReset bool
	// Claim is -representative-claim: which window binds ("five_hour",
	// "seven_day", …); "" when not said.
	Claim string
	// Fallback is -fallback ("available", say), and FallbackShare
	// -fallback-percentage as a share (0.5), -1 when not said.
	Fallback      string
	FallbackShare float64
	// OverageStatus is -overage-status, and OverageReset -overage-reset
	// when HasOverageReset.
	OverageStatus   string
	OverageReset    time.Duration
	HasOverageReset bool
	// Windows are the windows the headers name, in name order.
	Windows []Window
}

// ParseUnified reads Anthropic's anthropic-ratelimit-unified-* headers
// from h. now is the client's time, used as in ParseQuotas to read an
// absolute reset when h has no valid Date. ok is false, and nothing is
// allocated, when h holds none of them. Values are checked, never trusted,
// as ParseQuotas checks its own; at most 16 windows are reported. It never
// panics and keeps no state.
func ParseUnified(h http.Header, now time.Time) (u Unified, ok bool) {
	u.FallbackShare = -1
	for k, v := range h {
		rest, found := strings.CutPrefix(k, unifiedPrefix)
		if !found || len(v) == 0 {
			continue
		}
		ok = true
		val := strings.TrimSpace(v[0])
		switch rest {
		case "Status":
			u.Status = word(val)
		case "Reset":
			u.Reset, u.HasReset = parseUnifiedReset(val, h, now)
		case "Representative-Claim":
			u.Claim = word(val)
		case "Fallback":
			u.Fallback = word(val)
		case "Fallback-Percentage":
			u.FallbackShare = parseShare(val)
		case "Overage-Status":
			u.OverageStatus = word(val)
		case "Overage-Reset":
			u.OverageReset, u.HasOverageReset = parseUnifiedReset(val, h, now)
		default:
			name, field, cut := strings.Cut(rest, "-")
			if !cut || name == "" || strings.HasPrefix(name, "Overage") {
				continue
			}
			w := u.window(strings.ToLower(name))
			if w == nil {
				continue
			}
			switch field {
			case "Utilization":
				w.Used = parseShare(val)
			case "Reset":
				w.Reset, w.HasReset = parseUnifiedReset(val, h, now)
			case "Status":
				w.Status = word(val)
			case "Surpassed-Threshold":
				w.Threshold = parseShare(val)
			}
		}
	}
	if len(u.Windows) > 1 {
		sortWindows(u.Windows)
	}
	return u, ok
}

// window returns the window of u named name, added if new; nil when u
// holds maxQuotas windows already.
func (u *Unified) window(name string) *Window {
	for i := range u.Windows {
		if u.Windows[i].Name == name {
			return &u.Windows[i]
		}
	}
	if len(u.Windows) >= maxQuotas {
		return nil
	}
	u.Windows = append(u.Windows, Window{Name: name, Period: periodOf(name), Used: -1, Limit: -1, Remaining: -1, Threshold: -1})
	return &u.Windows[len(u.Windows)-1]
}

// periodOf is how long a window named name is, 0 when the name does not
// say.
func periodOf(name string) time.Duration {
	switch {
	case name == "5h" || name == "five_hour":
		return 5 * time.Hour
	case strings.HasPrefix(name, "7d") || strings.HasPrefix(name, "seven_day") || strings.HasPrefix(name, "weekly"):
		return 7 * 24 * time.Hour
	}
	return 0
}

func sortWindows(ws []Window) {
	for i := 1; i < len(ws); i++ { // a handful: insertion sort, no allocation
		for j := i; j > 0 && ws[j].Name < ws[j-1].Name; j-- {
			ws[j], ws[j-1] = ws[j-1], ws[j]
		}
	}
}

// parseShare reads a share from 0 to 1 ("0.35"); a value beyond 1 reads
// as 1, a negative or unparsable one as -1, not said.
func parseShare(s string) float64 {
	n, ok := parseDecimalNumber(s)
	if !ok || n.neg {
		return -1
	}
	return min(1, float64(n.whole)+float64(n.frac)/float64(n.scale))
}

// parseUnifiedReset reads a reset as Unix seconds (or any form
// parseResetField takes), or an RFC 3339 time.
func parseUnifiedReset(v string, h http.Header, now time.Time) (time.Duration, bool) {
	if d, ok := parseResetField(v, h, now); ok {
		return d, true
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return clampHeaderDuration(t.Sub(ResponseTime(h, now))), true
	}
	return 0, false
}

// word keeps a status word as sent, if it is a plain token of at most 64
// bytes; anything else reads as not said.
func word(s string) string {
	if len(s) > 64 {
		return ""
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return ""
		}
	}
	return s
}
