// Package retryrule is the rule that decides whether one attempt's outcome
// is worth another attempt: shared by the retry package, whose
// Policy.Retryable exposes it to other retriers, and by the Transport's retry
// loop, which adds what the provider's classifiers said. It does no I/O,
// keeps no state and is safe for concurrent use.
//
// It imports nothing of pacer's, so that both the root and the retry
// package can import it; the root's errors name themselves to it through
// the sentinels below.
package retryrule

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"syscall"
)

// ErrBudgetExhausted is the value of pacer.ErrBudgetExhausted, declared
// here so that the default RetryableError can match it without importing
// the root.
var ErrBudgetExhausted = errors.New("pacer: spend budget exhausted")

// ErrSpentQuota is matched by pacer's *QuotaError: a provider's spent quota,
// which a retry does not bring back.
var ErrSpentQuota = errors.New("pacer: the provider's quota is spent")

// A Rule is what the decision reads of a retry policy, its defaults applied.
type Rule struct {
	MaxAttempts        int
	Statuses           []int
	IdempotencyHeaders []string
	ShouldRetryHeaders []string
	RetryableError     func(error) bool
}

// WhyNot returns why the attempt's outcome is final, or "" if it is worth
// another attempt. attempts counts the attempts sent so far. backPressure
// and neverProcessed are what the provider's classifiers said of the
// response: it asks for fewer calls (retried like a 429), and it was never
// processed (even a POST without an idempotency key may be sent again).
func (r Rule) WhyNot(req *http.Request, resp *http.Response, err error, attempts int, backPressure, neverProcessed bool) string {
	if err != nil {
		switch {
		case !r.RetryableError(err) && errors.Is(err, ErrSpentQuota):
			return "a spent quota does not come back on a retry"
		case !r.RetryableError(err):
			return "the error is not one a retry can mend"
		case attempts >= r.MaxAttempts:
			return "gave up after the policy's MaxAttempts"
		case r.MayRetry(req) || NeverLeft(err):
			return ""
		}
		return fmt.Sprintf("a %s without an idempotency key may have reached the server, so it is not sent twice", req.Method)
	}
	if resp.StatusCode < 400 {
		return "the call succeeded" // the common case, without reading headers
	}
	retryable := slices.Contains(r.Statuses, resp.StatusCode) || backPressure
	for _, name := range r.ShouldRetryHeaders {
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
	case attempts >= r.MaxAttempts:
		return "gave up after the policy's MaxAttempts"
	case r.MayRetry(req) || neverProcessed:
		return ""
	}
	return fmt.Sprintf("a %s without an idempotency key may have been processed, so it is not sent twice", req.Method)
}

// MayRetry reports whether sending req twice is safe whatever happened.
func (r Rule) MayRetry(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return r.HasIdempotencyKey(req)
}

// HasIdempotencyKey reports whether req carries one of the rule's
// idempotency headers.
func (r Rule) HasIdempotencyKey(req *http.Request) bool {
	for _, name := range r.IdempotencyHeaders {
		if req.Header.Get(name) != "" {
			return true
		}
	}
	return false
}

// NeverLeft reports whether err proves the request never reached the
// server: no connection was made.
func NeverLeft(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return (errors.As(err, &op) && op.Op == "dial") || errors.As(err, &dns) || errors.Is(err, syscall.ECONNREFUSED)
}

// RetryableError is the default retry.Policy.RetryableError: any error but
// a cancelled or expired context, a spent budget or quota, and a TLS
// certificate failure.
func RetryableError(err error) bool {
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
