package pacer

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/internal/fakeclock"
)

// stubAPI is a base RoundTripper that answers 200 at once and records when
// each request arrived, by workload.
type stubAPI struct {
	clock clock.Clock
	mu    sync.Mutex
	sent  []sentRequest
	// respond, if set, answers instead of the default 200.
	respond func(*http.Request) (*http.Response, error)
}

type sentRequest struct {
	at       time.Time
	workload string
	path     string
}

func (s *stubAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.sent = append(s.sent, sentRequest{s.clock.Now(), workloadFromContext(req.Context()), req.URL.Path})
	s.mu.Unlock()
	if s.respond != nil {
		return s.respond(req)
	}
	return okResponse(req), nil
}

func okResponse(req *http.Request) *http.Response {
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("ok")), Request: req, Header: http.Header{}}
}

func (s *stubAPI) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sent)
}

func (s *stubAPI) requests() []sentRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sentRequest(nil), s.sent...)
}

// get sends a GET through rt with ctx, closes the response, and returns the
// error.
func get(rt http.RoundTripper, ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// fakeClock adapts the fake clock to Clock.
type fakeClock struct{ *fakeclock.Clock }

func (f fakeClock) NewTimer(d time.Duration) clock.Timer { return f.Clock.NewTimer(d) }

func newFakeClock() fakeClock {
	return fakeClock{fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
}

// trackingBody is a request body that records whether it was closed.
type trackingBody struct {
	io.Reader
	closed atomic.Bool
}

func (b *trackingBody) Close() error { b.closed.Store(true); return nil }

func mustNotErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func asThrottled(t *testing.T, err error) *ThrottledError {
	t.Helper()
	var te *ThrottledError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want a *ThrottledError", err)
	}
	return te
}

func newPost(ctx context.Context, body io.ReadCloser) (*http.Request, error) {
	return http.NewRequestWithContext(ctx, http.MethodPost, "http://api.test/", body)
}

func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// withClock is clock.With for this package's tests, whose variables are
// often named clock.
func withClock(clk clock.Clock) Option { return clock.With[Option](clk) }
