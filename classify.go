package pacer

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"
)

// A Verdict is what a provider's rules say about an error response beyond
// what its status tells.
type Verdict struct {
	// BackPressure says the provider is shedding load (Anthropic's 529
	// "overloaded", say): pacer slows the scopes down as for a 429, and
	// honours the response's Retry-After.
	BackPressure bool
	// Exhausted, when not empty, says the response is a spend cap or quota
	// that waiting will not restore ("insufficient_quota"). The call is not
	// retried, the scopes are not paused, and RoundTrip returns a
	// *QuotaError with this reason instead of the response.
	Exhausted string
	// NeverProcessed says the provider documents this failure as happening
	// before any processing (Twilio's 20429), so that even a POST without an
	// idempotency key may be sent again.
	NeverProcessed bool
	// Wait, when positive, is how long the provider's documented rules say
	// to wait when the response's headers name no time (GitHub: "wait for at
	// least one minute" after a secondary rate limit without Retry-After).
	// With BackPressure, it pauses the call's scopes as a Retry-After would,
	// and it delays a retry; a Retry-After header wins over it. The
	// Transport's maximum wait caps it.
	Wait time.Duration
	// Scopes, when not empty, names the scopes a rate-limit response
	// concerns, when the provider says which of its limits was hit
	// (WhatsApp's pair rate limit, say): only they are slowed and paused,
	// and the call's other scopes keep their pace. Empty means every scope
	// the call was charged to.
	Scopes []string
}

func (v Verdict) merge(o Verdict) Verdict {
	// A verdict that concerns every scope wins over one that names some.
	if v.concernsAll() || o.concernsAll() {
		v.Scopes = nil
	} else {
		v.Scopes = append(slices.Clip(v.Scopes), o.Scopes...)
	}
	v.BackPressure = v.BackPressure || o.BackPressure
	v.NeverProcessed = v.NeverProcessed || o.NeverProcessed
	v.Wait = max(v.Wait, o.Wait)
	if v.Exhausted == "" {
		v.Exhausted = o.Exhausted
	}
	return v
}

// concernsAll reports whether v slows every scope of the call: it asks to
// slow down or wait, and names no scopes.
func (v Verdict) concernsAll() bool {
	return (v.BackPressure || v.Wait > 0) && len(v.Scopes) == 0
}

// concerns reports whether a rate-limit response with this verdict slows
// the named scope.
func (v Verdict) concerns(scope string) bool {
	return len(v.Scopes) == 0 || slices.Contains(v.Scopes, scope)
}

// A Classifier reads an error response — its status, headers and the first
// bytes of its body (at most MaxClassifiedBody) — and says what it means. It
// must not read resp.Body; the body it is given is a copy, and the response
// keeps every byte for the caller.
type Classifier func(resp *http.Response, body []byte) Verdict

// MaxClassifiedBody is how much of an error response's body classifiers see.
const MaxClassifiedBody = 8 << 10

// WithClassifier adds a classifier for error responses (status 400 and
// above). Provider presets use it; verdicts of several classifiers combine.
func WithClassifier(c Classifier) Option {
	return func(cfg *config) {
		if c == nil {
			cfg.errs = append(cfg.errs, fmt.Errorf("WithClassifier: the classifier must not be nil"))
			return
		}
		cfg.classifiers = append(cfg.classifiers, c)
	}
}

// WithBackPressure names statuses, beyond 429, that mean the provider wants
// fewer calls: they cut the rate as a 429 does, their Retry-After pauses the
// scopes as a 503's does, and they are retried like 429.
func WithBackPressure(statuses ...int) Option {
	return WithClassifier(func(resp *http.Response, _ []byte) Verdict {
		for _, s := range statuses {
			if resp.StatusCode == s {
				return Verdict{BackPressure: true}
			}
		}
		return Verdict{}
	})
}

// classify runs the Transport's classifiers over an error response. The
// body's first bytes are read for them and put back in front of the rest.
func (t *Transport) classify(resp *http.Response) Verdict {
	if len(t.classifiers) == 0 || resp.StatusCode < 400 {
		return Verdict{}
	}
	var head []byte
	if resp.Body != nil && resp.Body != http.NoBody {
		head, _ = io.ReadAll(io.LimitReader(resp.Body, MaxClassifiedBody))
		resp.Body = peekedBody{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	}
	var v Verdict
	for _, c := range t.classifiers {
		v = v.merge(c(resp, bytes.Clone(head)))
	}
	return v
}

// peekedBody is a body whose first bytes were read ahead: it reads them
// again, then the rest, and closes the original.
type peekedBody struct {
	io.Reader
	io.Closer
}

// A QuotaError says the provider refused a call because a spend cap or
// quota is exhausted — a state waiting will not end. It matches
// ErrBudgetExhausted with errors.Is: to the caller, the provider's budget and
// pacer's are the same kind of stop.
type QuotaError struct {
	Status int    // the provider's status
	Reason string // what the provider's rules said
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("pacer: the provider refused the call with status %d: %s; waiting will not help", e.Status, e.Reason)
}

// Is reports whether target is ErrBudgetExhausted.
func (e *QuotaError) Is(target error) bool { return target == ErrBudgetExhausted }
