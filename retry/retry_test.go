package retry

import (
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	if err := (Policy{}).Validate(); err != nil {
		t.Errorf("the zero Policy: %v", err)
	}
	for _, tc := range []struct {
		p    Policy
		want string
	}{
		{Policy{MaxAttempts: -1}, "MaxAttempts -1 must be at least 1"},
		{Policy{InitialBackoff: time.Second, MaxBackoff: time.Millisecond}, "the backoff must grow"},
		{Policy{AttemptTimeout: -time.Second}, "AttemptTimeout -1s must not be negative"},
		{Policy{MaxBufferedBody: -1}, "MaxBufferedBody -1 must not be negative"},
		{Policy{Budget: Budget{Ratio: math.NaN()}}, "Ratio NaN must be a finite number"},
		{Policy{Budget: Budget{Ratio: math.Inf(1)}}, "Ratio +Inf must be a finite number"},
		{Policy{Budget: Budget{Min: -1}}, "Min -1 must not be negative"},
		{Policy{Statuses: []int{503, 501}}, "leave it out of Statuses"},
	} {
		if err := tc.p.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.p, err, tc.want)
		}
	}
}

func TestErrorSaysTheCauseThenTheAttempts(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{Attempts: 1, Err: errors.New("pacer: dial tcp: refused.")}, "pacer: dial tcp: refused; 1 attempt sent"},
		{Error{Attempts: 3, LastStatus: 503, Why: "gave up", Err: errors.New("reset")}, "pacer: reset; 3 attempts sent, the last answered 503, no other: gave up"},
		{Error{Attempts: 1, LastStatus: 429}, "pacer: 1 attempt sent, answered 429"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
	cause := errors.New("cause")
	if !errors.Is(&Error{Err: cause}, cause) {
		t.Error("an Error does not unwrap to its cause")
	}
}

func TestRetryableUnderTheZeroPolicy(t *testing.T) {
	get, _ := http.NewRequest(http.MethodGet, "http://api.test/", nil)
	post, _ := http.NewRequest(http.MethodPost, "http://api.test/", nil)
	keyed, _ := http.NewRequest(http.MethodPost, "http://api.test/", nil)
	keyed.Header.Set("Idempotency-Key", "k")
	status := func(code int, header ...string) *http.Response {
		h := http.Header{}
		for i := 0; i+1 < len(header); i += 2 {
			h.Set(header[i], header[i+1])
		}
		return &http.Response{StatusCode: code, Header: h}
	}
	for _, tc := range []struct {
		name    string
		req     *http.Request
		resp    *http.Response
		attempt int
		want    bool
	}{
		{"a GET's 503", get, status(503), 1, true},
		{"a GET's 503 on the last attempt", get, status(503), 3, false},
		{"a POST's 503", post, status(503), 1, false},
		{"a keyed POST's 503", keyed, status(503), 1, true},
		{"a 400", get, status(400), 1, false},
		{"a 400 the provider says to retry", get, status(400, "X-Should-Retry", "true"), 1, true},
		{"a 503 the provider says not to retry", get, status(503, "Stripe-Should-Retry", "false"), 1, false},
		{"a 501", get, status(501, "X-Should-Retry", "true"), 1, false},
	} {
		if ok, why := (Policy{}).Retryable(tc.req, tc.resp, nil, tc.attempt); ok != tc.want {
			t.Errorf("%s: %v (%s), want %v", tc.name, ok, why, tc.want)
		}
	}
}
