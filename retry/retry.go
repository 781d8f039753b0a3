// Package retry is the vocabulary of pacer's retries: the Policy that says
// which failed calls a Transport sends again and how long it waits first,
// the Budget that caps retries as a share of traffic, the Error a call
// returns when it ends without a response, and ErrAttemptTimeout. A
// Transport takes a policy with pacer.WithRetry(p) and none with
// pacer.WithoutRetry(); retries are on by default, with the zero Policy.
//
//	tr := pacer.New(nil, pacer.WithRetry(retry.Policy{MaxAttempts: 5}))
//
// Policy.Retryable exposes the rule a Transport applies between attempts
// to other retriers (see the retryableinterop module).
//
// The package depends on nothing of pacer's root package.
package retry

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/pacer-go/pacer/internal/retryrule"
)

// A Policy says which failed calls pacer sends again, and how long it
// waits first. Every field left zero takes its default, so
// pacer.WithRetry(retry.Policy{MaxAttempts: 5}) changes only the attempts.
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
// is a response to read, not an error. An *Error is returned only when
// there is no response to hand back.
//
// A Policy is a value: a Transport copies it, and it is safe to share.
type Policy struct {
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
	// attempt. Default: any error but a cancelled or expired context, a
	// spent budget or quota, and a TLS certificate failure.
	RetryableError func(error) bool
	// MaxBufferedBody is the largest request body without GetBody that pacer
	// reads into memory to be able to send it again. A larger one is sent
	// once and not retried, with an observe.EventBodyNotReplayable each time
	// and a line in the log the first time. Default 1 MiB.
	MaxBufferedBody int64
	// Budget caps retries as a share of traffic per scope.
	Budget Budget
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
// than Policy.AttemptTimeout.
var ErrAttemptTimeout = errors.New("pacer: the attempt took longer than retry.Policy.AttemptTimeout")

// A Budget caps retries as a share of traffic, per scope, so that a dead
// dependency cannot turn every call into MaxAttempts calls: each first
// attempt earns Ratio of a retry, each retry spends one, and at most Min are
// saved up. A new scope starts with Min, so a fresh client can always make
// the retries of its first few calls. The zero Budget takes the defaults.
type Budget struct {
	Ratio float64 // default 0.1: retries are at most about 10% of calls
	Min   int     // default 10
}

// The defaults of Policy.
var (
	defaultStatuses           = []int{408, 425, 429, 500, 502, 503, 504}
	defaultIdempotencyHeaders = []string{"Idempotency-Key", "X-Idempotency-Key"}
	defaultShouldRetryHeaders = []string{"X-Should-Retry", "Stripe-Should-Retry"}
)

// WithDefaults returns p with every field left zero set to its default:
// the policy a Transport applies.
func (p Policy) WithDefaults() Policy {
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
		p.Statuses = defaultStatuses
	}
	if p.IdempotencyHeaders == nil {
		p.IdempotencyHeaders = defaultIdempotencyHeaders
	}
	if p.ShouldRetryHeaders == nil {
		p.ShouldRetryHeaders = defaultShouldRetryHeaders
	}
	if p.RetryableError == nil {
		p.RetryableError = retryrule.RetryableError
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

// Validate reports what is wrong with p, with its defaults applied, or nil:
// an attempt count below 1, a backoff that shrinks, a negative bound or
// budget, a Ratio that is not a finite number, 501 among the Statuses.
// pacer.New reports the same error, prefixed with WithRetry.
func (p Policy) Validate() error {
	p = p.WithDefaults()
	switch {
	case p.MaxAttempts < 1:
		return fmt.Errorf("MaxAttempts %d must be at least 1", p.MaxAttempts)
	case p.InitialBackoff < 0 || p.MaxBackoff < p.InitialBackoff:
		return fmt.Errorf("the backoff must grow from InitialBackoff %v to MaxBackoff %v", p.InitialBackoff, p.MaxBackoff)
	case p.AttemptTimeout < 0:
		return fmt.Errorf("AttemptTimeout %v must not be negative (0 means no bound)", p.AttemptTimeout)
	case p.MaxBufferedBody < 0:
		return fmt.Errorf("MaxBufferedBody %d must not be negative", p.MaxBufferedBody)
	case !(p.Budget.Ratio >= 0 && p.Budget.Ratio <= math.MaxFloat64): // NaN and ±Inf too
		return fmt.Errorf("the budget's Ratio %v must be a finite number, 0 or more (0 means the default, 0.1)", p.Budget.Ratio)
	case p.Budget.Min < 0:
		return fmt.Errorf("the budget's Min %d must not be negative (0 means the default, 10)", p.Budget.Min)
	case slices.Contains(p.Statuses, http.StatusNotImplemented):
		return fmt.Errorf("501 Not Implemented will not change on a retry; leave it out of Statuses")
	}
	return nil
}

// Retryable reports whether one attempt's outcome — a response or an error —
// is worth another attempt of req under p, and when it is not, why. attempt
// counts from 1. Fields of p left zero take their defaults. It does not
// consult the retry budget, which belongs to a Transport's scopes, nor the
// provider's classifiers.
//
// It is the rule a Transport applies between attempts, exported for other
// retriers (see the retryableinterop module).
func (p Policy) Retryable(req *http.Request, resp *http.Response, err error, attempt int) (bool, string) {
	p = p.WithDefaults()
	rule := retryrule.Rule{MaxAttempts: p.MaxAttempts, Statuses: p.Statuses, IdempotencyHeaders: p.IdempotencyHeaders,
		ShouldRetryHeaders: p.ShouldRetryHeaders, RetryableError: p.RetryableError}
	why := rule.WhyNot(req, resp, err, attempt, false, false)
	return why == "", why
}

// An Error says how a call that pacer may have retried ended without a
// response to hand back: the attempts sent, the last status seen (0 if no
// attempt got a response; a spent quota's status counts, though pacer
// returns a *pacer.QuotaError in place of its response), and why no
// further attempt was made. It wraps the last attempt's error or, when
// pacer did not send an attempt it had decided to make, the reason: a
// *pacer.BudgetError, a *pacer.ThrottledError, the context's error. A call
// that ends on a response returns that response and a nil error instead,
// whatever its status.
type Error struct {
	Attempts   int
	LastStatus int
	Why        string // why no further attempt was made
	Err        error
}

// Error says what happened first — the cause, in its own words — then how
// many attempts were sent and why no other was: one sentence, not a chain
// of prefixes.
func (e *Error) Error() string {
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
	if e.LastStatus != 0 && !errors.Is(e.Err, retryrule.ErrSpentQuota) { // a QuotaError says its status
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

// Unwrap returns the error the call ended on.
func (e *Error) Unwrap() error { return e.Err }
