// Package stripe emulates the Stripe API's rate limiters as
// https://docs.stripe.com/rate-limits documents them (read 2026-12-01):
//
//   - "Global API rate limit: Live mode: 100 requests per second; Sandbox:
//     25 requests per second";
//   - "API endpoints have a default limit of 25 requests per second", where
//     "Stripe treats each named API operation as a separate endpoint" and
//     requests for different object IDs "count towards the same endpoint
//     limit";
//   - "Files API: 20 read operations and 20 write operations per second",
//     "Search API: 20 read operations per second".
//
// A refused request gets 429 with Stripe's error body, code "rate_limit"
// (https://support.stripe.com/questions/rate-limit-error-when-creating-bulk-api-requests:
// "If you have received the rate_limit error message"). Every limit counts
// in a sliding one-second window. The figures here are the emulator's own,
// not the preset's, so that a wrong preset figure shows.
package stripe

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/pacer-go/pacer/providers/internal/emulator"
)

// The documented figures, per second.
const (
	LiveGlobal    = 100
	SandboxGlobal = 25
	Endpoint      = 25
	FilesRead     = 20
	FilesWrite    = 20
	SearchRead    = 20
)

// Server is the emulated API of one account.
type Server struct {
	Tally emulator.Tally
	// Latency is how long each accepted request takes to serve.
	Latency time.Duration

	mu        sync.Mutex
	global    emulator.Window
	endpoints map[string]*emulator.Window
	files     [2]emulator.Window
	search    emulator.Window
}

// New returns the emulated account in live mode, or in a sandbox.
func New(sandbox bool) *Server {
	g := LiveGlobal
	if sandbox {
		g = SandboxGlobal
	}
	return &Server{
		global:    emulator.Window{Limit: g, Per: time.Second},
		endpoints: map[string]*emulator.Window{},
		files:     [2]emulator.Window{{Limit: FilesRead, Per: time.Second}, {Limit: FilesWrite, Per: time.Second}},
		search:    emulator.Window{Limit: SearchRead, Per: time.Second},
	}
}

// EndpointOf names the endpoint of a request as the emulator counts it: the
// method, and the path with each object ID (a known Stripe ID prefix and
// an underscore) as "{id}".
func EndpointOf(method, path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i, s := range segs {
		if p, _, ok := strings.Cut(s, "_"); ok && idPrefixes[p] {
			segs[i] = "{id}"
		}
	}
	return method + " /" + strings.Join(segs, "/")
}

// Prefixes of the IDs the workloads use ("cus_…", "pi_…"): those of
// customers, payment intents, charges, refunds, invoices, subscriptions,
// prices, products, payment methods and files.
var idPrefixes = map[string]bool{"cus": true, "pi": true, "ch": true, "re": true, "in": true,
	"sub": true, "price": true, "prod": true, "pm": true, "file": true}

// ServeHTTP answers a request, or refuses it with 429 when a limit is hit.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	ep := EndpointOf(r.Method, r.URL.Path)
	reading := r.Method == http.MethodGet || r.Method == http.MethodHead
	s.mu.Lock()
	win := s.endpoints[ep]
	if win == nil {
		win = &emulator.Window{Limit: Endpoint, Per: time.Second}
		s.endpoints[ep] = win
	}
	var extra *emulator.Window
	var extraName string
	switch {
	case strings.HasPrefix(r.URL.Path, "/v1/files"):
		extra, extraName = &s.files[1], "files-write"
		if reading {
			extra, extraName = &s.files[0], "files-read"
		}
	case reading && strings.HasSuffix(r.URL.Path, "/search"):
		extra, extraName = &s.search, "search"
	}
	refused := ""
	// A request is counted only when every limiter admits it: a refused
	// request does not use up the others.
	switch {
	case s.global.Remaining(now) < 1:
		refused = "global"
	case win.Remaining(now) < 1:
		refused = "endpoint " + ep
	case extra != nil && extra.Remaining(now) < 1:
		refused = extraName
	default:
		s.global.Allow(now, 1)
		win.Allow(now, 1)
		if extra != nil {
			extra.Allow(now, 1)
		}
	}
	s.mu.Unlock()
	if refused != "" {
		s.Tally.Refuse(refused)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte(`{"error":{"code":"rate_limit","message":"Too many requests hit the API too quickly.","type":"invalid_request_error"}}`))
		return
	}
	if s.Latency > 0 {
		time.Sleep(s.Latency)
	}
	s.Tally.Accept(ep, 1)
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"object":"ok"}`))
}
