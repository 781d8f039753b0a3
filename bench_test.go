package pacer

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"golang.org/x/time/rate"
)

// stubTransport answers every request at once with an empty body: the base
// against which the overhead of a limiter is measured.
type stubTransport struct{}

func (stubTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
}

// rateSemaphore is x/time/rate plus a channel semaphore, written the obvious
// way: the peer pacer's hot path is measured against.
type rateSemaphore struct {
	base    http.RoundTripper
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

const unlimited = 1 << 30 // a rate the benchmark never waits on

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

// BenchmarkRoundTrip measures the hot path: tokens and a slot are free, so
// nothing waits. Subtract "stub" from the others for each one's overhead.
func BenchmarkRoundTrip(b *testing.B) {
	b.Run("stub", func(b *testing.B) { benchRoundTrip(b, stubTransport{}) })
	b.Run("rate+semaphore", func(b *testing.B) {
		benchRoundTrip(b, &rateSemaphore{stubTransport{}, rate.NewLimiter(unlimited, unlimited), make(chan struct{}, unlimited>>10)})
	})
	b.Run("rate", func(b *testing.B) {
		lim := rate.NewLimiter(unlimited, unlimited)
		benchRoundTrip(b, roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if err := lim.Wait(req.Context()); err != nil {
				return nil, err
			}
			return stubTransport{}.RoundTrip(req)
		}))
	})
	b.Run("pacer", func(b *testing.B) {
		benchRoundTrip(b, New(stubTransport{}, WithLimit(PerSecond(unlimited)), WithConcurrency(unlimited>>10)))
	})
	b.Run("pacer-rate-only", func(b *testing.B) {
		benchRoundTrip(b, New(stubTransport{}, WithLimit(PerSecond(unlimited))))
	})
	// Without the retrier: how much of pacer's overhead is the retry
	// bookkeeping that every call pays even when nothing is retried.
	b.Run("pacer-no-retry", func(b *testing.B) {
		benchRoundTrip(b, New(stubTransport{}, WithLimit(PerSecond(unlimited)), WithConcurrency(unlimited>>10), WithoutRetry()))
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// BenchmarkRoundTripParallel runs 64 goroutines on one scope.
func BenchmarkRoundTripParallel(b *testing.B) {
	run := func(b *testing.B, rt http.RoundTripper) {
		b.SetParallelism(64 / runtime.GOMAXPROCS(0))
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			req, _ := http.NewRequest(http.MethodGet, "http://api.test/", nil)
			for pb.Next() {
				resp, err := rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	}
	b.Run("rate+semaphore", func(b *testing.B) {
		run(b, &rateSemaphore{stubTransport{}, rate.NewLimiter(unlimited, unlimited), make(chan struct{}, unlimited>>10)})
	})
	b.Run("pacer", func(b *testing.B) {
		run(b, New(stubTransport{}, WithLimit(PerSecond(unlimited)), WithConcurrency(unlimited>>10)))
	})
}

// BenchmarkDistinctKeys charges each request to one of 100,000 keys, and
// reports the memory the keys' buckets hold.
func BenchmarkDistinctKeys(b *testing.B) {
	const keys = 100_000
	tr := New(stubTransport{},
		WithScope(Scope{Name: "user", Limit: PerSecond(10), Concurrency: 4}),
		WithRoute(func(req *http.Request, charges []Charge) []Charge {
			return append(charges[:0], Charge{Scope: "user", Key: req.Header.Get("X-User")})
		}))
	reqs := make([]*http.Request, keys)
	for i := range reqs {
		reqs[i], _ = http.NewRequestWithContext(context.Background(), http.MethodGet, "http://api.test/", nil)
		reqs[i].Header.Set("X-User", strconv.Itoa(i))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, req := range reqs { // every key once: 100,000 live buckets
		resp, _ := tr.RoundTrip(req)
		resp.Body.Close()
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	bytesPerKey := float64(after.HeapAlloc-before.HeapAlloc) / keys
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		resp, err := tr.RoundTrip(reqs[i%keys])
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		i++
	}
	b.ReportMetric(bytesPerKey, "B/key")
}
