package pacer

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/ratelimitheader"
)

// A RetryPolicy says which failed calls pacer sends again, and how long it
// waits first. Every field left zero takes its default, so
// WithRetry(RetryPolicy{MaxAttempts: 5}) changes only the attempts.
//
// A call is retried only when it is safe to send twice: its method is
// idempotent (GET, HEAD, OPTIONS, TRACE, PUT, DELETE), or it carries an
// idempotency key, or the failure proves the request never reached the
// server (the dial failed, the connection was refused, or the provider
// documents the status as never processed). Each retry goes back through
// admission, so retries are paced like first attempts, and spends the
// workload's budget like one.
//
// It is retried only when its body can be sent again, too: a request
// without a body, one with GetBody (http.NewRequest gives one to bytes and
// strings readers), or one whose body pacer buffered before the first
// attempt — a body without GetBody of at most MaxBufferedBody bytes, read
// while the request's context allows. A larger one is streamed once and
// never retried, even when the failure proves it never left: the base
// RoundTripper closes the body it was given on every path, so nothing is
// left to send.
//
// When the last attempt gets a response, the call returns it with a nil
// error, whatever its status, as net/http does: a 429 after the last retry
// is a response to read, not an error. A *RetryError is returned only when
// there is no response to hand back.
type RetryPolicy struct {
	// MaxAttempts is the number of attempts in all, the first included.
	// Default 3, as the providers' official SDKs do.
	MaxAttempts int
	// InitialBackoff and MaxBackoff bound the exponential backoff, with
	// jitter, used when the server does not say how long to wait. Defaults
	// 500ms and 8s.
	InitialBackoff, MaxBackoff time.Duration
	// Statuses are the response statuses worth another attempt. Default 408,
	// 425, 429, 500, 502, 503 and 504. 501 Not Implemented never is.
	Statuses []int
	// IdempotencyHeaders name the headers whose presence makes a POST or a
	// PATCH safe to repeat. Default Idempotency-Key and X-Idempotency-Key.
	IdempotencyHeaders []string
	// ShouldRetryHeaders name provider headers that say, true or false,
	// whether to retry; they win over the status. Default X-Should-Retry
	// (OpenAI, Anthropic) and Stripe-Should-Retry.
	ShouldRetryHeaders []string
	// RetryableError reports whether a transport error is worth another
	// attempt. Default: any error but a cancelled or expired context and a
	// TLS certificate failure.
	RetryableError func(error) bool
	// MaxBufferedBody is the largest request body without GetBody that pacer
	// reads into memory to be able to send it again. A larger one is sent
	// once and not retried, with an observe.EventBodyNotReplayable each time and a
	// line in the log the first time. Default 1 MiB.
	MaxBufferedBody int64
	// Budget caps retries as a share of traffic per scope.
	Budget RetryBudget
	// AttemptTimeout, when positive, bounds each attempt on its own, from
	// when it is admitted and sent until its response's body is closed or
	// read to its end, as http.Client.Timeout bounds a whole call. An
	// attempt past it fails with an error matching ErrAttemptTimeout, which
	// is retried like any transport error (a POST only with an idempotency
	// key), while the call's context, whose deadline bounds every attempt
	// and every wait between them, is still alive. Zero means no bound but
	// the context's. A bound shorter than a streamed response takes cuts it
	// off: leave it zero for streams.
	AttemptTimeout time.Duration
}

// ErrAttemptTimeout is matched by the error of an attempt that took longer
// than RetryPolicy.AttemptTimeout.
var ErrAttemptTimeout = errors.New("pacer: the attempt took longer than RetryPolicy.AttemptTimeout")

// A RetryBudget caps retries as a share of traffic, per scope, so that a dead
// dependency cannot turn every call into MaxAttempts calls: each first
// attempt earns Ratio of a retry, each retry spends one, and at most Min are
// saved up. A new scope starts with Min, so a fresh client can always make
// the retries of its first few calls.
type RetryBudget struct {
	Ratio float64 // default 0.1: retries are at most about 10% of calls
	Min   int     // default 10
}

// The defaults of RetryPolicy.
var (
	defaultRetryStatuses      = []int{408, 425, 429, 500, 502, 503, 504}
	defaultIdempotencyHeaders = []string{"Idempotency-Key", "X-Idempotency-Key"}
	defaultShouldRetryHeaders = []string{"X-Should-Retry", "Stripe-Should-Retry"}
)

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = 3
	}
	if p.InitialBackoff == 0 {
		p.InitialBackoff = 500 * time.Millisecond
	}
	if p.MaxBackoff == 0 {
		p.MaxBackoff = 8 * time.Second
	}
	if p.Statuses == nil {
		p.Statuses = defaultRetryStatuses
	}
	if p.IdempotencyHeaders == nil {
		p.IdempotencyHeaders = defaultIdempotencyHeaders
	}
	if p.ShouldRetryHeaders == nil {
		p.ShouldRetryHeaders = defaultShouldRetryHeaders
	}
	if p.RetryableError == nil {
		p.RetryableError = retryableError
	}
	if p.MaxBufferedBody == 0 {
		p.MaxBufferedBody = 1 << 20
	}
	if p.Budget.Ratio == 0 {
		p.Budget.Ratio = 0.1
	}
	if p.Budget.Min == 0 {
		p.Budget.Min = 10
	}
	return p
}

func (p RetryPolicy) validate() error {
	switch {
	case p.MaxAttempts < 1:
		return fmt.Errorf("WithRetry: MaxAttempts %d must be at least 1", p.MaxAttempts)
	case p.InitialBackoff < 0 || p.MaxBackoff < p.InitialBackoff:
		return fmt.Errorf("WithRetry: the backoff must grow from InitialBackoff %v to MaxBackoff %v", p.InitialBackoff, p.MaxBackoff)
	case p.AttemptTimeout < 0:
		return fmt.Errorf("WithRetry: AttemptTimeout %v must not be negative (0 means no bound)", p.AttemptTimeout)
	case p.MaxBufferedBody < 0:
		return fmt.Errorf("WithRetry: MaxBufferedBody %d must not be negative", p.MaxBufferedBody)
	case !(p.Budget.Ratio >= 0 && p.Budget.Ratio <= math.MaxFloat64): // NaN and ±Inf too
		return fmt.Errorf("WithRetry: the budget's Ratio %v must be a finite number, 0 or more (0 means the default, 0.1)", p.Budget.Ratio)
	case p.Budget.Min < 0:
		return fmt.Errorf("WithRetry: the budget's Min %d must not be negative (0 means the default, 10)", p.Budget.Min)
	case slices.Contains(p.Statuses, http.StatusNotImplemented):
		return fmt.Errorf("WithRetry: 501 Not Implemented will not change on a retry; leave it out of Statuses")
	}
	return nil
}

// WithRetry sets the retry policy. Retries are on by default, with the
// zero RetryPolicy's defaults.
func WithRetry(p RetryPolicy) Option {
	return func(c *config) { c.retry, c.retries = p, true }
}

// WithoutRetry turns retries off: every call is sent once.
func WithoutRetry() Option {
	return func(c *config) { c.retries = false }
}

// WithIdempotencyKey makes pacer add an Idempotency-Key to every POST and
// PATCH that carries none, for APIs that honour it (Stripe does, and many
// follow). The key is made once per call and stays the same on every
// attempt, so such calls can be retried safely.
func WithIdempotencyKey() Option {
	return func(c *config) { c.idempotencyKey = true }
}

// A RetryError says how a call that pacer may have retried ended without a
// response to hand back: the attempts sent, the last status seen (0 if no
// attempt got a response; a spent quota's status counts, though pacer
// returns a *QuotaError in place of its response), and why no further
// attempt was made. It wraps the
// last attempt's error or, when pacer did not send an attempt it had decided
// to make, the reason: a *BudgetError, a *ThrottledError, the context's
// error. A call that ends on a response returns that response and a nil
// error instead, whatever its status.
type RetryError struct {
	Attempts   int
	LastStatus int
	Why        string // why no further attempt was made
	Err        error
}

// Error says what happened first — the cause, in its own words — then how
// many attempts were sent and why no other was: one sentence, not a chain
// of prefixes.
func (e *RetryError) Error() string {
	var b strings.Builder
	b.WriteString("pacer: ")
	if e.Err != nil {
		b.WriteString(strings.TrimSuffix(strings.TrimPrefix(e.Err.Error(), "pacer: "), "."))
		b.WriteString("; ")
	}
	if e.Attempts == 1 {
		b.WriteString("1 attempt sent")
	} else {
		fmt.Fprintf(&b, "%d attempts sent", e.Attempts)
	}
	var quota *QuotaError
	if e.LastStatus != 0 && !errors.As(e.Err, &quota) { // a QuotaError says its status
		if e.Attempts == 1 {
			fmt.Fprintf(&b, ", answered %d", e.LastStatus)
		} else {
			fmt.Fprintf(&b, ", the last answered %d", e.LastStatus)
		}
	}
	if e.Why != "" {
		b.WriteString(", no other: ")
		b.WriteString(e.Why)
	}
	return b.String()
}

func (e *RetryError) Unwrap() error { return e.Err }

// retrier carries a Transport's retry policy.
type retrier struct {
	RetryPolicy
	injectKey bool
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
// (its budget, its limits, the deadline), a *RetryError that says how many
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
			throttled := &ThrottledError{Scope: c.info.scope.Name, Reason: ReasonRetry, RetryAfter: wait, Err: errors.Join(context.DeadlineExceeded, c.err)}
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
	if why := r.whyNotRetry(c.send, c.resp, c.err, c.attempts, c.info.verdict); why != "" {
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
	return &RetryError{Attempts: c.attempts, LastStatus: c.lastStatus, Why: why, Err: c.err}
}

// stopped is the error of a call that did not make an attempt it had
// decided to make.
func (c *retryCall) stopped(why string, err error) error {
	return &RetryError{Attempts: c.attempts, LastStatus: c.lastStatus, Why: why, Err: err}
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
	if r.injectKey && (req.Method == http.MethodPost || req.Method == http.MethodPatch) && !r.hasIdempotencyKey(req) {
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
		return send, notReplayable(fmt.Sprintf("the body has no GetBody and is larger than the %d-byte replay buffer (RetryPolicy.MaxBufferedBody), so it was sent once", r.MaxBufferedBody)), nil
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
			"raise RetryPolicy.MaxBufferedBody, or give such requests a GetBody (said once)", limit))
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

// Retryable reports whether one attempt's outcome — a response or an error —
// is worth another attempt of req under p, and when it is not, why. attempt
// counts from 1. Fields of p left zero take their defaults. It does not
// consult the retry budget, which belongs to a Transport's scopes.
//
// It is the rule a Transport applies between attempts, exported for other
// retriers (see the retryableinterop package).
func (p RetryPolicy) Retryable(req *http.Request, resp *http.Response, err error, attempt int) (bool, string) {
	why := p.withDefaults().whyNotRetry(req, resp, err, attempt, Verdict{})
	return why == "", why
}

// whyNotRetry returns why the attempt's outcome is final, or "" if it is
// worth another attempt.
func (p RetryPolicy) whyNotRetry(req *http.Request, resp *http.Response, err error, attempts int, verdict Verdict) string {
	if err != nil {
		var quota *QuotaError
		switch {
		case !p.RetryableError(err) && errors.As(err, &quota):
			return "a spent quota does not come back on a retry"
		case !p.RetryableError(err):
			return "the error is not one a retry can mend"
		case attempts >= p.MaxAttempts:
			return "gave up after the policy's MaxAttempts"
		case p.mayRetry(req) || neverLeft(err):
			return ""
		}
		return fmt.Sprintf("a %s without an idempotency key may have reached the server, so it is not sent twice", req.Method)
	}
	if resp.StatusCode < 400 {
		return "the call succeeded" // the common case, without reading headers
	}
	retryable := slices.Contains(p.Statuses, resp.StatusCode) || verdict.BackPressure
	for _, name := range p.ShouldRetryHeaders {
		switch strings.ToLower(resp.Header.Get(name)) {
		case "true":
			retryable = true
		case "false":
			return "the provider said not to retry (" + name + ": false)"
		}
	}
	switch {
	case !retryable || resp.StatusCode == http.StatusNotImplemented:
		return "the status is final"
	case attempts >= p.MaxAttempts:
		return "gave up after the policy's MaxAttempts"
	case p.mayRetry(req) || verdict.NeverProcessed:
		return ""
	}
	return fmt.Sprintf("a %s without an idempotency key may have been processed, so it is not sent twice", req.Method)
}

// mayRetry reports whether sending req twice is safe whatever happened.
func (p RetryPolicy) mayRetry(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return p.hasIdempotencyKey(req)
}

func (p RetryPolicy) hasIdempotencyKey(req *http.Request) bool {
	for _, name := range p.IdempotencyHeaders {
		if req.Header.Get(name) != "" {
			return true
		}
	}
	return false
}

// neverLeft reports whether err proves the request never reached the
// server: no connection was made.
func neverLeft(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return (errors.As(err, &op) && op.Op == "dial") || errors.As(err, &dns) || errors.Is(err, syscall.ECONNREFUSED)
}

// retryableError is the default RetryPolicy.RetryableError.
func retryableError(err error) bool {
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verification *tls.CertificateVerificationError
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, ErrBudgetExhausted),
		errors.As(err, &unknownAuthority), errors.As(err, &hostname), errors.As(err, &invalid), errors.As(err, &verification):
		return false
	}
	return true
}

// earnRetry credits the scope with a first attempt's share of a retry.
func (c *configuredScope) earnRetry(b RetryBudget) {
	for {
		credit := c.retryCredit.Load()
		next := min(credit+int64(b.Ratio*retryUnit), int64(b.Min)*retryUnit)
		if next <= credit || c.retryCredit.CompareAndSwap(credit, next) {
			return
		}
	}
}

// spendRetry takes one retry from the scope's budget, if it has one.
func (c *configuredScope) spendRetry() bool {
	for {
		credit := c.retryCredit.Load()
		if credit < retryUnit {
			return false
		}
		if c.retryCredit.CompareAndSwap(credit, credit-retryUnit) {
			return true
		}
	}
}

// retryUnit is one retry in the fixed-point credit, fine enough for any Ratio.
const retryUnit = 1_000_000

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
