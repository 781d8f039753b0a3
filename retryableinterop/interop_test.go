package retryableinterop

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/internal/countingserver"
	"github.com/pacer-go/pacer/retry"
)

// newClient is a retryablehttp client with pacer's rules, fast waits and no
// keep-alives, so that net/http does not retry behind its back.
func newClient(stack bool, opts ...pacer.Option) *retryablehttp.Client {
	c := retryablehttp.NewClient()
	c.Logger = nil
	c.RetryMax = 2
	c.RetryWaitMin, c.RetryWaitMax = time.Millisecond, 2*time.Millisecond
	c.HTTPClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if stack {
		Stack(c, retry.Policy{}, opts...)
	} else {
		c.CheckRetry = CheckRetry(retry.Policy{})
		c.Backoff = Backoff(0)
	}
	return c
}

func TestAdaptersAreSafeAgainstEveryFailure(t *testing.T) {
	for _, stack := range []bool{false, true} {
		for _, failure := range countingserver.Failures {
			t.Run(failure, func(t *testing.T) {
				send := func(method, key string) (attempts, executions int) {
					srv := countingserver.New(t, failure)
					timeout := time.Second
					if failure == countingserver.SlowPastTimeout {
						timeout = 100 * time.Millisecond
					}
					ctx, cancel := context.WithTimeout(context.Background(), timeout)
					defer cancel()
					req, _ := retryablehttp.NewRequestWithContext(ctx, method, srv.URL, strings.NewReader(`{"amount":100}`))
					if key != "" {
						req.Header.Set("Idempotency-Key", key)
					}
					c := newClient(stack)
					c.ErrorHandler = retryablehttp.PassthroughErrorHandler
					if resp, err := c.Do(req); err == nil {
						resp.Body.Close()
					}
					return srv.Counts()
				}
				if _, executed := send(http.MethodPost, ""); executed > 1 {
					t.Errorf("a POST without a key was executed %d times", executed)
				}
				want := 3
				if failure == countingserver.SlowPastTimeout {
					want = 1
				}
				attempts, executed := send(http.MethodPost, "pay-42")
				// After a reset, retryablehttp hides the request from
				// CheckRetry, so a keyed POST is not retried then: the safe side.
				if failure == countingserver.ResetAfterRead {
					want = 1
				}
				if executed != 1 || attempts != want {
					t.Errorf("a POST with a key: %d attempts, %d executions; want %d and 1", attempts, executed, want)
				}
				want = 3
				if failure == countingserver.SlowPastTimeout {
					want = 1
				}
				if attempts, _ := send(http.MethodGet, ""); attempts != want {
					t.Errorf("a GET was attempted %d times, want %d", attempts, want)
				}
			})
		}
	}
}

func TestBackoffHonoursAndCapsTheServer(t *testing.T) {
	b := Backoff(time.Minute)
	resp := func(h map[string]string) *http.Response {
		r := &http.Response{StatusCode: 429, Header: http.Header{}}
		for k, v := range h {
			r.Header.Set(k, v)
		}
		return r
	}
	date := "Sun, 06 Nov 1994 08:49:37 GMT"
	cases := []struct {
		header map[string]string
		want   time.Duration
	}{
		{map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{map[string]string{"Retry-After": "999999999"}, time.Minute},
		{map[string]string{"Date": date, "Retry-After": "Sun, 06 Nov 1994 08:49:47 GMT"}, 10 * time.Second},
		{map[string]string{"Retry-After-Ms": "1500"}, 1500 * time.Millisecond},
		{map[string]string{"X-Ratelimit-Remaining-Requests": "0", "X-Ratelimit-Reset-Requests": "6m0s"}, time.Minute},
	}
	for _, c := range cases {
		if got := b(time.Second, 30*time.Second, 0, resp(c.header)); got != c.want {
			t.Errorf("%v: waited %v, want %v", c.header, got, c.want)
		}
	}
	for attempt := range 10 {
		got := b(100*time.Millisecond, 2*time.Second, attempt, nil)
		curve := min(100*time.Millisecond<<attempt, 2*time.Second)
		if got < curve/2 || got > curve {
			t.Errorf("attempt %d: %v, want within [%v, %v]", attempt, got, curve/2, curve)
		}
	}
}

func TestStackPacesEveryAttempt(t *testing.T) {
	// In virtual time, over an in-memory API, so that the gaps are exact:
	// wall-clock gaps seen by a server move with the scheduler.
	synctest.Test(t, func(t *testing.T) {
		var sent []time.Time
		c := retryablehttp.NewClient()
		c.Logger = nil
		c.RetryMax = 2
		c.RetryWaitMin, c.RetryWaitMax = time.Millisecond, 2*time.Millisecond
		c.HTTPClient = &http.Client{Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
			sent = append(sent, time.Now())
			return &http.Response{StatusCode: http.StatusBadGateway, Body: http.NoBody, Request: req}, nil
		})}
		Stack(c, retry.Policy{}, pacer.WithLimit(pacer.Limit{Count: 1, Per: 50 * time.Millisecond, Burst: 1}), pacer.WithHeadroom(1))
		c.ErrorHandler = retryablehttp.PassthroughErrorHandler
		resp, err := c.Get("http://api.test/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if len(sent) != 3 {
			t.Fatalf("%d attempts, want 3", len(sent))
		}
		for i := 1; i < len(sent); i++ {
			// The backoff alone is 1–2 ms; pacer spaces attempts 50 ms apart.
			if gap := sent[i].Sub(sent[i-1]); gap < 50*time.Millisecond {
				t.Errorf("attempt %d went out %v after the one before; pacer allows one per 50 ms", i+1, gap)
			}
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
