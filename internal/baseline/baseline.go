// Package baseline holds what pacer's hot path is measured against, and how:
// the benchmark loop (RoundTrips), a stub transport that answers at once,
// and x/time/rate plus a channel semaphore written the obvious way. The root
// package's benchmarks and the bench module's use the same code, so their
// figures compare.
package baseline

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"golang.org/x/time/rate"
)

// Unlimited is a rate and a number of slots a benchmark never waits on.
const Unlimited = 1 << 30

// Stub answers every request at once with an empty body.
type Stub struct{}

// RoundTrip implements http.RoundTripper.
func (Stub) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
}

// RateSemaphore is x/time/rate in front of a channel semaphore, the slot
// released when the response body is closed.
type RateSemaphore struct {
	base    http.RoundTripper
	limiter *rate.Limiter
	slots   chan struct{}
}

// NewRateSemaphore returns a RateSemaphore over base that never waits.
func NewRateSemaphore(base http.RoundTripper) *RateSemaphore {
	return &RateSemaphore{base, rate.NewLimiter(Unlimited, Unlimited), make(chan struct{}, Unlimited>>10)}
}

// RoundTrip implements http.RoundTripper.
func (r *RateSemaphore) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	select {
	case r.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := r.limiter.Wait(ctx); err != nil {
		<-r.slots
		return nil, err
	}
	resp, err := r.base.RoundTrip(req)
	if err != nil {
		<-r.slots
		return nil, err
	}
	resp.Body = &semaphoreBody{ReadCloser: resp.Body, slots: r.slots}
	return resp, nil
}

type semaphoreBody struct {
	io.ReadCloser
	slots chan struct{}
	done  atomic.Bool
}

func (b *semaphoreBody) Close() error {
	if b.done.CompareAndSwap(false, true) {
		<-b.slots
	}
	return b.ReadCloser.Close()
}

// RoundTrips benchmarks rt: one GET a loop, its body closed, allocations
// reported.
func RoundTrips(b *testing.B, rt http.RoundTripper) {
	req, _ := http.NewRequest(http.MethodGet, "http://api.test/", nil)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := rt.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
	}
}
