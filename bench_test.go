package pacer

import (
	"context"
	"net/http"
	"runtime"
	"strconv"
	"testing"

	"github.com/pacer-go/pacer/internal/baseline"
	"golang.org/x/time/rate"
)

// The stub and the rate+semaphore baseline live in internal/baseline, shared
// with the bench module's peer benchmarks.
type stubTransport = baseline.Stub

const unlimited = baseline.Unlimited

// BenchmarkRoundTrip measures the hot path: tokens and a slot are free, so
// nothing waits. Subtract "stub" from the others for each one's overhead.
func BenchmarkRoundTrip(b *testing.B) {
	b.Run("stub", func(b *testing.B) { baseline.RoundTrips(b, stubTransport{}) })
	b.Run("rate+semaphore", func(b *testing.B) {
		baseline.RoundTrips(b, baseline.NewRateSemaphore(stubTransport{}))
	})
	b.Run("rate", func(b *testing.B) {
		lim := rate.NewLimiter(unlimited, unlimited)
		baseline.RoundTrips(b, roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if err := lim.Wait(req.Context()); err != nil {
				return nil, err
			}
			return stubTransport{}.RoundTrip(req)
		}))
	})
	b.Run("pacer", func(b *testing.B) {
		baseline.RoundTrips(b, New(stubTransport{}, WithLimit(PerSecond(unlimited)), WithConcurrency(unlimited>>10)))
	})
	b.Run("pacer-rate-only", func(b *testing.B) {
		baseline.RoundTrips(b, New(stubTransport{}, WithLimit(PerSecond(unlimited))))
	})
	// Without the retrier: how much of pacer's overhead is the retry
	// bookkeeping that every call pays even when nothing is retried.
	b.Run("pacer-no-retry", func(b *testing.B) {
		baseline.RoundTrips(b, New(stubTransport{}, WithLimit(PerSecond(unlimited)), WithConcurrency(unlimited>>10), WithoutRetry()))
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
		run(b, baseline.NewRateSemaphore(stubTransport{}))
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
