// Package countingserver is a real HTTP server on loopback for retry tests:
// it fails in one chosen way, and counts, from its own point of view, what
// it executed. A request with an Idempotency-Key is executed once per key,
// the way an API that honours keys dedupes; one without, every time.
package countingserver

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// The ways a Server can fail.
const (
	Status500       = "500"
	Status503       = "503 with Retry-After"
	Status429       = "429"
	ResetAfterRead  = "reset after the request was read"
	SlowPastTimeout = "slow past the deadline"
)

// Failures lists every way a Server can fail.
var Failures = []string{Status500, Status503, Status429, ResetAfterRead, SlowPastTimeout}

// A Server fails every request in its one way.
type Server struct {
	*httptest.Server
	mu         sync.Mutex
	attempts   int
	executions int
	keys       map[string]bool
}

// New starts a Server that fails as failure says, stopped at the test's end.
// A slow response takes 2 s unless the client gives up first.
func New(t testing.TB, failure string) *Server {
	s := &Server{keys: map[string]bool{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		s.record(r.Header.Get("Idempotency-Key"))
		switch failure {
		case Status500:
			w.WriteHeader(http.StatusInternalServerError)
		case Status503:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
		case Status429:
			w.WriteHeader(http.StatusTooManyRequests)
		case ResetAfterRead:
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			conn.(*net.TCPConn).SetLinger(0) // RST, not FIN
			conn.Close()
		case SlowPastTimeout:
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
		default:
			t.Errorf("countingserver: unknown failure %q", failure)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// record counts an attempt, and an execution unless key was executed before.
func (s *Server) record(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts++
	if key == "" || !s.keys[key] {
		s.executions++ // the side effect: a payment, a text message
		if key != "" {
			s.keys[key] = true
		}
	}
}

// Counts returns the requests received and the operations executed.
func (s *Server) Counts() (attempts, executions int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts, s.executions
}
