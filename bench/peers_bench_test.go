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
)

// stub answers every request at once with an empty body: the base against
// which each client's overhead is measured, as in the root package's
// BenchmarkRoundTrip.
type stub struct{}

func (stub) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
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
// same stub. Subtract "stub" for each one's overhead; the root package's
// BenchmarkRoundTrip has x/time/rate + a semaphore on the same footing.
func BenchmarkPeers(b *testing.B) {
	b.Run("stub", func(b *testing.B) { benchRoundTrip(b, stub{}) })
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
