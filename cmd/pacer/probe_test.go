package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// The Date every test server sends, so that absolute resets are fixed.
const probeDate = "Sat, 25 Oct 2025 12:00:00 GMT"

// serve starts a server that answers status with headers, and records the
// request it got.
func serve(t *testing.T, status int, headers map[string]string) (url string, got func() *http.Request) {
	t.Helper()
	var mu sync.Mutex
	var last *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		last = r
		mu.Unlock()
		w.Header().Set("Date", probeDate)
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() *http.Request {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}

// lines matches each want, a regular expression, against a line of out, in
// order; spaces in want match any run of spaces.
func lines(t *testing.T, out string, want ...string) {
	t.Helper()
	rest := out
	for _, w := range want {
		re := regexp.MustCompile("(?m)^" + strings.ReplaceAll(w, " ", ` +`) + "$")
		loc := re.FindStringIndex(rest)
		if loc == nil {
			t.Errorf("no line matching %q in order in:\n%s", w, out)
			return
		}
		rest = rest[loc[1]:]
	}
}

// Each family, with headers from the providers' documentation (the same as
// ratelimit_headers_test.go's), is recognised and read.
func TestProbeEachHeaderFamily(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		headers map[string]string
		want    []string
	}{
		{"ietf current draft", 200, map[string]string{"RateLimit-Policy": `"basic";q=100;w=60`, "RateLimit": `"basic";r=60;t=58`}, []string{
			`Provider: ietf draft -08 or later \(ratelimit, ratelimit-policy\)`,
			`  NAME UNIT LIMIT REMAINING WINDOW RESET`,
			`  basic requests 100 60 1m0s 58s`,
			`Retry-After: none`,
			`pacer would pace basic \(requests\) at 1.017 requests/s: 61.03 per 1m0s of the published 100, burst 10 \(set by what the provider reports remains\)`,
			// 40 spent in the 2s since the window began: 20/s, and the 60
			// left last 3s of the 58s to the reset.
			`Forecast for basic \(requests\): 60 of 100 remain for 58s: to last to the reset, at most 1.034 requests/s; ` +
				`if the window is fixed, 40 were spent in the 2s since it began, 20 requests/s, at which pace the rest runs out in 3s \(at \d\d:\d\d:\d\d\), 55s before the reset`,
			`  \(one response is one reading: .*`,
		}},
		{"ietf draft 07", 200, map[string]string{"RateLimit-Policy": "100;w=10", "RateLimit": "limit=100, remaining=50, reset=5"}, []string{
			`Provider: ietf draft -07 .*`,
			`  - requests 100 50 10s 5s`,
			`pacer would pace - \(requests\) at 9 requests/s: 90 per 10s of the published 100, burst 10 \(set by what the provider reports remains\)`,
		}},
		{"ietf separate fields", 200, map[string]string{"RateLimit-Limit": "100, 100;w=10", "RateLimit-Remaining": "1"}, []string{
			`Provider: ietf draft -00 to -06 .*`,
			`  - requests 100 1 10s -`,
			`pacer would pace - \(requests\) at 9 requests/s: 90 per 10s of the published 100, burst 10 \(set by the provider's published limit\)`,
		}},
		{"openai", 200, map[string]string{
			"X-Ratelimit-Limit-Requests": "60", "X-Ratelimit-Limit-Tokens": "150000",
			"X-Ratelimit-Remaining-Requests": "59", "X-Ratelimit-Remaining-Tokens": "149984",
			"X-Ratelimit-Reset-Requests": "1s", "X-Ratelimit-Reset-Tokens": "6m0s",
		}, []string{
			`< X-Ratelimit-Limit-Requests: 60`,
			`Provider: openai .*`,
			`  requests requests 60 59 1m0s 1s`,
			`  tokens tokens 150000 149984 1m0s 6m0s`,
			`pacer would pace requests \(requests\) at 0.9 requests/s: 54 per 1m0s of the published 60, burst 6 \(set by what the provider reports remains\)`,
			`pacer would pace tokens \(tokens\) at 412.5 tokens/s: .*`,
			`Forecast for requests \(requests\): 59 of 60 remain for 1s: to last to the reset, at most 59 requests/s; it refills as it goes \(a token bucket\), so how fast it is spent does not show`,
			`Forecast for tokens \(tokens\): 149984 of 150000 remain for 6m0s: .*`,
		}},
		{"anthropic", 429, map[string]string{
			"Anthropic-Ratelimit-Requests-Limit": "50", "Anthropic-Ratelimit-Requests-Remaining": "0",
			"Anthropic-Ratelimit-Requests-Reset": "2025-10-25T12:00:30Z",
			"Anthropic-Ratelimit-Tokens-Limit":   "50000", "Anthropic-Ratelimit-Tokens-Remaining": "49000",
			"Anthropic-Ratelimit-Tokens-Reset": "2025-10-25T12:01:00Z",
			"Retry-After":                      "30",
		}, []string{
			`< 429 Too Many Requests .*`,
			`Provider: anthropic .*`,
			`  requests requests 50 0 1m0s 30s`,
			`  tokens tokens 50000 49000 1m0s 1m0s`,
			`Retry-After: 30s`,
			`pacer would pace requests \(requests\) at 0.75 requests/s: 45 per 1m0s .*`,
			`  and pause it for 30s first`,
		}},
		{"github", 200, map[string]string{
			"X-Ratelimit-Limit": "5000", "X-Ratelimit-Remaining": "4997", "X-Ratelimit-Used": "3",
			"X-Ratelimit-Reset": "1761397200", "X-Ratelimit-Resource": "core", // probeDate + 1h
		}, []string{
			`Provider: github .*`,
			`  core requests 5000 4997 - 1h0m0s`,
			`Retry-After: none`,
			`Forecast for core \(requests\): 4997 of 5000 remain for 1h0m0s: to last to the reset, at most 1.388 requests/s; ` +
				`the response does not say when the window began, so not how fast it is spent`,
		}},
		{"anthropic unified", 200, map[string]string{ // as CLIProxyAPI #3169 quotes a response (ratelimitheader/unified.go)
			"Anthropic-Ratelimit-Unified-Status":               "allowed_warning",
			"Anthropic-Ratelimit-Unified-Representative-Claim": "seven_day",
			"Anthropic-Ratelimit-Unified-5h-Utilization":       "0.35", "Anthropic-Ratelimit-Unified-5h-Reset": "1761400800", // probeDate + 2h
			"Anthropic-Ratelimit-Unified-7d-Utilization": "0.85", "Anthropic-Ratelimit-Unified-7d-Reset": "1761652800", // + 72h
		}, []string{
			`Unified windows \(status allowed_warning, binding seven_day\):`,
			`  NAME PERIOD USED RESET STATUS`,
			`  5h 5h0m0s 35% 2h0m0s -`,
			`  7d 168h0m0s 85% 72h0m0s -`,
		}},
		{"discord", 429, map[string]string{
			"Retry-After": "65", "X-Ratelimit-Limit": "10", "X-Ratelimit-Remaining": "0",
			"X-Ratelimit-Reset": "1470173023.123", "X-Ratelimit-Reset-After": "64.57",
			"X-Ratelimit-Bucket": "abcd1234", "X-Ratelimit-Scope": "user",
		}, []string{
			`Provider: discord .*`,
			`  abcd1234 requests 10 0 - 1m4.57s`,
			`Retry-After: 1m5s`,
			`  and pause it for 1m5s first`,
			`Forecast for abcd1234 \(requests\): none of 10 remain; more returns in 1m4.57s`,
		}},
		{"x-ratelimit", 200, map[string]string{"X-Ratelimit-Limit": "100, 100;w=60", "X-Ratelimit-Remaining": "7", "X-Ratelimit-Reset": "20"}, []string{
			`Provider: x-ratelimit .*`,
			`  - requests 100 7 1m0s 20s`,
			`pacer would pace - \(requests\) at 0.4762 requests/s: 28.57 per 1m0s .*`,
		}},
		{"shopify", 200, map[string]string{"X-Shopify-Shop-Api-Call-Limit": "32/40"}, []string{
			`Provider: shopify .*`,
			`  - requests 40 8 - -`,
		}},
		{"nothing", 200, map[string]string{"Content-Type": "text/plain"}, []string{
			`Provider: none recognised .*`,
			`Quotas: none`,
			`pacer would pace at: the limit you configure .*`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, _ := serve(t, tc.status, tc.headers)
			code, stdout, stderr := runCLI("probe", url+"/v1/x")
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			lines(t, stdout, tc.want...)
		})
	}
}

// No credential is printed, in the request's echo or in an error, and the
// request is still sent with every header as given.
func TestProbeRedactsCredentials(t *testing.T) {
	url, got := serve(t, 200, nil)
	secrets := []string{"sk-bearer-1", "k-api-2", "c-cookie-3", "t-session-4", "p-pass-5", "q-query-6", "s-secret-7"}
	code, stdout, stderr := runCLI("probe", "-X", "POST",
		"http://user:p-pass-5@"+strings.TrimPrefix(url, "http://")+"/v1/x?api_key=q-query-6&page=2",
		"-H", "Authorization: Bearer sk-bearer-1",
		"-H", "X-Api-Key: k-api-2",
		"-H", "Cookie: c-cookie-3",
		"-H", "X-Session-Token: t-session-4",
		"-H", "X-Client-Secret: s-secret-7",
		"-H", "Accept: application/json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, s := range secrets {
		if strings.Contains(stdout+stderr, s) {
			t.Errorf("the output shows %q:\n%s%s", s, stdout, stderr)
		}
	}
	lines(t, stdout,
		`POST http://user:redacted@127.0.0.1:\d+/v1/x\?api_key=%5Bredacted%5D&page=2`,
		`> Accept: application/json`,
		`> Authorization: \[redacted\]`,
		`> Cookie: \[redacted\]`,
		`> X-Api-Key: \[redacted\]`,
		`> X-Client-Secret: \[redacted\]`,
		`> X-Session-Token: \[redacted\]`,
	)
	r := got()
	if r.Method != http.MethodPost || r.Header.Get("Authorization") != "Bearer sk-bearer-1" || r.URL.Query().Get("api_key") != "q-query-6" {
		t.Errorf("the server got %s %s with Authorization %q", r.Method, r.URL, r.Header.Get("Authorization"))
	}

	// A request that fails says so without its credentials.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String() + "/?token=s-secret-7"
	l.Close()
	code, stdout, stderr = runCLI("probe", "-H", "Authorization: Bearer sk-bearer-1", dead)
	if code != exitFailed {
		t.Errorf("exit %d for an unreachable server, want %d", code, exitFailed)
	}
	if strings.Contains(stdout+stderr, "s-secret-7") || strings.Contains(stdout+stderr, "sk-bearer-1") {
		t.Errorf("the error shows a credential:\n%s%s", stdout, stderr)
	}
	if !strings.Contains(stderr, "connection refused") {
		t.Errorf("stderr = %q, want the cause", stderr)
	}
}

func TestProbeUsageErrors(t *testing.T) {
	url, _ := serve(t, 200, nil)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"probe"}, "give the URL"},
		{[]string{"probe", url, url}, "give one URL"},
		{[]string{"probe", "ftp://example.com/"}, "not an http or https URL"},
		{[]string{"probe", "-H", "no colon here", url}, "want 'Name: value'"},
		{[]string{"probe", "-H", "Bad Name: x", url}, "want 'Name: value'"},
		{[]string{"probe", "-timeout", "0s", url}, "must be positive"},
		{[]string{"probe", "-headroom", "1.5", url}, "must be in (0, 1]"},
		{[]string{"probe", "-X", "BAD METHOD", url}, "method"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("pacer %q: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
	if code, stdout, _ := runCLI("help", "probe"); code != exitOK || !strings.Contains(stdout, "Usage: pacer probe") {
		t.Errorf("help probe: exit %d, %q", code, stdout)
	}
}
