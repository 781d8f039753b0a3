// Package storebench drives a shared store through a Transport, for the
// benchmarks of store/redisstore and store/pgstore that measure what only a
// Transport reaches: the lease (store.Policy.Lease and AdaptiveLease).
package storebench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/storetest"
)

// Decide returns a decision made by a Transport on s: a request charged to
// one bucket, named for b, that never runs dry (a billion a second, all of
// it burst, no headroom), sent to a base that answers at once. Each call is
// one admission, as one Take on s was; p sets the lease. The Transport's
// own work is a microsecond or two, small beside a round trip.
func Decide(b testing.TB, s store.Store, p store.Policy) func(ctx context.Context) error {
	scope := storetest.Scope(b)
	opts := []pacer.Option{
		pacer.WithStore(s, p), pacer.WithHeadroom(1), pacer.WithoutRetry(),
		pacer.WithScope(pacer.Scope{Name: scope, Limit: pacer.Limit{Count: 1e9, Per: time.Second, Burst: 1e9}}),
		pacer.WithRoute(func(*http.Request, []pacer.Charge) []pacer.Charge { return []pacer.Charge{{Scope: scope}} }),
	}
	tr := pacer.New(answer{}, opts...)
	if err := tr.Err(); err != nil {
		b.Fatal(err)
	}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.bench/", nil)
		if err != nil {
			return err
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
}

// answer is a base transport that answers every request with 200 at once.
type answer struct{}

func (answer) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}
