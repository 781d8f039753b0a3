package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-chi/httprate"
	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"
	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/middleware/stdlib"
	"github.com/ulule/limiter/v3/drivers/store/memory"
)

// A Kind is the kind of server-side limiter a GoLimiter runs: each is a
// third-party library's own code, in this process, on loopback.
type Kind int

const (
	// Sliding is go-chi/httprate: a sliding window (the previous window's
	// count, weighted by how much of it still overlaps, plus the current
	// one). Every response carries X-RateLimit-Limit (Limit, the window's
	// quota; the window is not said), X-RateLimit-Remaining (what is left
	// of it) and X-RateLimit-Reset (the current window's end, in Unix
	// seconds). A 429 adds Retry-After (the window, in seconds) unless
	// RetryAfter is false.
	Sliding Kind = iota
	// Fixed is github.com/ulule/limiter/v3 with its memory store and its
	// stdlib middleware: a fixed window of Window that opens at the first
	// call after the last one expired (not on a clock boundary), counting
	// refused calls too. Every response carries X-RateLimit-Limit (Limit,
	// the window's quota), X-RateLimit-Remaining (what is left of it, 0
	// once over) and X-RateLimit-Reset (the window's end, in Unix seconds,
	// truncated); a 429 carries no Retry-After, whatever RetryAfter says.
	Fixed
	// GCRA is github.com/throttled/throttled/v2's GCRA rate limiter over
	// its memstore, through its HTTPRateLimiterCtx: a token bucket of
	// Burst+1 that refills at Limit per Window. Every response carries
	// X-RateLimit-Limit: Burst+1 (the bucket's capacity — rate.go sets
	// limit to MaxBurst+1 — not a per-window quota), X-RateLimit-Remaining
	// (the whole tokens left) and X-RateLimit-Reset (the seconds until the
	// bucket is full again, rounded up: 1 at any steady pace above a tenth
	// of the rate). A 429 adds Retry-After (the seconds until one token is
	// back, rounded up: 1), whatever RetryAfter says.
	GCRA
)

// GoLimiter describes a fake API whose limiter runs in this process, on
// loopback: a real third-party server-side limiter of the given Kind
// (go-chi/httprate unless said otherwise). net/http adds a Date header to
// every response. All callers share one key, so a neighbour calling the
// same server spends the same quota.
type GoLimiter struct {
	Kind       Kind
	Limit      int           // calls per Window
	Window     time.Duration // the window, or for GCRA the period of Limit
	Burst      int           // GCRA only: MaxBurst, so the bucket holds Burst+1
	RetryAfter bool          // httprate only: a 429 carries Retry-After
	// Incident, when positive, makes the server answer every call with a
	// bare 429 (no headers) for that long from its start: an outage of the
	// provider's limiter, after which it is healthy again.
	Incident time.Duration
}

// Rate is the limiter's sustained rate, calls a second.
func (l GoLimiter) Rate() float64 { return float64(l.Limit) / l.Window.Seconds() }

// Capacity is the most the limiter lets through at once from idle, beyond
// its steady rate: GCRA's bucket (Burst+1); 0 for the windows, whose
// ceiling is the rate × time (an idle window lets a whole quota through at
// once, but only once).
func (l GoLimiter) Capacity() int {
	if l.Kind == GCRA {
		return l.Burst + 1
	}
	return 0
}

// handler returns the family's middleware, from its library, around h.
func (l GoLimiter) handler(h http.Handler) (http.Handler, error) {
	return l.handlerOver(h, memory.NewStore())
}

// handlerOver is handler with fixed as ulule's store (the fixed window's;
// the other families ignore it).
func (l GoLimiter) handlerOver(h http.Handler, fixed limiter.Store) (http.Handler, error) {
	switch l.Kind {
	case Sliding:
		opts := []httprate.Option{}
		if !l.RetryAfter {
			opts = append(opts, httprate.WithResponseHeaders(httprate.ResponseHeaders{
				Limit: "X-RateLimit-Limit", Remaining: "X-RateLimit-Remaining", Reset: "X-RateLimit-Reset"}))
		}
		return httprate.LimitBy(l.Limit, l.Window, httprate.Key("everyone"), opts...)(h), nil
	case Fixed:
		lim := limiter.New(fixed, limiter.Rate{Period: l.Window, Limit: int64(l.Limit)})
		mw := stdlib.NewMiddleware(lim, stdlib.WithKeyGetter(func(*http.Request) string { return "everyone" }))
		return mw.Handler(h), nil
	case GCRA:
		st, err := memstore.NewCtx(16)
		if err != nil {
			return nil, err
		}
		if l.Limit <= 0 || l.Window < time.Duration(l.Limit) {
			return nil, fmt.Errorf("GCRA limiter: want Limit > 0 per a Window of at least Limit ns, got %d per %v", l.Limit, l.Window)
		}
		rl, err := throttled.NewGCRARateLimiterCtx(st, throttled.RateQuota{MaxRate: throttled.PerDuration(l.Limit, l.Window), MaxBurst: l.Burst})
		if err != nil {
			return nil, err
		}
		return (&throttled.HTTPRateLimiterCtx{RateLimiter: rl}).RateLimit(h), nil // no VaryBy: one key, ""
	}
	return nil, fmt.Errorf("unknown limiter kind %d", l.Kind)
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
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("ok\n"))
	})
	g := &GoServer{}
	var down atomic.Bool
	down.Store(l.Incident > 0)
	limit, err := l.handler(ok)
	if err != nil {
		return nil, err
	}
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
