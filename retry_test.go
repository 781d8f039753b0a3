package pacer

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"fmt"
	"github.com/pacer-go/pacer/classify"
	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/internal/countingserver"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/retry"
)

// fastRetries keeps the wall-clock cost of real-server retry tests small.
var fastRetries = WithRetry(retry.Policy{InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond})

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
		tr := New(api, WithRetry(retry.Policy{InitialBackoff: 10 * time.Second, MaxBackoff: 10 * time.Second}), WithObserver(rec))
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
		if rec.kinds()[observe.EventThrottled] != 1 {
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
	var re *retry.Error
	if !errors.As(err, &re) || !strings.Contains(re.Why, "replay buffer") || re.Attempts != 1 {
		t.Fatalf("err = %v, want a retry.Error saying the body could not be replayed", err)
	}
	if api.calls != 1 || len(api.bodies[0]) != len(payload) {
		t.Errorf("sent %d times with %d bytes, want once with all %d", api.calls, len(api.bodies[0]), len(payload))
	}
}

func TestSmallStreamedBodyIsReplayed(t *testing.T) {
	api := &failingAPI{status: http.StatusBadGateway}
	putStreamed(t, New(api, fastRetries), "the same bytes")
	if api.calls != 3 {
		t.Fatalf("attempted %d times, want 3", api.calls)
	}
	for i, b := range api.bodies {
		if b != "the same bytes" {
			t.Errorf("attempt %d sent %q", i+1, b)
		}
	}
}

// putStreamed sends a PUT through tr whose body has no GetBody, and closes
// the response.
func putStreamed(t *testing.T, tr http.RoundTripper, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, "http://api.test/", streamBody{strings.NewReader(body)})
	resp, err := tr.RoundTrip(req)
	mustNotErr(t, err)
	resp.Body.Close()
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
	if New(api, WithRetry(retry.Policy{Statuses: []int{501}})).Err() == nil {
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
	var re *retry.Error
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
	for _, p := range []retry.Policy{{MaxAttempts: -1}, {InitialBackoff: time.Second, MaxBackoff: time.Millisecond}, {Budget: retry.Budget{Ratio: -1}}} {
		if New(nil, WithRetry(p)).Err() == nil {
			t.Errorf("%+v was accepted", p)
		}
	}
}

// refusedAddr returns the address of a port nothing listens on: every dial
// to it is refused.
func refusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	mustNotErr(t, err)
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// countingDials is a base transport that counts its dials.
func countingDials(dials *atomic.Int32) *http.Transport {
	return &http.Transport{DisableKeepAlives: true, DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, a)
	}}
}

// pipeBody returns the read end of an os.Pipe that carries payload, then
// ends: a body with no GetBody, which net/http cannot replay.
func pipeBody(t *testing.T, payload string) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	mustNotErr(t, err)
	go func() {
		w.Write([]byte(payload)) // fails once the reader is closed: fine
		w.Close()
	}()
	t.Cleanup(func() { r.Close() })
	return r
}

// fileBody returns an *os.File holding payload, at its start.
func fileBody(t *testing.T, payload string) *os.File {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "body")
	mustNotErr(t, err)
	_, err = f.WriteString(payload)
	mustNotErr(t, err)
	_, err = f.Seek(0, io.SeekStart)
	mustNotErr(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// A POST whose body net/http cannot replay (a pipe, a file), to a port that
// refuses the connection, must not crash: once pacer has buffered the body
// it is sent again, as a request that never left may be; a body too large
// to buffer is sent once, with an error that says why.
func TestPostWithStreamedBodyToARefusedPort(t *testing.T) {
	addr := refusedAddr(t)
	bodies := map[string]func(t *testing.T, payload string) *os.File{"pipe": pipeBody, "file": fileBody}
	for name, body := range bodies {
		t.Run(name+", buffered", func(t *testing.T) {
			var dials atomic.Int32
			tr := New(countingDials(&dials), fastRetries, quiet)
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/messages", body(t, "to=1&body=hi"))
			_, err := tr.RoundTrip(req)
			var re *retry.Error
			if !errors.As(err, &re) || re.Attempts != 3 || dials.Load() != 3 {
				t.Errorf("err = %v after %d dials, want three refused attempts", err, dials.Load())
			}
		})
		t.Run(name+", too large to buffer", func(t *testing.T) {
			var dials atomic.Int32
			tr := New(countingDials(&dials), WithRetry(retry.Policy{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxBufferedBody: 4}), quiet)
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/messages", body(t, "to=1&body=hi"))
			_, err := tr.RoundTrip(req)
			var re *retry.Error
			if !errors.As(err, &re) || re.Attempts != 1 || dials.Load() != 1 || !strings.Contains(re.Why, "MaxBufferedBody") {
				t.Errorf("err = %v after %d dials, want one attempt and a reason naming MaxBufferedBody", err, dials.Load())
			}
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("err = %v, want it to wrap the refusal", err)
			}
		})
	}
}

// never20429 classifies every 429 as never processed, as Twilio's 20429 is.
var never20429 = WithClassifier(func(resp *http.Response, body []byte) classify.Verdict {
	return classify.Verdict{NeverProcessed: resp.StatusCode == http.StatusTooManyRequests}
})

// The classifier's NeverProcessed verdict allows a POST without a key to be
// sent again, but only with a body that can be.
func TestNeverProcessedPostWithStreamedBody(t *testing.T) {
	api := &failingAPI{status: http.StatusTooManyRequests}
	tr := New(api, fastRetries, never20429)
	req, _ := http.NewRequest(http.MethodPost, "http://api.test/Messages.json", fileBody(t, "To=1&Body=hi"))
	resp, err := tr.RoundTrip(req)
	mustNotErr(t, err)
	resp.Body.Close()
	if api.calls != 3 || api.bodies[1] != "To=1&Body=hi" || api.bodies[2] != "To=1&Body=hi" {
		t.Errorf("attempted %d times with bodies %q, want 3 with the same body", api.calls, api.bodies)
	}

	api = &failingAPI{status: http.StatusTooManyRequests}
	tr = New(api, WithRetry(retry.Policy{InitialBackoff: time.Millisecond, MaxBufferedBody: 4}), never20429, quiet)
	req, _ = http.NewRequest(http.MethodPost, "http://api.test/Messages.json", pipeBody(t, "To=1&Body=hi"))
	resp, err = tr.RoundTrip(req)
	mustNotErr(t, err)
	resp.Body.Close()
	if api.calls != 1 || api.bodies[0] != "To=1&Body=hi" || resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("attempted %d times with bodies %q, want the 429 after one attempt with the whole body", api.calls, api.bodies)
	}
}

// slowBody is a request body that yields one byte every 100 ms, for ten
// seconds, and stops at once when closed, as a pipe does; it has no GetBody.
type slowBody struct {
	left      int
	closed    chan struct{}
	closeOnce sync.Once
}

func newSlowBody() *slowBody { return &slowBody{left: 100, closed: make(chan struct{})} }

func (b *slowBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	select {
	case <-b.closed:
		return 0, os.ErrClosed
	case <-time.After(100 * time.Millisecond):
	}
	b.left--
	p[0] = 'x'
	return 1, nil
}

func (b *slowBody) Close() error { b.closeOnce.Do(func() { close(b.closed) }); return nil }

func (b *slowBody) isClosed() bool {
	select {
	case <-b.closed:
		return true
	default:
		return false
	}
}

// Buffering a body for replay honours the request's deadline, as a plain
// transport sending it would.
func TestBufferingTheBodyHonoursTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &stubAPI{clock: clock.System}
		tr := New(api)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		body := newSlowBody()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, "http://api.test/", body)
		start := time.Now()
		_, err := tr.RoundTrip(req)
		if took := time.Since(start); took != 200*time.Millisecond || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("RoundTrip returned %v after %v, want the deadline at 200ms", err, took)
		}
		if !body.isClosed() || api.count() != 0 {
			t.Errorf("body closed %v, sent %d times; want closed and never sent", body.isClosed(), api.count())
		}
	})
}

// Budgets count attempts sent: a retry spends like a first attempt, and a
// call stopped by its budget between attempts says how many were sent and
// what the last one got.
func TestBudgetCountsEveryAttemptSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &failingAPI{status: http.StatusServiceUnavailable}
		tr := New(api, WithWorkload("backfill", Workload{Budget: Budget{Limit: 5, Per: time.Hour}}))
		ctx := ContextWithWorkload(context.Background(), "backfill")
		mustNotErr(t, get(tr, ctx, "http://api.test/")) // three attempts, the last 503 handed back
		if spent := tr.Stats().Workloads[0].Spent; api.calls != 3 || spent != 3 {
			t.Fatalf("%d attempts spent %v of the budget; want 3 and 3", api.calls, spent)
		}
		err := get(tr, ctx, "http://api.test/")
		var re *retry.Error
		if !errors.As(err, &re) || re.Attempts != 2 || re.LastStatus != http.StatusServiceUnavailable || !errors.Is(err, ErrBudgetExhausted) {
			t.Fatalf("err = %v, want a retry.Error after 2 attempts, last status 503, matching ErrBudgetExhausted", err)
		}
		if msg := err.Error(); !strings.Contains(msg, "2 attempts") || !strings.Contains(msg, "503") || strings.Contains(msg, "nothing was sent") {
			t.Errorf("err = %q, want it to say 2 attempts were sent and the last status", msg)
		}
		if spent := tr.Stats().Workloads[0].Spent; api.calls != 5 || spent != 5 {
			t.Errorf("%d attempts in all spent %v; want 5 and 5", api.calls, spent)
		}
	})
}

// An attempt whose connection was refused never reached the provider: it
// does not spend the budget.
func TestRefusedConnectionDoesNotSpendTheBudget(t *testing.T) {
	addr := refusedAddr(t)
	var dials atomic.Int32
	tr := New(countingDials(&dials), fastRetries, WithWorkload("backfill", Workload{Budget: Budget{Limit: 1, Per: time.Hour}}))
	ctx := ContextWithWorkload(context.Background(), "backfill")
	err := get(tr, ctx, "http://"+addr+"/")
	var re *retry.Error
	if !errors.As(err, &re) || re.Attempts != 3 || dials.Load() != 3 || errors.Is(err, ErrBudgetExhausted) {
		t.Errorf("err = %v after %d dials, want three refused attempts", err, dials.Load())
	}
	if spent := tr.Stats().Workloads[0].Spent; spent != 0 {
		t.Errorf("refused attempts spent %v of the budget", spent)
	}
}

// The net/http convention: a response is not an error. A call whose
// retries end on a response hands that response back with a nil error; a
// call that ends without one returns a *retry.Error, also when pacer itself
// refused a later attempt.
func TestRetriesEndOnTheLastResponseOrARetryError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &failingAPI{status: http.StatusTooManyRequests}
		resp, err := New(api).RoundTrip(mustRequest(t))
		if err != nil || resp.StatusCode != http.StatusTooManyRequests || api.calls != 3 {
			t.Fatalf("got %v, %v after %d attempts; want the third 429 and no error", resp, err, api.calls)
		}
		resp.Body.Close()

		failing := &failingAPI{err: errors.New("connection reset by peer")}
		_, err = New(failing).RoundTrip(mustRequest(t))
		var re *retry.Error
		if !errors.As(err, &re) || re.Attempts != 3 || re.LastStatus != 0 {
			t.Errorf("err = %v, want a retry.Error after 3 attempts", err)
		}

		// The second attempt cannot be admitted before the deadline.
		api = &failingAPI{status: http.StatusServiceUnavailable}
		tr := New(api, WithLimit(Limit{Count: 1, Per: time.Minute, Burst: 1}))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = get(tr, ctx, "http://api.test/")
		if !errors.As(err, &re) || re.Attempts != 1 || re.LastStatus != http.StatusServiceUnavailable || !errors.Is(err, ErrThrottled) {
			t.Errorf("err = %v, want a retry.Error after 1 attempt, last status 503, matching ErrThrottled", err)
		}
	})
}

// quiet keeps what a Transport says once out of the test's output.
var quiet = WithLogger(slog.New(slog.DiscardHandler))

// retry.Policy.Retryable, used by retriers outside the Transport, knows
// pacer's own refusals without importing the root: a spent budget and a
// spent quota are final under the zero policy, for a GET too.
func TestRetryableKnowsPacersRefusals(t *testing.T) {
	req, _ := http.NewRequest(http.MethodGet, "http://api.test/", nil)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&BudgetError{Workload: DefaultWorkload}, "the error is not one a retry can mend"},
		{&QuotaError{Status: 429, Message: "insufficient_quota"}, "a spent quota does not come back on a retry"},
		{fmt.Errorf("wrapped: %w", &QuotaError{Status: 403}), "a spent quota does not come back on a retry"},
	} {
		if ok, why := (retry.Policy{}).Retryable(req, nil, tc.err, 1); ok || why != tc.want {
			t.Errorf("Retryable(%v) = %v, %q; want false, %q", tc.err, ok, why, tc.want)
		}
	}
	if ok, why := (retry.Policy{}).Retryable(req, nil, errors.New("connection reset"), 1); !ok {
		t.Errorf("a reset GET is not retryable: %s", why)
	}
}
