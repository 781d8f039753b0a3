package github_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/github"
	"github.com/pacer-go/pacer/providers/internal/providertest"
)

const api = "https://api.github.com"

// toToday moves a synctest bubble's clock, which starts in 2000, to a date
// at which x-ratelimit-reset's Unix seconds read as Unix seconds (pacer reads
// a number below 1e9, before September 2001, as delta seconds).
func toToday() {
	time.Sleep(time.Until(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)))
}

func do(t *testing.T, c *http.Client, method, path, body string) *http.Response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, api+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := providertest.Do(c, req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

// Content creation stays within 80 a minute and 500 an hour, and the
// points within 900 a minute, in every window.
func TestPresetNeverExceedsTheSecondaryLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &providertest.Fake{}
		c := pacer.New(fake, github.Preset(github.Token)).Client()
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				for range 60 {
					do(t, c, http.MethodPost, "/repos/o/r/issues", `{"title":"x"}`)
				}
			})
		}
		wg.Wait()
		sent := fake.Requests()
		if len(sent) != 600 {
			t.Fatalf("%d requests reached GitHub, want 600", len(sent))
		}
		times := providertest.Times(sent, func(providertest.Sent) bool { return true })
		if got := providertest.MostInWindow(times, nil, time.Minute); got > 80 {
			t.Errorf("%d content-creating requests in a minute, limit 80", got)
		}
		if got := providertest.MostInWindow(times, nil, time.Hour); got > 500 {
			t.Errorf("%d content-creating requests in an hour, limit 500", got)
		}
		points := make([]int64, len(times))
		for i := range points {
			points[i] = 5
		}
		if got := providertest.MostInWindow(times, points, time.Minute); got > 900 {
			t.Errorf("%d points in a minute, limit 900", got)
		}
	})
}

func TestPresetCapsConcurrentRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var peak providertest.Peak
		fake := &providertest.Fake{Respond: func(req *http.Request, _ []byte) *http.Response {
			peak.Enter()
			time.Sleep(10 * time.Second)
			peak.Leave()
			return providertest.Response(req, 200, nil, "{}")
		}}
		c := pacer.New(fake, github.Preset(github.EnterpriseCloudApp)).Client()
		var wg sync.WaitGroup
		for range 300 {
			wg.Go(func() { do(t, c, http.MethodGet, "/repos/o/r", "") })
		}
		wg.Wait()
		if got := peak.Most(); got > 100 || got < 50 {
			t.Fatalf("%d requests in flight at most, want at most 100 (and many)", got)
		}
	})
}

// x-ratelimit-remaining clamps the core bucket, and none remaining pauses
// it until x-ratelimit-reset, for every caller.
func TestPrimaryHeadersMoveTheBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toToday()
		reset := time.Now().Add(90 * time.Second).Truncate(time.Second)
		var remaining atomic.Int64
		remaining.Store(3)
		fake := &providertest.Fake{Respond: func(req *http.Request, _ []byte) *http.Response {
			left := remaining.Add(-1)
			if time.Now().After(reset) {
				left = 4999
			}
			h := []string{"X-Ratelimit-Limit", "5000", "X-Ratelimit-Remaining", strconv.FormatInt(max(left, 0), 10),
				"X-Ratelimit-Used", "5000", "X-Ratelimit-Reset", strconv.FormatInt(reset.Unix(), 10), "X-Ratelimit-Resource", "core"}
			if left < 0 {
				return providertest.Response(req, http.StatusForbidden, h,
					`{"message":"API rate limit exceeded for user ID 1.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}`)
			}
			return providertest.Response(req, 200, h, "{}")
		}}
		c := pacer.New(fake, github.Preset(github.Token)).Client()
		start := time.Now()
		for i := range 5 {
			if resp := do(t, c, http.MethodGet, "/repos/o/r", ""); resp.StatusCode != 200 {
				t.Fatalf("request %d: status %d; pacer sent it while none remained", i+1, resp.StatusCode)
			}
		}
		sent := fake.Requests()
		if len(sent) != 5 {
			t.Fatalf("%d requests reached GitHub, want 5 and no 403", len(sent))
		}
		for i, s := range sent[:3] {
			if s.At != start {
				t.Errorf("request %d waited %v while requests remained", i+1, s.At.Sub(start))
			}
		}
		if sent[3].At.Before(reset) {
			t.Errorf("request 4 went at %v, before the reset at %v, with none remaining", sent[3].At, reset)
		}
	})
}

func TestSecondaryLimitIsBackPressure(t *testing.T) {
	const secondaryBody = `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID ABCD.","documentation_url":"https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`
	const forbidden = `{"message":"Resource not accessible by integration","documentation_url":"https://docs.github.com/rest/issues/issues#create-an-issue","status":"403"}`
	cases := []struct {
		name     string
		status   int
		header   []string
		body     string
		attempts int
		after    time.Duration // the least wait before the retry
	}{
		{"403 with retry-after", 403, []string{"Retry-After", "30"}, secondaryBody, 2, 30 * time.Second},
		{"403 naming no time waits a minute", 403, []string{"X-Ratelimit-Remaining", "4000"}, secondaryBody, 2, time.Minute},
		{"429 naming no time waits a minute", 429, nil, secondaryBody, 2, time.Minute},
		{"a permissions 403 is final", 403, []string{"X-Ratelimit-Remaining", "4000"}, forbidden, 1, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int32
				fake := &providertest.Fake{Respond: func(req *http.Request, _ []byte) *http.Response {
					if calls.Add(1) == 1 {
						return providertest.Response(req, c.status, c.header, c.body)
					}
					return providertest.Response(req, 200, nil, "{}")
				}}
				client := pacer.New(fake, github.Preset(github.Token)).Client()
				start := time.Now()
				do(t, client, http.MethodGet, "/repos/o/r/issues", "")
				sent := fake.Requests()
				if len(sent) != c.attempts {
					t.Fatalf("%d attempts, want %d", len(sent), c.attempts)
				}
				if c.attempts == 2 {
					if waited := sent[1].At.Sub(start); waited < c.after || waited > c.after+5*time.Second {
						t.Errorf("retried after %v, want %v", waited, c.after)
					}
				}
			})
		})
	}
}

func TestRoute(t *testing.T) {
	cases := []struct {
		method, url, body string
		want              string
	}{
		{"GET", api + "/repos/o/r", "", "github/core github/concurrency github/points/rest:1"},
		{"POST", api + "/repos/o/r/issues", `{"title":"x"}`, "github/core github/concurrency github/points/rest:5 github/content/per-minute github/content/per-hour"},
		{"GET", api + "/search/issues?q=x", "", "github/search github/concurrency github/points/rest:1"},
		{"GET", api + "/search/code?q=x", "", "github/code_search github/concurrency github/points/rest:1"},
		{"GET", "https://ghe.example/api/v3/search/code", "", "github/code_search github/concurrency github/points/rest:1"},
		{"POST", api + "/graphql", `{"query":"query { viewer { login } }"}`, "github/graphql github/concurrency github/points/graphql:1"},
		{"POST", "https://ghe.example/api/graphql", `{"query":"mutation($id: ID!) { addStar(input: {starrableId: $id}) { clientMutationId } }"}`,
			"github/graphql github/concurrency github/points/graphql:5 github/content/per-minute github/content/per-hour"},
	}
	for _, c := range cases {
		var body io.Reader
		if c.body != "" {
			body = strings.NewReader(c.body)
		}
		req, _ := http.NewRequest(c.method, c.url, body)
		var got []string
		for _, ch := range github.Route(req, []pacer.Charge{{Scope: pacer.DefaultScope}}) {
			s := ch.Scope
			if ch.Cost != 0 {
				s += ":" + strconv.FormatInt(ch.Cost, 10)
			}
			got = append(got, s)
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%s %s: charged %v, want %v", c.method, c.url, got, c.want)
		}
	}
}

func TestIsMutation(t *testing.T) {
	cases := map[string]bool{
		`{ viewer { login } }`:                                 false,
		`query Q { viewer { login } }`:                         false,
		`mutation { addStar(input: {}) { clientMutationId } }`: true,
		`# mutation in a comment
query { viewer { login } }`: false,
		`query { search(query: "mutation") { issueCount } }`:      false,
		`query { a } mutation M { b }`:                            true,
		`query { mutation }`:                                      false,
		`fragment F on User { login } mutation { x }`:             true,
		`query { search(query: "a \" mutation") { issueCount } }`: false,
		``: false,
	}
	for doc, want := range cases {
		if got := github.IsMutation(doc); got != want {
			t.Errorf("IsMutation(%q) = %v, want %v", doc, got, want)
		}
	}
}
