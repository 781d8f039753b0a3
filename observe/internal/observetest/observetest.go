// Package observetest is the scenario the observe adapters' tests share: a
// Transport over a fake API, driven through most kinds of event, with a
// credential in every place one could leak from.
package observetest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/pool"
)

// Secret is the API key each request carries, in its URL (where a route
// reads it as the key of the "key" scope) and in its Authorization header.
// No adapter may show it.
const Secret = "sk-live-0123456789"

// Leaks are the strings no metric or log may contain.
var Leaks = []string{Secret, "api.test", "Bearer", "/v1/things"}

// api answers 429 with Retry-After: 2 to its first call, 200 after.
type api struct{ calls atomic.Int64 }

func (a *api) RoundTrip(req *http.Request) (*http.Response, error) {
	resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("ok")), Request: req}
	if a.calls.Add(1) == 1 {
		resp.StatusCode = http.StatusTooManyRequests
		resp.Header.Set("Retry-After", "2")
	}
	return resp, nil
}

// New returns a Transport that tells obs what it does: the scope "default"
// at 1 a second with a burst of 1 and 4 calls at once; the scope "key" at
// 100 a second, keyed by the request's API key; the workload "batch" with
// a budget of 3 calls an hour.
func New(obs observe.Observer) *pacer.Transport {
	return pacer.New(&api{}, pacer.WithObserver(obs), pacer.WithHeadroom(1), pacer.WithConcurrency(4),
		pacer.WithLimit(pacer.Limit{Count: 1, Per: time.Second, Burst: 1}),
		pacer.WithScope(pacer.Scope{Name: "key", Limit: pacer.PerSecond(100)}),
		pacer.WithRoute(func(req *http.Request, ch []pacer.Charge) []pacer.Charge {
			return append(ch, pacer.Charge{Scope: "key", Key: req.URL.Query().Get("api_key")})
		}),
		pacer.WithWorkload("batch", pacer.Workload{Budget: pacer.Budget{Limit: 3, Per: time.Hour}}),
		pacer.WithLogger(slog.New(slog.DiscardHandler)))
}

// Run drives tr, which must run in a synctest bubble, through:
//
//  1. a batch call answered 429 with Retry-After: 2 — rejected on both
//     scopes, both paused, the rate of "default" cut to 0.85/s and its
//     bucket emptied — and retried: it waits 1/0.85 s for the bucket after
//     the pause, and is admitted;
//  2. a batch call that waits 1/0.85 s and is admitted; its body is left
//     open, so it stays in flight until the caller closes what Run returns;
//  3. a batch call refused by the spent budget;
//  4. a call of the default workload throttled: its deadline is too near.
func Run(tr *pacer.Transport) (open *http.Response, err error) {
	batch := pacer.ContextWithWorkload(context.Background(), "batch")
	resp, err := send(tr, batch)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if open, err = send(tr, batch); err != nil {
		return nil, err
	}
	if resp, err := send(tr, batch); err == nil {
		resp.Body.Close()
		return open, errors.New("a call past the budget was sent")
	}
	short, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if resp, err := send(tr, short); err == nil {
		resp.Body.Close()
		return open, errors.New("a call that could not wait was sent")
	}
	return open, nil
}

func send(tr http.RoundTripper, ctx context.Context) (*http.Response, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/v1/things?api_key="+Secret, nil)
	req.Header.Set("Authorization", "Bearer "+Secret)
	return tr.RoundTrip(req)
}

// Paused returns a Transport that tells obs what it does, on the scope
// "default" at 10 a second, whose first call is answered 429 with
// Retry-After: 2.
func Paused(obs observe.Observer) *pacer.Transport {
	return pacer.New(&api{}, pacer.WithObserver(obs), pacer.WithoutRetry(), pacer.WithLimit(pacer.PerSecond(10)),
		pacer.WithLogger(slog.New(slog.DiscardHandler)))
}

// Wait drives tr, made by Paused in a synctest bubble, to one call waiting
// out the pause: its first call is answered 429, and a second waits on
// "default", held back by the cooldown, from the moment Wait was called.
// It returns once the second call waits; done returns once it is answered.
func Wait(tr *pacer.Transport) (done func() error) {
	if resp, err := send(tr, context.Background()); err == nil {
		resp.Body.Close()
	}
	errs := make(chan error, 1)
	go func() {
		resp, err := send(tr, context.Background())
		if err == nil {
			resp.Body.Close()
		}
		errs <- err
	}()
	synctest.Wait()
	return func() error { return <-errs }
}

// Backfill returns a Transport that tells obs what it does, or its
// configuration error: the workload "backfill" with a budget of 300 calls
// an hour, on the scope "default" at 1 a second with a burst of 1 and no
// headroom.
func Backfill(obs observe.Observer) (*pacer.Transport, error) {
	ok := &api{}
	ok.calls.Store(1) // past the 429
	tr := pacer.New(ok, pacer.WithObserver(obs), pacer.WithHeadroom(1),
		pacer.WithLimit(pacer.Limit{Count: 1, Per: time.Second, Burst: 1}),
		pacer.WithWorkload("backfill", pacer.Workload{Budget: pacer.Budget{Limit: 300, Per: time.Hour}}),
		pacer.WithLogger(slog.New(slog.DiscardHandler)))
	return tr, tr.Err()
}

// The figures of RunBackfill, checked against its arithmetic: 29 calls
// spent over the 123 s since the first, 271 left, and 3 calls of 1 each
// waiting at 1 a second.
const (
	BackfillWindow  = 123 * time.Second
	BackfillRate    = 29.0 / 123
	BackfillRunsOut = 123 + 271/BackfillRate // seconds after the start
	BackfillEarly   = 3600 - BackfillRunsOut // seconds before the period ends
	BackfillBacklog = 3
	BackfillDrain   = 3 * time.Second
)

// RunBackfill drives tr, a Backfill, which must run in a synctest bubble:
// a call every five seconds from 0 s to 120 s, then at 123 s four calls at once, one admitted and three
// waiting. It returns the start, and a function that lets the waiting
// calls through and reports an error of any call.
func RunBackfill(tr *pacer.Transport) (start time.Time, release func() error) {
	start = time.Now()
	ctx := pacer.ContextWithWorkload(context.Background(), "backfill")
	var errs atomic.Pointer[error]
	call := func() {
		resp, err := send(tr, ctx)
		if err != nil {
			errs.CompareAndSwap(nil, &err)
			return
		}
		resp.Body.Close()
	}
	for i := range 25 {
		time.Sleep(time.Until(start.Add(time.Duration(i) * 5 * time.Second)))
		call()
	}
	time.Sleep(time.Until(start.Add(BackfillWindow)))
	done := make(chan struct{}, 4)
	for range 4 {
		go func() { call(); done <- struct{}{} }()
	}
	synctest.Wait()
	return start, func() error {
		for range 4 {
			<-done
		}
		if p := errs.Load(); p != nil {
			return *p
		}
		return nil
	}
}

// LongWindows returns a Transport that obs observes, over a provider whose
// one answer reports Anthropic's unified 5-hour window (LongUsed spent, its
// reset LongReset after the answer), and sends that one call. Call it in a
// synctest bubble.
func LongWindows(obs observe.Observer) (*pacer.Transport, error) {
	// A bubble starts in 2000, whose Unix seconds read as a count of
	// seconds to wait rather than as a time: go to the present first.
	time.Sleep(time.Until(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)))
	tr := pacer.New(headersAPI(func(now time.Time) http.Header {
		h := http.Header{}
		h.Set("Anthropic-Ratelimit-Unified-5h-Utilization", "0.35")
		h.Set("Anthropic-Ratelimit-Unified-5h-Reset", strconv.FormatInt(now.Add(LongReset).Unix(), 10))
		return h
	}), pacer.WithLimit(pacer.PerHour(5000)), pacer.WithObserver(obs))
	if err := tr.Err(); err != nil {
		return nil, err
	}
	resp, err := send(tr, context.Background())
	if err != nil {
		return nil, err
	}
	io.Copy(io.Discard, resp.Body)
	return tr, resp.Body.Close()
}

// What LongWindows' provider reports.
const (
	LongUsed  = 0.35
	LongReset = 2 * time.Hour
)

// headersAPI answers every call 200 with the headers h gives at the time
// of the call.
type headersAPI func(now time.Time) http.Header

func (h headersAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: h(time.Now()), Body: http.NoBody, Request: req}, nil
}

// Pool returns a Transport that obs observes, with a pool of two members:
// "a", whose calls the provider answers, and "b", whose quota is spent (a
// 402 with a Retry-After of PoolParkedFor). It sends two calls, of which
// one meets b's 402 and goes on to a: a sends both, b is parked. Call it
// in a synctest bubble.
func Pool(obs observe.Observer) (*pacer.Transport, error) {
	tr := pacer.New(poolAPI{}, pacer.WithObserver(obs), pacer.WithPool(pool.Config{Members: []pool.Member{
		{Name: "a", Apply: pool.Bearer("sk-a-secret")},
		{Name: "b", Apply: pool.Bearer("sk-b-secret")},
	}}))
	if err := tr.Err(); err != nil {
		return nil, err
	}
	for range 2 {
		resp, err := send(tr, context.Background())
		if err != nil {
			return nil, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return tr, nil
}

// PoolParkedFor is how long Pool's member b is parked.
const PoolParkedFor = time.Minute

// poolAPI answers member a's calls 200 and b's 402.
type poolAPI struct{}

func (poolAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Authorization") == "Bearer sk-b-secret" {
		h := http.Header{"Retry-After": {strconv.Itoa(int(PoolParkedFor.Seconds()))}}
		return &http.Response{StatusCode: http.StatusPaymentRequired, Header: h, Body: http.NoBody, Request: req}, nil
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}
