package pacer

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/internal/retryrule"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/ratelimitheader"
	"github.com/pacer-go/pacer/retry"
)

// retrier carries a Transport's retry policy, its defaults applied, and the
// rule that decides between attempts.
type retrier struct {
	retry.Policy
	rule      retryrule.Rule
	injectKey bool
}

func newRetrier(p retry.Policy, injectKey bool) *retrier {
	return &retrier{Policy: p, injectKey: injectKey, rule: retryrule.Rule{
		MaxAttempts: p.MaxAttempts, Statuses: p.Statuses, IdempotencyHeaders: p.IdempotencyHeaders,
		ShouldRetryHeaders: p.ShouldRetryHeaders, RetryableError: p.RetryableError}}
}

// A replay is how a call's request body is sent again, settled once before
// the first attempt: a way to make a fresh copy of the body, or why there is
// none. The only way to a next attempt is retrier.next, which consults it,
// so no attempt is ever made without a body to send.
type replay struct {
	body func() (io.ReadCloser, error) // a fresh copy of the body; nil when there is none
	why  string                        // why the body cannot be sent again, when body is nil
}

func replayWith(body func() (io.ReadCloser, error)) replay { return replay{body: body} }

func notReplayable(why string) replay { return replay{why: why} }

// noBody is the replay of a request without a body.
func noBody() (io.ReadCloser, error) { return http.NoBody, nil }

// A retryCall is one call on its way through the retrier: the request of its
// latest attempt, how to send its body again, and what that attempt brought.
type retryCall struct {
	t          *Transport
	send       *http.Request
	replay     replay
	attempts   int // attempts sent so far
	lastStatus int // the status of the latest attempt that got a response
	resp       *http.Response
	info       attemptInfo
	err        error
	bo         *backoff.ExponentialBackOff
}

// roundTrip sends req through t, once or more as the policy allows.
func (r *retrier) roundTrip(t *Transport, req *http.Request) (*http.Response, error) {
	send, rp, err := r.prepare(t, req)
	if err != nil {
		return nil, err
	}
	resp, info, err := t.attempt(send)
	if !info.sent {
		return resp, err // pacer's own refusal: throttled, over budget
	}
	info.scope.earnRetry(r.Budget)
	if err == nil && resp.StatusCode < 400 {
		return resp, nil // the common case, without the retry loop's frame
	}
	c := retryCall{t: t, send: send, replay: rp, attempts: 1, resp: resp, info: info, err: err}
	return r.retry(&c)
}

// answered is the status of an attempt's answer: its response's, or the
// one pacer replaced by an error (a spent quota's *QuotaError), which got
// an answer all the same; 0 when it got none.
func answered(resp *http.Response, err error) int {
	if resp != nil {
		return resp.StatusCode
	}
	if q, ok := err.(*QuotaError); ok {
		return q.Status
	}
	return 0
}

// retry goes on from a first attempt that failed: it decides whether to
// make another, waits, and makes it, until an attempt is final.
//
// What the caller gets follows net/http: when the last attempt got a
// response, that response with a nil error, whatever its status; when it
// got none, or pacer did not send a further attempt it had decided to make
// (its budget, its limits, the deadline), a *retry.Error that says how many
// attempts were sent and the last status.
func (r *retrier) retry(c *retryCall) (*http.Response, error) {
	t, ctx := c.t, c.send.Context()
	for {
		if status := answered(c.resp, c.err); status != 0 {
			c.lastStatus = status
		}
		body, why := r.next(c)
		if why != "" {
			return c.resp, c.final(why)
		}
		wait := r.backoff(c)
		if deadline, ok := ctx.Deadline(); ok && t.clock.Now().Add(wait).After(deadline) {
			// Return now, not at the deadline: the caller learns at once
			// that the next attempt could not be made in time.
			if c.resp != nil {
				return c.resp, nil
			}
			throttled := &ThrottledError{Scope: c.info.scope.Name, Reason: observe.ReasonRetry, RetryAfter: wait, Err: errors.Join(context.DeadlineExceeded, c.err)}
			t.workloads[workloadName(t, ctx)].throttled(t.clock.Now(), throttled)
			t.emit(observe.Event{Kind: observe.EventThrottled, Scope: c.info.scope.Name, Workload: workloadName(t, ctx), Wait: wait, Err: throttled})
			return nil, c.stopped(fmt.Sprintf("the next attempt, in %v, would be past the deadline", wait), throttled)
		}
		drop(c.resp, c.info.stalled)
		if err := sleep(ctx, t.clock, wait); err != nil {
			return nil, c.stopped("the context ended while waiting to retry", err)
		}
		t.emit(observe.Event{Kind: observe.EventRetried, Scope: c.info.scope.Name, Workload: workloadName(t, ctx), Attempt: c.attempts + 1})
		next, err := again(c.send, body)
		if err != nil {
			return nil, c.stopped("the request body could not be replayed", err)
		}
		resp, info, err := t.attempt(next)
		if !info.sent {
			// Pacer's own refusal: the budget, the limits, the deadline.
			return nil, c.stopped("pacer did not send the next attempt", err)
		}
		c.send, c.attempts, c.resp, c.info, c.err = next, c.attempts+1, resp, info, err
	}
}

// next decides whether c makes another attempt. It returns the way to make
// that attempt's body, never nil, or why there is no further attempt.
func (r *retrier) next(c *retryCall) (func() (io.ReadCloser, error), string) {
	if why := r.rule.WhyNot(c.send, c.resp, c.err, c.attempts, c.info.verdict.BackPressure, c.info.verdict.NeverProcessed); why != "" {
		return nil, why
	}
	if c.replay.body == nil {
		if c.replay.why == "" {
			return nil, "the request body cannot be sent again"
		}
		return nil, c.replay.why
	}
	if !c.info.scope.spendRetry() {
		return nil, "the scope's retry budget is spent (too many retries of late)"
	}
	return c.replay.body, ""
}

// backoff returns how long c waits before its next attempt: what the server
// said, capped by the Transport's maximum wait, or else the policy's backoff.
func (r *retrier) backoff(c *retryCall) time.Duration {
	if c.resp != nil {
		wait, fromServer := ratelimitheader.RetryAfter(c.resp.Header, c.t.clock.Now())
		if !fromServer && c.info.verdict.Wait > 0 {
			wait, fromServer = c.info.verdict.Wait, true
		}
		if fromServer {
			return min(wait, c.t.maxWait)
		}
	}
	if c.bo == nil {
		c.bo = backoff.NewExponentialBackOff(backoff.WithInitialInterval(r.InitialBackoff),
			backoff.WithMaxInterval(r.MaxBackoff), backoff.WithMaxElapsedTime(0))
	}
	return c.bo.NextBackOff()
}

// final is what the caller gets when no further attempt is made: nil when
// there is a response to hand back, else the error, with what happened.
func (c *retryCall) final(why string) error {
	if c.err == nil {
		return nil
	}
	return &retry.Error{Attempts: c.attempts, LastStatus: c.lastStatus, Why: why, Err: c.err}
}

// stopped is the error of a call that did not make an attempt it had
// decided to make.
func (c *retryCall) stopped(why string, err error) error {
	return &retry.Error{Attempts: c.attempts, LastStatus: c.lastStatus, Why: why, Err: err}
}

// prepare returns the request to send first and how its body can be sent
// again. It never modifies req: a request that needs a key or a buffered
// body is cloned.
//
// A body without GetBody is read ahead, up to MaxBufferedBody, whatever the
// method: a POST without a key may be sent again when the failure proves it
// never left (a refused connection, a classifier's NeverProcessed), and only
// a buffered copy can be, since the base RoundTripper closes the body it was
// given on every path, errors included. A larger body is sent once.
func (r *retrier) prepare(t *Transport, req *http.Request) (*http.Request, replay, error) {
	send := req
	if r.injectKey && (req.Method == http.MethodPost || req.Method == http.MethodPatch) && !r.rule.HasIdempotencyKey(req) {
		send = req.Clone(req.Context())
		send.Header.Set("Idempotency-Key", newIdempotencyKey())
	}
	switch {
	case send.Body == nil || send.Body == http.NoBody:
		return send, replayWith(noBody), nil
	case send.GetBody != nil:
		return send, replayWith(send.GetBody), nil
	case r.MaxAttempts <= 1:
		return send, notReplayable("retries are off"), nil
	}
	// Read at most one byte past the limit: enough to tell a body that fits.
	buf, err := readBody(send.Context(), send.Body, r.MaxBufferedBody+1)
	if err != nil {
		send.Body.Close()
		return nil, replay{}, fmt.Errorf("pacer: reading the request body to be able to send it again: %w", err)
	}
	original := send.Body
	if send == req {
		send = req.Clone(req.Context())
	}
	if int64(len(buf)) > r.MaxBufferedBody {
		send.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(buf), original), original}
		t.bodyNotReplayable(send.Context(), r.MaxBufferedBody)
		return send, notReplayable(fmt.Sprintf("the body has no GetBody and is larger than the %d-byte replay buffer (retry.Policy.MaxBufferedBody), so it was sent once", r.MaxBufferedBody)), nil
	}
	original.Close()
	body := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf)), nil }
	send.Body, _ = body()
	send.GetBody = body
	return send, replayWith(body), nil
}

// bodyNotReplayable says that a call's body is too large to buffer, so it
// is sent once: an event each time, and a line in the log the first time,
// since a retry policy that cannot apply is a setting to change.
func (t *Transport) bodyNotReplayable(ctx context.Context, limit int64) {
	t.emit(observe.Event{Kind: observe.EventBodyNotReplayable, Workload: workloadName(t, ctx)})
	if t.bodyTooLargeSaid.CompareAndSwap(false, true) {
		t.log.Warn(fmt.Sprintf("pacer: a request body without GetBody was larger than the %d-byte replay buffer, so it was sent once and cannot be retried; "+
			"raise retry.Policy.MaxBufferedBody, or give such requests a GetBody (said once)", limit))
	}
}

// readBody reads up to n bytes of body, or returns the context's error when
// ctx ends first, as a plain transport sending the body would. A Reader
// cannot be interrupted, so the read runs on a goroutine of its own — only
// for a body without GetBody, off the hot path — and when ctx ends first,
// the caller closes the body, which ends the read of a pipe, a file or a
// connection, as net/http does with a body it was sending when the request
// is cancelled.
func readBody(ctx context.Context, body io.Reader, n int64) ([]byte, error) {
	if ctx.Done() == nil {
		return io.ReadAll(io.LimitReader(body, n)) // nothing can cancel it
	}
	type read struct {
		buf []byte
		err error
	}
	done := make(chan read, 1)
	go func() {
		buf, err := io.ReadAll(io.LimitReader(body, n))
		done <- read{buf, err}
	}()
	select {
	case r := <-done:
		return r.buf, r.err
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// again returns a copy of req for the next attempt, with a fresh body.
func again(req *http.Request, body func() (io.ReadCloser, error)) (*http.Request, error) {
	b, err := body()
	if err != nil {
		return nil, err
	}
	next := req.Clone(req.Context())
	next.Body, next.GetBody = b, body
	return next, nil
}

// discard drains a response that will not be handed back, up to a bound, so
// that its connection can be reused, and closes it.
func discard(resp *http.Response) {
	if resp == nil || resp.Body == nil {
		return
	}
	io.CopyN(io.Discard, resp.Body, 64<<10)
	resp.Body.Close()
}

// drop lets go of a response that will not be handed back: drained and
// closed, or only closed when its body stalled, since draining would wait
// out the stall.
func drop(resp *http.Response, stalled bool) {
	if stalled && resp != nil && resp.Body != nil {
		resp.Body.Close()
		return
	}
	discard(resp)
}

// sleep waits for d on clock, or until ctx ends.
func sleep(ctx context.Context, clock clock.Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := clock.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C():
		return nil
	}
}

// newIdempotencyKey returns a random version 4 UUID.
func newIdempotencyKey() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// workloadName returns the name of the workload ctx belongs to.
func workloadName(t *Transport, ctx context.Context) string {
	name := workloadFromContext(ctx)
	if w := t.workloads[name]; w != nil {
		return w.name
	}
	if name != "" && t.undeclared != nil {
		return t.undeclared.name
	}
	return DefaultWorkload
}
