package bench

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/bulkhead"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/ratelimiter"
	"github.com/hashicorp/go-retryablehttp"
	"golang.org/x/time/rate"

	"github.com/pacer-go/pacer"
)

// stub answers every request at once with an empty body: the base against
// which each client's overhead is measured, as in the root package's
// BenchmarkRoundTrip.
type stub struct{}

func (stub) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
}

// rateSemaphore is x/time/rate plus a channel semaphore, the baseline the
// targets are set against. It is the root package's (bench_test.go), again:
// that one is in a test file of another module, and measuring the baseline
// in the same binary and run as the peers keeps the ratios honest — the two
// binaries' figures for the same code differ by more than the margins.
type rateSemaphore struct {
	limiter *rate.Limiter
	slots   chan struct{}
}

func (r *rateSemaphore) RoundTrip(req *http.Request) (*http.Response, error) {
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
	resp, err := stub{}.RoundTrip(req)
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

const unlimited = 1 << 30 // a rate and a concurrency the benchmark never waits on

func benchRoundTrip(b *testing.B, rt http.RoundTripper) {
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

// BenchmarkPeers measures the hot path of the peers as the harness configures
// them — limits that never make a call wait, nothing to retry — over the
// same stub, beside x/time/rate + a semaphore. Subtract "stub" for each
// one's overhead.
func BenchmarkPeers(b *testing.B) {
	b.Run("stub", func(b *testing.B) { benchRoundTrip(b, stub{}) })
	b.Run("rate+semaphore", func(b *testing.B) {
		benchRoundTrip(b, &rateSemaphore{rate.NewLimiter(unlimited, unlimited), make(chan struct{}, unlimited>>10)})
	})
	b.Run("retryablehttp", func(b *testing.B) {
		c := retryablehttp.NewClient()
		c.HTTPClient.Transport = stub{}
		c.Logger = nil
		benchRoundTrip(b, &retryablehttp.RoundTripper{Client: c})
	})
	b.Run("failsafe-go", func(b *testing.B) {
		benchRoundTrip(b, failsafehttp.NewRoundTripper(stub{},
			failsafehttp.NewRetryPolicyBuilder().Build(),
			bulkhead.NewBuilder[*http.Response](unlimited).Build(),
			ratelimiter.NewSmoothBuilderWithMaxRate[*http.Response](time.Nanosecond).WithMaxWaitTime(time.Second).Build()))
	})
	b.Run("pacer", func(b *testing.B) {
		benchRoundTrip(b, pacer.New(stub{}, pacer.WithLimit(pacer.PerSecond(unlimited)), pacer.WithConcurrency(unlimited>>10)))
	})
}
