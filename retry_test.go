package pacer

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/internal/countingserver"
)

// fastRetries keeps the wall-clock cost of real-server retry tests small.
var fastRetries = WithRetry(RetryPolicy{InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond})

func TestRetriesAreSafeAgainstEveryFailure(t *testing.T) {
	for _, failure := range countingserver.Failures {
		t.Run(failure, func(t *testing.T) {
			send := func(method string, header http.Header) (attempts, executions int) {
				srv := countingserver.New(t, failure)
				// No keep-alives: net/http must not retry on a reused connection
				// behind pacer's back, or the counts would not be pacer's.
				base := &http.Transport{DisableKeepAlives: true}
				defer base.CloseIdleConnections()
				tr := New(base, fastRetries)
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				if failure == countingserver.SlowPastTimeout {
					ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
					defer cancel()
				}
				req, _ := http.NewRequestWithContext(ctx, method, srv.URL, strings.NewReader(`{"amount":100}`))
				for k, v := range header {
					req.Header[k] = v
				}
				if resp, err := tr.RoundTrip(req); err == nil {
					discard(resp)
				}
				return srv.Counts()
			}
			if _, executed := send(http.MethodPost, nil); executed > 1 {
				t.Errorf("a POST without a key was executed %d times", executed)
			}
			attempts, executed := send(http.MethodPost, http.Header{"Idempotency-Key": {"pay-42"}})
			if executed != 1 {
				t.Errorf("a POST with a key was executed %d times, want exactly once", executed)
			}
			wantAttempts := 3
			if failure == countingserver.SlowPastTimeout {
				wantAttempts = 1 // the deadline ends the call; nothing to retry into
			}
			if attempts != wantAttempts {
				t.Errorf("a POST with a key was attempted %d times, want %d", attempts, wantAttempts)
			}
			if attempts, _ := send(http.MethodGet, nil); attempts != wantAttempts {
				t.Errorf("a GET was attempted %d times, want %d", attempts, wantAttempts)
			}
		})
	}
}

// failingAPI answers every request with its status, counting them, or with
// an error when status is 0.
type failingAPI struct {
	status int
	header http.Header
	err    error
	mu     sync.Mutex
	calls  int
	bodies []string
}

func (f *failingAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
	}
	f.mu.Lock()
	f.calls++
	f.bodies = append(f.bodies, string(body))
	f.mu.Unlock()
	if f.status == 0 {
		return nil, f.err
	}
	return &http.Response{StatusCode: f.status, Header: f.header.Clone(), Body: io.NopCloser(strings.NewReader("failed")), Request: req}, nil
}

func TestRetryBudgetCapsExtraAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &failingAPI{status: http.StatusServiceUnavailable}
		tr := New(api)
		for range 1000 {
			mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		}
		extra := api.calls - 1000
		// 10 to start with, and a tenth of a retry earned by each call.
		if extra > 10+100 {
			t.Errorf("1,000 calls to a dead API made %d extra attempts; the budget allows 110", extra)
		}
		if extra < 100 {
			t.Errorf("only %d extra attempts; the budget allows 110", extra)
		}
		t.Logf("%d extra attempts for 1,000 calls", extra)
	})
}

func TestRetryAfterPastTheDeadlineReturnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &failingAPI{status: http.StatusServiceUnavailable, header: http.Header{"Retry-After": {"30"}}}
		tr := New(api)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
		start := time.Now()
		resp, err := tr.RoundTrip(req)
		mustNotErr(t, err)
		resp.Body.Close()
		if waited := time.Since(start); waited != 0 {
			t.Errorf("returned after %v, want at once", waited)
		}
		if resp.StatusCode != http.StatusServiceUnavailable || api.calls != 1 {
			t.Errorf("got %d after %d attempts, want the 503 after one", resp.StatusCode, api.calls)
		}
	})
}

func TestBackoffPastTheDeadlineSaysHowLongToWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &failingAPI{err: errors.New("connection reset by peer")}
		rec := &recorder{}
		tr := New(api, WithRetry(RetryPolicy{InitialBackoff: 10 * time.Second, MaxBackoff: 10 * time.Second}), WithObserver(rec))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		err := get(tr, ctx, "http://api.test/")
		var te *ThrottledError
		if !errors.As(err, &te) || te.RetryAfter < 5*time.Second || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want a ThrottledError with the backoff as RetryAfter", err)
		}
		if time.Since(start) != 0 || !strings.Contains(err.Error(), "connection reset") {
			t.Errorf("err = %v after %v, want the last error at once", err, time.Since(start))
		}
		if rec.kinds()[EventThrottled] != 1 {
			t.Errorf("observers heard %v, want one throttled event", rec.kinds())
		}
	})
}

// streamBody is a request body of n bytes that net/http cannot replay: it
// is not one of the types NewRequest gives a GetBody.
type streamBody struct{ io.Reader }

func (streamBody) Close() error { return nil }

func TestStreamedBodyLargerThanTheBufferIsSentOnce(t *testing.T) {
	api := &failingAPI{err: errors.New("connection reset by peer")}
	tr := New(api, fastRetries)
	payload := bytes.Repeat([]byte("x"), 2<<20)
	req, _ := http.NewRequest(http.MethodPut, "http://api.test/upload", streamBody{bytes.NewReader(payload)})
	_, err := tr.RoundTrip(req)
	var re *RetryError
	if !errors.As(err, &re) || !strings.Contains(re.Reason, "replay buffer") || re.Attempts != 1 {
		t.Fatalf("err = %v, want a RetryError saying the body could not be replayed", err)
	}
	if api.calls != 1 || len(api.bodies[0]) != len(payload) {
		t.Errorf("sent %d times with %d bytes, want once with all %d", api.calls, len(api.bodies[0]), len(payload))
	}
}

func TestSmallStreamedBodyIsReplayed(t *testing.T) {
	api := &failingAPI{status: http.StatusBadGateway}
	tr := New(api, fastRetries)
	req, _ := http.NewRequest(http.MethodPut, "http://api.test/", streamBody{strings.NewReader("the same bytes")})
	resp, err := tr.RoundTrip(req)
	mustNotErr(t, err)
	resp.Body.Close()
	if api.calls != 3 {
		t.Fatalf("attempted %d times, want 3", api.calls)
	}
	for i, b := range api.bodies {
		if b != "the same bytes" {
			t.Errorf("attempt %d sent %q", i+1, b)
		}
	}
}

func TestInjectedIdempotencyKeyIsTheSameOnEveryAttempt(t *testing.T) {
	var keys []string
	api := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		keys = append(keys, req.Header.Get("Idempotency-Key"))
		return &http.Response{StatusCode: 500, Body: http.NoBody, Request: req}, nil
	})
	tr := New(api, fastRetries, WithIdempotencyKey())
	for range 2 {
		req, _ := http.NewRequest(http.MethodPost, "http://api.test/v1/charges", strings.NewReader("amount=100"))
		resp, err := tr.RoundTrip(req)
		mustNotErr(t, err)
		resp.Body.Close()
		if req.Header.Get("Idempotency-Key") != "" {
			t.Fatal("the caller's request was given the key")
		}
	}
	if len(keys) != 6 || keys[0] == "" || keys[0] != keys[1] || keys[1] != keys[2] || keys[3] == keys[0] || keys[3] != keys[5] {
		t.Errorf("keys = %q, want one key per call, the same on its three attempts", keys)
	}
}

func TestProviderShouldRetryHeaderWins(t *testing.T) {
	no := &failingAPI{status: http.StatusServiceUnavailable, header: http.Header{"X-Should-Retry": {"false"}}}
	mustNotErr(t, get(New(no, fastRetries), context.Background(), "http://api.test/"))
	if no.calls != 1 {
		t.Errorf("x-should-retry: false, yet attempted %d times", no.calls)
	}
	yes := &failingAPI{status: http.StatusConflict, header: http.Header{"Stripe-Should-Retry": {"true"}}}
	mustNotErr(t, get(New(yes, fastRetries), context.Background(), "http://api.test/"))
	if yes.calls != 3 {
		t.Errorf("Stripe-Should-Retry: true on a 409, attempted %d times, want 3", yes.calls)
	}
}

func TestNotImplementedIsNeverRetried(t *testing.T) {
	api := &failingAPI{status: http.StatusNotImplemented, header: http.Header{"X-Should-Retry": {"true"}}}
	mustNotErr(t, get(New(api, fastRetries), context.Background(), "http://api.test/"))
	if api.calls != 1 {
		t.Errorf("501 attempted %d times", api.calls)
	}
	if New(api, WithRetry(RetryPolicy{Statuses: []int{501}})).Err() == nil {
		t.Error("a policy that retries 501 was accepted")
	}
}

func TestPostIsRetriedWhenItNeverLeft(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	mustNotErr(t, err)
	addr := ln.Addr().String()
	ln.Close() // nothing listens: every dial is refused
	var dials int
	base := &http.Transport{DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
		dials++
		return (&net.Dialer{}).DialContext(ctx, network, a)
	}}
	tr := New(base, fastRetries)
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/messages", strings.NewReader("body"))
	_, err = tr.RoundTrip(req)
	var re *RetryError
	if !errors.As(err, &re) || re.Attempts != 3 || dials != 3 {
		t.Errorf("err = %v after %d dials, want three refused attempts", err, dials)
	}
}

func TestPostWithoutKeyErrorSaysWhyItWasNotRetried(t *testing.T) {
	api := &failingAPI{err: io.ErrUnexpectedEOF}
	req, _ := http.NewRequest(http.MethodPost, "http://api.test/", strings.NewReader("{}"))
	_, err := New(api, fastRetries).RoundTrip(req)
	if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "without an idempotency key") || api.calls != 1 {
		t.Errorf("err = %v after %d attempts, want one attempt and the reason", err, api.calls)
	}
}

func TestRetriesArePacedLikeFirstAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sent []time.Time
		api := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			sent = append(sent, time.Now())
			return &http.Response{StatusCode: 500, Body: http.NoBody, Request: req}, nil
		})
		tr := New(api, WithLimit(Limit{Count: 1, Per: 10 * time.Second, Burst: 1}), fastRetries)
		mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		for i := 1; i < len(sent); i++ {
			if gap := sent[i].Sub(sent[i-1]); gap < 11*time.Second {
				t.Errorf("attempt %d went out %v after the one before; the limit allows one per 11.1 s", i+1, gap)
			}
		}
	})
}

func TestDiscardedResponsesAreDrainedAndClosed(t *testing.T) {
	var bodies []*countingBody
	api := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		b := &countingBody{Reader: strings.NewReader(strings.Repeat("e", 1000))}
		bodies = append(bodies, b)
		return &http.Response{StatusCode: 502, Body: b, Request: req}, nil
	})
	resp, err := New(api, fastRetries).RoundTrip(mustRequest(t))
	mustNotErr(t, err)
	resp.Body.Close()
	for i, b := range bodies[:2] {
		if b.read != 1000 || !b.closed {
			t.Errorf("discarded response %d: read %d bytes, closed %v", i+1, b.read, b.closed)
		}
	}
}

type countingBody struct {
	io.Reader
	read   int
	closed bool
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.Reader.Read(p)
	b.read += n
	return n, err
}

func (b *countingBody) Close() error { b.closed = true; return nil }

func mustRequest(t *testing.T) *http.Request {
	req, err := http.NewRequest(http.MethodGet, "http://api.test/", nil)
	mustNotErr(t, err)
	return req
}

func TestRetryPolicyValidation(t *testing.T) {
	for _, p := range []RetryPolicy{{MaxAttempts: -1}, {InitialBackoff: time.Second, MaxBackoff: time.Millisecond}, {Budget: RetryBudget{Ratio: -1}}} {
		if New(nil, WithRetry(p)).Err() == nil {
			t.Errorf("%+v was accepted", p)
		}
	}
}
