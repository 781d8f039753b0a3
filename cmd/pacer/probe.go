package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/internal/fakeclock"
	"github.com/pacer-go/pacer/ratelimitheader"
)

// probeFlags is what the probe command's flags set.
type probeFlags struct {
	method   string
	headers  headerList
	timeout  time.Duration
	headroom float64
}

// headerList is the repeatable -H flag.
type headerList []string

func (h *headerList) String() string { return strings.Join(*h, ", ") }

func (h *headerList) Set(v string) error {
	name, _, ok := strings.Cut(v, ":")
	if !ok || strings.TrimSpace(name) == "" || strings.ContainsAny(strings.TrimSpace(name), " \t") {
		return fmt.Errorf("header %q: want 'Name: value'", redactHeaderArg(v))
	}
	*h = append(*h, v)
	return nil
}

func newProbeFlagSet(f *probeFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run reports errors and usage itself
	fs.StringVar(&f.method, "X", http.MethodGet, "the request's `method`")
	fs.Var(&f.headers, "H", "a request header, 'Name: value'; repeat for more")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Second, "give up on the request after this long")
	fs.Float64Var(&f.headroom, "headroom", 0.9, "the share of a published limit pacer would use, in (0, 1]; 0.9 is pacer's default (WithHeadroom)")
	return fs
}

func printProbeUsage(w io.Writer) {
	var f probeFlags
	fs := newProbeFlagSet(&f)
	fmt.Fprint(w, `Usage: pacer probe [flags] URL

Sends one request (GET unless -X says otherwise) and prints what pacer
understands from the response: the provider it recognises by its headers,
each quota they report, Retry-After, the pace pacer would keep, and what
the one response lets it forecast: until when each quota's remaining
count must last, and, where the window's length is said, when at the
pace spent so far it runs out.

Credentials are never printed: the values of Authorization,
Proxy-Authorization, Cookie, X-Api-Key, Api-Key and of any header or query
parameter whose name contains key, token, secret, password, signature or
auth are shown as [redacted].

Flags (they may come before or after the URL):
`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprint(w, `
Example:
  pacer probe -H "Authorization: Bearer $OPENAI_API_KEY" https://api.openai.com/v1/models
`)
}

// runProbe is the probe command.
func runProbe(args []string, stdout, stderr io.Writer) int {
	var f probeFlags
	fs := newProbeFlagSet(&f)
	var target string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printProbeUsage(stdout)
				return exitOK
			}
			fmt.Fprintf(stderr, "pacer probe: %v\n\n", err)
			printProbeUsage(stderr)
			return exitUsage
		}
		if fs.NArg() == 0 {
			break
		}
		if target != "" {
			fmt.Fprintf(stderr, "pacer probe: give one URL, not %q and %q\n", redactURL(target), redactURL(fs.Arg(0)))
			return exitUsage
		}
		target, args = fs.Arg(0), fs.Args()[1:]
	}
	switch {
	case target == "":
		fmt.Fprintln(stderr, "pacer probe: give the URL to probe")
		printProbeUsage(stderr)
		return exitUsage
	case f.timeout <= 0:
		fmt.Fprintf(stderr, "pacer probe: -timeout %v must be positive\n", f.timeout)
		return exitUsage
	case !(f.headroom > 0 && f.headroom <= 1):
		fmt.Fprintf(stderr, "pacer probe: -headroom %v must be in (0, 1]\n", f.headroom)
		return exitUsage
	}
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fmt.Fprintf(stderr, "pacer probe: %q is not an http or https URL\n", redactURL(target))
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, f.method, u.String(), nil)
	if err != nil {
		fmt.Fprintf(stderr, "pacer probe: method %q: %v\n", f.method, err)
		return exitUsage
	}
	for _, h := range f.headers {
		name, value, _ := strings.Cut(h, ":")
		req.Header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}

	fmt.Fprintf(stdout, "%s %s\n", req.Method, redactURL(target))
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range req.Header {
			if !yield(k) {
				return
			}
		}
	})
	for _, name := range names {
		for _, v := range req.Header.Values(name) {
			fmt.Fprintf(stdout, "> %s: %s\n", name, redactHeader(name, v))
		}
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		// A *url.Error repeats the URL, query and all: say it without.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		fmt.Fprintf(stderr, "pacer probe: %s %s: %v\n", req.Method, redactURL(target), err)
		return exitFailed
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	fmt.Fprintf(stdout, "< %s (in %v)\n", resp.Status, time.Since(start).Round(time.Millisecond))
	printUnderstanding(stdout, resp, time.Now(), f.headroom)
	return exitOK
}

// printUnderstanding prints what pacer makes of resp's headers.
func printUnderstanding(w io.Writer, resp *http.Response, now time.Time, headroom float64) {
	for _, name := range rateLimitHeaderNames(resp.Header) {
		for _, v := range resp.Header.Values(name) {
			fmt.Fprintf(w, "< %s: %s\n", name, v)
		}
	}
	fmt.Fprintln(w)
	families := recognise(resp.Header)
	if len(families) == 0 {
		fmt.Fprintln(w, "Provider: none recognised (no rate-limit headers)")
	} else {
		fmt.Fprintf(w, "Provider: %s\n", strings.Join(families, "; "))
	}
	quotas := ratelimitheader.ParseQuotas(resp.Header, now)
	if len(quotas) == 0 {
		fmt.Fprintln(w, "Quotas: none")
	} else {
		fmt.Fprintln(w, "Quotas:")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  NAME\tUNIT\tLIMIT\tREMAINING\tWINDOW\tRESET")
		for _, q := range quotas {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", orDash(q.Name), q.Unit, count(q.Limit), count(q.Remaining), duration(q.Window), reset(q))
		}
		tw.Flush()
	}
	printUnified(w, resp.Header, now)
	if wait, ok := ratelimitheader.RetryAfter(resp.Header, now); ok {
		fmt.Fprintf(w, "Retry-After: %v\n", wait)
	} else {
		fmt.Fprintln(w, "Retry-After: none")
	}
	for _, line := range paceLines(resp, quotas, now, headroom) {
		fmt.Fprintln(w, line)
	}
	refills := slices.ContainsFunc(families, func(f string) bool {
		return strings.HasPrefix(f, "openai ") || strings.HasPrefix(f, "anthropic ")
	})
	for _, line := range forecastLines(quotas, now, refills) {
		fmt.Fprintln(w, line)
	}
}

// paceLines replays the response through a Transport with a scope for each
// quota, and says what each scope learned: pacer's own logic, not a copy.
// The Transport's clock stands still at now, the instant the headers were
// read at, so a pause is printed as the response set it, not less the
// moments the replay took. The replay's one call is admitted at once (its
// scopes are new), so no timer of that clock has to fire.
func paceLines(resp *http.Response, quotas []ratelimitheader.Quota, now time.Time, headroom float64) []string {
	if len(quotas) == 0 {
		return []string{"pacer would pace at: the limit you configure (the response publishes none)"}
	}
	opts := []pacer.Option{pacer.WithoutRetry(), pacer.WithHeadroom(headroom), clock.With[pacer.Option](fakeclock.New(now).AsClock())}
	var scopes []string
	byScope := map[string]ratelimitheader.Quota{}
	for i, q := range quotas {
		name := fmt.Sprintf("%d %s", i+1, orDash(q.Name))
		scopes = append(scopes, name)
		byScope[name] = q
		opts = append(opts, pacer.WithScope(pacer.Scope{Name: name, Unit: q.Unit, Policy: q.Name}))
	}
	opts = append(opts, pacer.WithRoute(func(_ *http.Request, ch []pacer.Charge) []pacer.Charge {
		ch = ch[:0] // not the default scope, which would take the unnamed quotas
		for _, s := range scopes {
			ch = append(ch, pacer.Charge{Scope: s})
		}
		return ch
	}))
	replay := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: resp.StatusCode, Status: resp.Status, Header: resp.Header, Body: http.NoBody, Request: req}, nil
	})
	tr := pacer.New(replay, opts...)
	if err := tr.Err(); err != nil {
		return []string{"pacer would pace at: unknown (" + err.Error() + ")"}
	}
	req, _ := http.NewRequest(http.MethodGet, "http://probe.invalid/", nil)
	if r, err := tr.RoundTrip(req); err == nil {
		r.Body.Close()
	}
	var lines []string
	for _, s := range tr.Stats().Scopes {
		q, ok := byScope[s.Name]
		if !ok {
			continue
		}
		label := fmt.Sprintf("%s (%s)", orDash(q.Name), q.Unit)
		switch {
		case s.Learned:
			per := q.Window
			lines = append(lines, fmt.Sprintf("pacer would pace %s at %.4g %s/s: %.4g per %v of the published %d, burst %.4g (set by %s)",
				label, s.Rate, q.Unit, s.Rate*per.Seconds(), per, q.Limit, s.Burst, s.Why))
		case q.Limit > 0:
			lines = append(lines, fmt.Sprintf("pacer would pace %s at: the limit you configure; %d is published without a window, so pacer keeps to the remaining count instead", label, q.Limit))
		default:
			lines = append(lines, fmt.Sprintf("pacer would pace %s at: the limit you configure, kept to the remaining count", label))
		}
		if s.Cooldown > 0 {
			lines = append(lines, fmt.Sprintf("  and pause it for %v first", s.Cooldown.Round(time.Millisecond)))
		}
	}
	return lines
}

// printUnified prints Anthropic's unified windows (5-hour, weekly), which
// report a share used, not a count; nothing when h has none.
func printUnified(w io.Writer, h http.Header, now time.Time) {
	u, ok := ratelimitheader.ParseUnified(h, now)
	if !ok {
		return
	}
	fmt.Fprintf(w, "Unified windows (status %s, binding %s):\n", orDash(u.Status), orDash(u.Claim))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tPERIOD\tUSED\tRESET\tSTATUS")
	for _, win := range u.Windows {
		used := "-"
		if win.Used >= 0 {
			used = fmt.Sprintf("%.4g%%", 100*win.Used)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", win.Name, duration(win.Period), used, duration(win.Reset), orDash(win.Status))
	}
	tw.Flush()
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// recognise names the header families present, most specific first.
func recognise(h http.Header) []string {
	has := func(names ...string) bool {
		for _, n := range names {
			if _, ok := h[n]; ok {
				return true
			}
		}
		return false
	}
	hasPrefix := func(p string) bool {
		for k := range h {
			if strings.HasPrefix(k, p) {
				return true
			}
		}
		return false
	}
	var out []string
	if hasPrefix("Anthropic-Ratelimit-") {
		out = append(out, "anthropic (anthropic-ratelimit-*)")
	}
	if has("X-Ratelimit-Limit-Requests", "X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Remaining-Tokens") {
		out = append(out, "openai (x-ratelimit-*-requests, x-ratelimit-*-tokens)")
	}
	switch {
	case has("X-Ratelimit-Resource", "X-Ratelimit-Used"):
		out = append(out, "github (x-ratelimit-* with resource and used)")
	case has("X-Ratelimit-Bucket", "X-Ratelimit-Reset-After"):
		out = append(out, "discord (x-ratelimit-* with bucket and reset-after)")
	case has("X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset"):
		out = append(out, "x-ratelimit (x-ratelimit-limit, -remaining, -reset)")
	}
	if has("X-Shopify-Shop-Api-Call-Limit") {
		out = append(out, "shopify (x-shopify-shop-api-call-limit)")
	}
	switch {
	case has("Ratelimit") && strings.Contains(h.Get("Ratelimit"), "limit="):
		out = append(out, "ietf draft -07 (ratelimit: limit=, remaining=, reset=)")
	case has("Ratelimit", "Ratelimit-Policy") && !has("Ratelimit-Limit"):
		out = append(out, "ietf draft -08 or later (ratelimit, ratelimit-policy)")
	case has("Ratelimit-Limit", "Ratelimit-Remaining", "Ratelimit-Reset"):
		out = append(out, "ietf draft -00 to -06 (ratelimit-limit, -remaining, -reset)")
	}
	return out
}

// rateLimitHeaderNames returns the names of the response's headers that
// bear on pacing, sorted. Nothing else of the response is echoed.
func rateLimitHeaderNames(h http.Header) []string {
	var names []string
	for k := range h {
		switch {
		case strings.HasPrefix(k, "Ratelimit"), strings.HasPrefix(k, "X-Ratelimit-"), strings.HasPrefix(k, "Anthropic-Ratelimit-"),
			k == "Retry-After", k == "Retry-After-Ms", k == "X-Shopify-Shop-Api-Call-Limit", k == "Date":
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return names
}

// credentialName matches the names of headers and query parameters whose
// values are credentials.
var credentialName = regexp.MustCompile(`(?i)key|token|secret|passw|signature|auth|cookie|session`)

const redacted = "[redacted]"

// redactHeader returns the value to print for a request header.
func redactHeader(name, value string) string {
	if credentialName.MatchString(name) {
		return redacted
	}
	return value
}

// redactHeaderArg redacts the value of a -H argument for an error message.
func redactHeaderArg(arg string) string {
	name, _, ok := strings.Cut(arg, ":")
	if !ok {
		return redacted // no name to judge it by
	}
	return name + ": " + redactHeader(name, "value")
}

// redactURL returns raw with its password and the values of credential
// query parameters replaced. A URL that does not parse is not printed.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return redacted
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "redacted")
	}
	if u.RawQuery != "" {
		q := u.Query()
		for name, vs := range q {
			if credentialName.MatchString(name) {
				for i := range vs {
					vs[i] = redacted
				}
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func count(n int64) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// reset prints a quota's reset: "-" when not said, "0s" when it is now.
func reset(q ratelimitheader.Quota) string {
	if q.HasReset && q.Reset == 0 {
		return "0s"
	}
	return duration(q.Reset)
}

func duration(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.String()
}
