package bench

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-chi/httprate"
)

// GoLimiter describes the second fake API: a real third-party server-side
// limiter, go-chi/httprate, in this process, on loopback.
//
// httprate counts in a sliding window (the previous window's count,
// weighted by how much of it still overlaps, plus the current one), and
// every response carries X-RateLimit-Limit (the count, no window),
// X-RateLimit-Remaining and X-RateLimit-Reset (the current window's end, in
// Unix seconds); net/http adds a Date header. A 429 adds Retry-After (the
// window, in seconds) unless RetryAfter is false. All callers share one key,
// so a neighbour calling the same server spends the same quota.
type GoLimiter struct {
	Limit      int           // calls per Window
	Window     time.Duration // httprate's window
	RetryAfter bool          // a 429 carries Retry-After
	// Incident, when positive, makes the server answer every call with a
	// bare 429 (no headers) for that long from its start: an outage of the
	// provider's limiter, after which it is healthy again.
	Incident time.Duration
}

// GoServer is a running GoLimiter.
type GoServer struct {
	URL   string
	srv   *http.Server
	start time.Time
}

// StartGoServer starts l on a free 127.0.0.1 port, with one location,
// PathLimit, and /ok unlimited.
func StartGoServer(l GoLimiter) (*GoServer, error) {
	opts := []httprate.Option{}
	if !l.RetryAfter {
		opts = append(opts, httprate.WithResponseHeaders(httprate.ResponseHeaders{
			Limit: "X-RateLimit-Limit", Remaining: "X-RateLimit-Remaining", Reset: "X-RateLimit-Reset"}))
	}
	limited := httprate.LimitBy(l.Limit, l.Window, httprate.Key("everyone"), opts...)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("ok\n"))
	})
	g := &GoServer{}
	var down atomic.Bool
	down.Store(l.Incident > 0)
	limit := limited(ok)
	mux := http.NewServeMux()
	mux.Handle("/ok", ok)
	mux.HandleFunc(PathLimit, func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			if time.Since(g.start) < l.Incident {
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			down.Store(false)
		}
		limit.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g.URL = "http://" + ln.Addr().String()
	g.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	g.start = time.Now()
	go g.srv.Serve(ln)
	return g, nil
}

// Stop stops the server.
func (g *GoServer) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
