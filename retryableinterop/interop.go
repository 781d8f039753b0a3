// Package retryableinterop lets users of github.com/hashicorp/go-retryablehttp
// keep their client and gain pacer's rules.
//
// Two ways, from least to most change:
//
//   - CheckRetry and Backoff replace retryablehttp's own: POST and PATCH are
//     no longer retried unless they carry an idempotency key or never left,
//     Retry-After is read in all its forms (and retry-after-ms, and a quota's
//     reset) and capped, and provider "should retry" headers win.
//   - Stack puts a pacer Transport under the client as well, so that every
//     attempt retryablehttp makes is paced, capped in flight and charged to
//     its workload. Pacer's own retries are turned off there, so attempts are
//     not multiplied: retryablehttp decides how often, pacer decides when.
package retryableinterop

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/ratelimitheader"
	"github.com/pacer-go/pacer/retry"
)

// CheckRetry returns a retryablehttp.CheckRetry that applies p's rules (the
// zero retry.Policy gives pacer's defaults). Attempts are counted by
// retryablehttp (RetryMax), so p.MaxAttempts is not consulted.
//
// retryablehttp does not hand CheckRetry the request when an attempt failed
// without a response. The method is then read from the *url.Error, and the
// request's headers are unknown, so a POST or PATCH is retried after such a
// failure only when the error proves the request never left (a refused
// connection, a failed dial) — never on the strength of an idempotency key it
// cannot see. With a response, the full rule applies.
func CheckRetry(p retry.Policy) retryablehttp.CheckRetry {
	p.MaxAttempts = 1 << 30
	return func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return false, ctxErr
		}
		req := requestOf(resp, err)
		ok, _ := p.Retryable(req, resp, err, 1)
		return ok, nil
	}
}

// requestOf returns the request an attempt was for: the response's, or a
// stand-in with the method the error names and no headers.
func requestOf(resp *http.Response, err error) *http.Request {
	if resp != nil && resp.Request != nil {
		return resp.Request
	}
	method := http.MethodPost // unknown: assume the least safe
	var ue *url.Error
	if errors.As(err, &ue) && ue.Op != "" {
		method = strings.ToUpper(ue.Op)
	}
	return &http.Request{Method: method, Header: http.Header{}}
}

// defaultMaxWait is Backoff's cap when given none: pacer.WithMaxWait's
// default.
const defaultMaxWait = 10 * time.Minute

// Backoff returns a retryablehttp.Backoff that waits what the server asked
// for when it said — Retry-After in every form RFC 9110 allows, measured
// against the response's Date, retry-after-ms, or the reset of a quota with
// nothing left — capped at maxWait (ten minutes if zero, as pacer.WithMaxWait's default); and
// otherwise backs off exponentially from min to max with jitter, so that many
// clients failing at once do not come back at once.
func Backoff(maxWait time.Duration) retryablehttp.Backoff {
	if maxWait <= 0 {
		maxWait = defaultMaxWait
	}
	return func(lo, hi time.Duration, attempt int, resp *http.Response) time.Duration {
		if wait, ok := serverWait(resp); ok {
			return min(wait, maxWait)
		}
		return jittered(lo, hi, attempt)
	}
}

func serverWait(resp *http.Response) (time.Duration, bool) {
	if resp == nil {
		return 0, false
	}
	now := time.Now()
	if wait, ok := ratelimitheader.RetryAfter(resp.Header, now); ok {
		return wait, true
	}
	var wait time.Duration
	found := false
	for _, q := range ratelimitheader.ParseQuotas(resp.Header, now) {
		if q.Remaining == 0 && q.Reset > 0 {
			wait, found = max(wait, q.Reset), true
		}
	}
	return wait, found
}

// jittered is lo·2^attempt capped at hi, then drawn uniformly from its
// upper half ("equal jitter"), so it never falls below half the curve.
func jittered(lo, hi time.Duration, attempt int) time.Duration {
	if lo <= 0 || hi < lo {
		return max(lo, 0)
	}
	d := hi
	if attempt < 62 && lo<<attempt > 0 && lo<<attempt < hi {
		d = lo << attempt
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// Stack sends every attempt of c through a pacer Transport built from opts
// on top of c's current transport, and gives c pacer's CheckRetry and
// Backoff. Pacer's own retries are off in that Transport: c keeps deciding
// how many attempts to make (RetryMax), and every one of them is paced.
//
// It returns the Transport, for its Stats and Err. A configuration error is
// also returned by every request.
func Stack(c *retryablehttp.Client, p retry.Policy, opts ...pacer.Option) *pacer.Transport {
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	base := c.HTTPClient.Transport
	t := pacer.New(base, append(opts, pacer.WithoutRetry())...)
	c.HTTPClient.Transport = t
	c.CheckRetry = CheckRetry(p)
	c.Backoff = Backoff(0)
	return t
}
