package pacer

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// countlessAPI is a token bucket (bucketAPI) that says nothing but a bare
// 429: no count, no limit, no Retry-After.
type countlessAPI struct{ *bucketAPI }

func (a countlessAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := a.bucketAPI.RoundTrip(req)
	if err == nil {
		for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After"} {
			resp.Header.Del(h)
		}
	}
	return resp, err
}

// A scope at rest says nothing of the server: the first refusal after it
// is measured on what was accepted since the calls resumed, or halves the
// pace when that is too little. Measured across the rest, the few calls
// accepted before the refusal read as the server's rate over the whole
// rest: a bucket of 50 a second, told 100, was cut to 5 a second, and took
// 19 of the 500 calls it allowed in the next ten seconds.
func TestTheFirstRefusalAfterARestIsNotMeasuredOnTheRest(t *testing.T) {
	for _, rest := range []time.Duration{0, time.Minute} {
		t.Run("rest "+rest.String()+" after the climb", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				toPresent()
				api := countlessAPI{&bucketAPI{rate: 50, burst: 5}}
				tr := New(&wire{next: api}, WithLogger(slogTo(io.Discard)), WithoutRetry(), WithLimit(PerSecond(100)))
				hammer(tr, 16, time.Now().Add(3*time.Second))
				// Rest until the climb back is over, and then some.
				time.Sleep(scopeStats(t, tr, "default").RecoveredIn + rest)
				start := time.Now()
				hammer(tr, 16, start.Add(10*time.Second))
				a, r := api.counts("pacer", start, start.Add(10*time.Second))
				// 499 accepted, 6 refused: the burst that found the limit
				// again, told twice it, as a blind start does.
				if a < 450 || r > 10 {
					t.Errorf("after the rest: %d accepted of the 500 the server allowed, %d refused; want 450 or more, and 10 refused at most", a, r)
				}
			})
		})
	}
}

// A scope whose callers ask for less than its pace is not at rest between
// the calls they ask for: a refusal measures what the server accepted
// across those gaps, and finds a limit below what they ask at once. Paced
// at 100 a second, asked for 8, behind a server of 5: 0.96 of the 5 over
// two minutes. Read as rest whenever it sent under a quarter of its pace,
// it halved its way down, refusal by refusal: 0.887.
func TestCallersWhoAskForLittleAreNotAtRest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		api := countlessAPI{&bucketAPI{rate: 5, burst: 1}}
		tr := New(&wire{next: api}, WithLogger(slogTo(io.Discard)), WithoutRetry(), WithLimit(PerSecond(100)))
		start := time.Now()
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for time.Since(start) < 120*time.Second {
					get(tr, context.Background(), "http://api.test/")
					time.Sleep(500 * time.Millisecond) // two a second each
				}
			})
		}
		wg.Wait()
		a, r := api.counts("pacer", start, start.Add(120*time.Second))
		if float64(a) < 0.93*5*120 || r > 30 {
			t.Errorf("asked for 8 a second behind a server of 5: %d accepted of 600, %d refused; want 558 or more, 30 refused at most", a, r)
		}
	})
}
