// Package github emulates the GitHub REST API's rate limits as GitHub
// documents them (read 2026-12-01):
//
//   - primary limits, "Rate limits for the REST API"
//     (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api):
//     "your personal rate limit of 5,000 requests per hour"; an
//     installation's "minimum rate limit of 5,000 requests per hour", which
//     "cannot increase beyond 12,500 requests per hour";
//   - the search resources, "REST API endpoints for search"
//     (https://docs.github.com/en/rest/search/search): "up to 30 requests
//     per minute for all search endpoints except for the Search code
//     endpoint", which "limits you to 9 requests per minute";
//   - secondary limits: "No more than 100 concurrent requests", "No more
//     than 900 points per minute are allowed for REST API endpoints", "no
//     more than 80 content-generating requests per minute and no more than
//     500 content-generating requests per hour"; GET 1 point, POST 5.
//
// Every response carries x-ratelimit-limit, -remaining, -used, -reset (UTC
// epoch seconds) and -resource. A primary limit exceeded answers 403 with
// x-ratelimit-remaining: 0; a secondary one 403 with "You have exceeded a
// secondary rate limit" and retry-after, as the page's "Exceeding the rate
// limit" describes.
package github

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pacer-go/pacer/providers/internal/emulator"
)

// The documented figures.
const (
	CorePerHour         = 5_000
	InstallationMax     = 12_500
	SearchPerMinute     = 30
	CodeSearchPerMinute = 9
	Concurrent          = 100
	RESTPointsPerMinute = 900
	ContentPerMinute    = 80
	ContentPerHour      = 500
)

// A fixed window resets every Per from the first request.
type fixed struct {
	limit int
	per   time.Duration
	start time.Time
	used  int
}

func (f *fixed) roll(now time.Time) {
	if f.start.IsZero() || !now.Before(f.start.Add(f.per)) {
		f.start, f.used = now, 0
	}
}

// Server is the emulated API of one token.
type Server struct {
	Tally   emulator.Tally
	Latency time.Duration

	mu       sync.Mutex
	primary  map[string]*fixed
	inFlight int
	points   emulator.Window
	contentM emulator.Window
	contentH emulator.Window
}

// New returns the emulated API of a token whose core limit is core an hour.
func New(core int) *Server {
	return &Server{
		primary: map[string]*fixed{
			"core":        {limit: core, per: time.Hour},
			"search":      {limit: SearchPerMinute, per: time.Minute},
			"code_search": {limit: CodeSearchPerMinute, per: time.Minute},
		},
		points:   emulator.Window{Limit: RESTPointsPerMinute, Per: time.Minute},
		contentM: emulator.Window{Limit: ContentPerMinute, Per: time.Minute},
		contentH: emulator.Window{Limit: ContentPerHour, Per: time.Hour},
	}
}

// Resource names the primary resource a path counts against.
func Resource(path string) string {
	switch {
	case path == "/search/code":
		return "code_search"
	case strings.HasPrefix(path, "/search/"):
		return "search"
	}
	return "core"
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	res := Resource(r.URL.Path)
	writes := r.Method != http.MethodGet && r.Method != http.MethodHead
	points := 1
	if writes {
		points = 5
	}
	s.mu.Lock()
	p := s.primary[res]
	p.roll(now)
	secondary := ""
	switch {
	case s.inFlight >= Concurrent:
		secondary = "concurrency"
	case s.points.Remaining(now) < points:
		secondary = "points"
	case writes && s.contentM.Remaining(now) < 1:
		secondary = "content per minute"
	case writes && s.contentH.Remaining(now) < 1:
		secondary = "content per hour"
	}
	primaryOut := secondary == "" && p.used >= p.limit
	if secondary == "" && !primaryOut {
		p.used++
		s.points.Allow(now, points)
		if writes {
			s.contentM.Allow(now, 1)
			s.contentH.Allow(now, 1)
		}
		s.inFlight++
	}
	h := w.Header()
	h.Set("X-Ratelimit-Limit", strconv.Itoa(p.limit))
	h.Set("X-Ratelimit-Remaining", strconv.Itoa(p.limit-p.used))
	h.Set("X-Ratelimit-Used", strconv.Itoa(p.used))
	h.Set("X-Ratelimit-Reset", strconv.FormatInt(p.start.Add(p.per).Unix(), 10))
	h.Set("X-Ratelimit-Resource", res)
	h.Set("Content-Type", "application/json")
	s.mu.Unlock()
	switch {
	case secondary != "":
		s.Tally.Refuse("secondary " + secondary)
		h.Set("Retry-After", "60")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api"}`)
		return
	case primaryOut:
		s.Tally.Refuse("primary " + res)
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"message":"API rate limit exceeded.","documentation_url":"https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api"}`)
		return
	}
	if s.Latency > 0 {
		time.Sleep(s.Latency)
	}
	s.mu.Lock()
	s.inFlight--
	s.mu.Unlock()
	s.Tally.Accept(res, 1)
	if writes {
		s.Tally.Accept("content", 1)
	}
	fmt.Fprint(w, `{}`)
}
