package bench

import (
	"net/http"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/bulkhead"
	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/failsafe-go/failsafe-go/ratelimiter"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/internal/baseline"
)

// The stub and the rate+semaphore baseline are the root package's own
// (internal/baseline): measured here in the same binary and run as the
// peers, since two binaries' figures for the same code differ by more than
// the targets' margins.
type stub = baseline.Stub

const unlimited = baseline.Unlimited

// BenchmarkPeers measures the hot path of the peers as the harness configures
// them — limits that never make a call wait, nothing to retry — over the
// same stub, beside x/time/rate + a semaphore. Subtract "stub" for each
// one's overhead.
func BenchmarkPeers(b *testing.B) {
	b.Run("stub", func(b *testing.B) { baseline.RoundTrips(b, stub{}) })
	b.Run("rate+semaphore", func(b *testing.B) {
		baseline.RoundTrips(b, baseline.NewRateSemaphore(stub{}))
	})
	b.Run("retryablehttp", func(b *testing.B) {
		c := retryablehttp.NewClient()
		c.HTTPClient.Transport = stub{}
		c.Logger = nil
		baseline.RoundTrips(b, &retryablehttp.RoundTripper{Client: c})
	})
	b.Run("failsafe-go", func(b *testing.B) {
		baseline.RoundTrips(b, failsafehttp.NewRoundTripper(stub{},
			failsafehttp.NewRetryPolicyBuilder().Build(),
			bulkhead.NewBuilder[*http.Response](unlimited).Build(),
			ratelimiter.NewSmoothBuilderWithMaxRate[*http.Response](time.Nanosecond).WithMaxWaitTime(time.Second).Build()))
	})
	b.Run("pacer", func(b *testing.B) {
		baseline.RoundTrips(b, pacer.New(stub{}, pacer.WithLimit(pacer.PerSecond(unlimited)), pacer.WithConcurrency(unlimited>>10)))
	})
}
