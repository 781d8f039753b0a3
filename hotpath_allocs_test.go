//go:build !race

// The race detector's sync.Pool drops items on purpose, so allocations are
// counted without it: scripts/test runs the tests named *Allocs apart.

package pacer

import (
	"net/http"
	"testing"
)

// reusedResponse answers every request with the same response, reset, so
// that the allocations counted are pacer's alone.
type reusedResponse struct{ resp http.Response }

func (r *reusedResponse) RoundTrip(req *http.Request) (*http.Response, error) {
	r.resp = http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}
	return &r.resp, nil
}

// The hot path — tokens there, nothing to wait for or retry — allocates at
// most once a request: the body wrapper that releases a concurrency slot.
func TestHotPathAllocs(t *testing.T) {
	const never = 1 << 30 // a rate and a cap no benchmark reaches
	for _, tc := range []struct {
		name string
		opts []Option
		want float64
	}{
		{"limit, concurrency cap, retries", []Option{WithLimit(PerSecond(never)), WithConcurrency(never)}, 1},
		{"limit, concurrency cap, no retries", []Option{WithLimit(PerSecond(never)), WithConcurrency(never), WithoutRetry()}, 1},
		{"limit and retries, no cap", []Option{WithLimit(PerSecond(never))}, 0},
		// A Meter costs a response that is not an LLM's nothing.
		{"limit, concurrency cap, a meter", []Option{WithLimit(PerSecond(never)), WithConcurrency(never), WithMeter(testMeter())}, 1},
	} {
		tr := New(&reusedResponse{}, tc.opts...)
		req, _ := http.NewRequest(http.MethodGet, "http://api.test/", nil)
		got := testing.AllocsPerRun(1000, func() {
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		})
		if got > tc.want {
			t.Errorf("%s: %v allocations a request, want at most %v", tc.name, got, tc.want)
		}
	}
}
