package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/bulkhead"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/ratelimiter"
	"github.com/hashicorp/go-retryablehttp"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/store/redisstore"
)

// The clients, in the order the tables list them.
const (
	Plain         = "plain"
	XRate         = "x/time/rate"
	RetryableHTTP = "retryablehttp"
	Failsafe      = "failsafe-go"
	Pacer         = "pacer"
)

// Clients lists every client the harness knows.
var Clients = []string{Plain, XRate, RetryableHTTP, Failsafe, Pacer}

// ClientConfig is what a client is told about the API. Each client takes
// what it can express of it (see NewClient).
type ClientConfig struct {
	Rate  int // requests a second the client is configured at; 0: no rate limit
	Burst int // the burst it is configured with (x/time/rate only)
	Conn  int // calls in flight allowed; 0: no cap

	// ConnRate is the rate equivalent of Conn (Conn ÷ a call's duration):
	// the best that a rate limiter that knows nothing of concurrency can
	// be given for the concurrency-capped API.
	ConnRate float64

	// RedisAddr and RedisPrefix, when set, make pacer keep its bucket in
	// Redis, shared by every process given the same prefix.
	RedisAddr   string
	RedisPrefix string
	// LimitSync, when positive with RedisAddr, makes pacer's processes
	// share what they learn through the store (store.Policy.LimitSync).
	LimitSync time.Duration

	// MaxWait is the longest a limiter may make a call wait: the run's
	// length, so that waiting, never refusing, is what limiters do.
	MaxWait time.Duration

	// Headroom, when above 0, is pacer's WithHeadroom; 0 keeps its default.
	// PacerBurst, when above 0, is the Burst of pacer's Limit; 0 keeps its
	// default, (1 − headroom) × Rate and at least 1.
	Headroom   float64
	PacerBurst int

	// Trace, when positive, makes pacer write its first scope's Stats to
	// standard error every Trace — the pace, what sets it, a cut's factor,
	// calls in flight and waiting — so that a cell's figure can be read
	// against the rule that set the pace.
	Trace time.Duration

	// Options, when set, are added to pacer's, after the ones above: an
	// observer or a logger, in the virtual matrix; not sent to a process of
	// a run (they do not marshal).
	Options []pacer.Option `json:"-"`
}

// Wire counts the server's refusals, attempt by attempt, below any retries a
// client makes.
type Wire struct {
	next                 http.RoundTripper
	transport            *http.Transport
	tooMany, unavailable atomic.Int64
	other                atomic.Int64 // neither 200, 429 nor 503
}

// NewWire returns a Wire over a fresh http.Transport whose idle pool holds a
// connection for each of the workload's goroutines, so that no client pays
// for new connections (http.DefaultTransport keeps 2 per host).
func NewWire() *Wire { return NewWireOver(Loopback) }

// NewWireOver is NewWire with n's delay between the Wire and the transport:
// below every client, the same for all.
func NewWireOver(n Network) *Wire {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = max(64, n.Goroutines)
	w := &Wire{next: t, transport: t}
	if n.Delay > 0 || n.Jitter > 0 {
		w.next = delayed{n.ways, t}
	}
	return w
}

// RoundTrip sends req and counts the response's status.
func (w *Wire) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
		// counted by the workload, once the body is read (see Counts)
	case http.StatusTooManyRequests:
		w.tooMany.Add(1)
	case http.StatusServiceUnavailable:
		w.unavailable.Add(1)
	default:
		w.other.Add(1)
	}
	return resp, nil
}

// CloseIdle closes the idle connections, so that a run leaves none behind.
func (w *Wire) CloseIdle() { w.transport.CloseIdleConnections() }

// NewClient returns the named client over base, configured from cfg, and a
// function that releases what it holds.
//
// How each is configured, and why that is fair to it:
//
//   - plain: an http.Client and nothing else.
//   - x/time/rate: rate.Limiter at cfg.Rate with cfg.Burst, Wait before
//     every call; on the concurrency-capped API at cfg.ConnRate with burst
//     cfg.Conn, as it has no notion of concurrency.
//   - retryablehttp: NewClient's defaults (4 retries, backoff 1 s to 30 s,
//     Retry-After honoured on 429 and 503), its logger off. It has no limit
//     to configure.
//   - failsafe-go: failsafehttp.NewRoundTripper with failsafehttp's retry
//     policy (2 retries on 429 and 5xx, Retry-After honoured), plus a smooth
//     rate limiter at cfg.Rate (one permit every 1/Rate s, like nginx's
//     leaky bucket; the bursty one hands out a whole second's permits at
//     once, which nginx's burst would mostly refuse) or, on the
//     concurrency-capped API, a bulkhead of cfg.Conn. Both wait up to
//     cfg.MaxWait instead of refusing.
//   - pacer: pacer.WithLimit(pacer.PerSecond(cfg.Rate)) at the default
//     headroom (0.9), unless cfg.Headroom or cfg.PacerBurst say otherwise, or
//     pacer.WithConcurrency(cfg.Conn); the Redis store when cfg.RedisAddr is
//     set, with store.Policy{LimitSync: cfg.LimitSync};
//     everything else default.
func NewClient(name string, cfg ClientConfig, base http.RoundTripper) (*http.Client, func(), error) {
	none := func() {}
	switch name {
	case Plain:
		return &http.Client{Transport: base}, none, nil
	case XRate:
		lim := rate.NewLimiter(rate.Limit(cfg.Rate), cfg.Burst)
		if cfg.Conn > 0 {
			lim = rate.NewLimiter(rate.Limit(cfg.ConnRate), cfg.Conn)
		}
		return &http.Client{Transport: &rateLimited{lim, base}}, none, nil
	case RetryableHTTP:
		c := retryablehttp.NewClient()
		c.HTTPClient.Transport = base
		c.Logger = nil
		return c.StandardClient(), none, nil
	case Failsafe:
		policies := []failsafe.Policy[*http.Response]{failsafehttp.NewRetryPolicyBuilder().Build()}
		if cfg.Conn > 0 {
			policies = append(policies, bulkhead.NewBuilder[*http.Response](uint(cfg.Conn)).WithMaxWaitTime(cfg.MaxWait).Build())
		}
		if cfg.Rate > 0 {
			policies = append(policies, ratelimiter.NewSmoothBuilder[*http.Response](uint(cfg.Rate), time.Second).WithMaxWaitTime(cfg.MaxWait).Build())
		}
		return &http.Client{Transport: failsafehttp.NewRoundTripper(base, policies...)}, none, nil
	case Pacer:
		var opts []pacer.Option
		if cfg.Rate > 0 {
			opts = append(opts, pacer.WithLimit(pacer.Limit{Count: cfg.Rate, Per: time.Second, Burst: cfg.PacerBurst}))
		}
		if cfg.Conn > 0 {
			opts = append(opts, pacer.WithConcurrency(cfg.Conn))
		}
		if cfg.Headroom > 0 {
			opts = append(opts, pacer.WithHeadroom(cfg.Headroom))
		}
		opts = append(opts, cfg.Options...)
		release := none
		if cfg.RedisAddr != "" {
			rdb := redis.NewClient(&redis.Options{Addr: cfg.RedisAddr, PoolSize: 16})
			opts = append(opts, pacer.WithStore(redisstore.New(rdb, redisstore.WithPrefix(cfg.RedisPrefix)), store.Policy{LimitSync: cfg.LimitSync}))
			release = func() { rdb.Close() }
		}
		tr := pacer.New(base, opts...)
		if err := tr.Err(); err != nil {
			release()
			return nil, nil, err
		}
		if cfg.Trace > 0 {
			stop := tracePacer(tr, cfg.Trace)
			release = func(r func()) func() { return func() { stop(); r() } }(release)
		}
		return tr.Client(), release, nil
	}
	return nil, nil, fmt.Errorf("unknown client %q (want one of %v)", name, Clients)
}

// rateLimited waits on an x/time/rate limiter before every call.
type rateLimited struct {
	lim  *rate.Limiter
	next http.RoundTripper
}

func (r *rateLimited) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := r.lim.Wait(req.Context()); err != nil {
		if _, ok := req.Context().Deadline(); ok && req.Context().Err() == nil {
			// Wait refuses at once a wait that would outlast the deadline;
			// say so the way pacer does, so that the workload ends the
			// goroutine instead of counting a failure and spinning.
			return nil, fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
		}
		return nil, err
	}
	return r.next.RoundTrip(req)
}

// tracePacer writes tr's first scope's Stats to standard error every
// interval, until the function it returns is called.
func tracePacer(tr *pacer.Transport, interval time.Duration) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(stopped)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				st := tr.Stats()
				if len(st.Scopes) == 0 {
					continue
				}
				sc := st.Scopes[0]
				fmt.Fprintf(os.Stderr, "pacer %6.2fs rate %7.2f burst %6.2f factor %.3f admitted %6d in flight %3d waiting %3d why %q\n",
					now.Sub(start).Seconds(), sc.Rate, sc.Burst, sc.Factor, sc.Admitted, sc.InFlight, sc.Waiting, sc.Why)
			}
		}
	}()
	return func() { close(done); <-stopped }
}
