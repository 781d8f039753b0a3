package stripe_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/internal/providertest"
	"github.com/pacer-go/pacer/providers/stripe"
)

const api = "https://api.stripe.com"

func send(t *testing.T, c *http.Client, method, path, body string) (*http.Response, error) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, api+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return providertest.Do(c, req)
}

// A retried POST carries the same Idempotency-Key on every attempt.
func TestPresetRetriesAPostWithOneIdempotencyKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		fake := &providertest.Fake{Respond: func(req *http.Request, _ []byte) *http.Response {
			if calls.Add(1) < 3 {
				return providertest.Response(req, http.StatusInternalServerError, []string{"Stripe-Should-Retry", "true"},
					`{"error":{"type":"api_error","message":"An unknown error occurred"}}`)
			}
			return providertest.Response(req, 200, nil, `{"id":"ch_1"}`)
		}}
		c := pacer.New(fake, stripe.Preset(stripe.Live)).Client()
		resp, err := send(t, c, http.MethodPost, "/v1/charges", "amount=100&currency=usd")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("resp %v, err %v", resp, err)
		}
		sent := fake.Requests()
		if len(sent) != 3 {
			t.Fatalf("%d attempts, want 3", len(sent))
		}
		key := sent[0].Header.Get("Idempotency-Key")
		for i, s := range sent {
			if got := s.Header.Get("Idempotency-Key"); got == "" || got != key {
				t.Fatalf("attempt %d carried Idempotency-Key %q, the first %q", i+1, got, key)
			}
			if string(s.Body) != "amount=100&currency=usd" {
				t.Fatalf("attempt %d sent body %q", i+1, s.Body)
			}
		}
	})
}

func TestPresetHonoursStripeShouldRetry(t *testing.T) {
	cases := []struct {
		name     string
		status   int
		header   string
		attempts int
	}{
		{"false wins over a retryable status", http.StatusInternalServerError, "false", 1},
		{"true wins over a final status", http.StatusConflict, "true", 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := &providertest.Fake{Respond: func(req *http.Request, _ []byte) *http.Response {
					return providertest.Response(req, c.status, []string{"Stripe-Should-Retry", c.header}, `{"error":{}}`)
				}}
				client := pacer.New(fake, stripe.Preset(stripe.Live)).Client()
				resp, err := send(t, client, http.MethodPost, "/v1/refunds", "charge=ch_1")
				if err != nil || resp.StatusCode != c.status {
					t.Fatalf("resp %v, err %v", resp, err)
				}
				if got := len(fake.Requests()); got != c.attempts {
					t.Fatalf("%d attempts, want %d", got, c.attempts)
				}
			})
		})
	}
}

// A 429 empties the buckets the call was charged to, its endpoint's among
// them: the next call to that endpoint waits.
func TestA429SlowsItsOwnBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var limited atomic.Bool
		limited.Store(true)
		fake := &providertest.Fake{Respond: func(req *http.Request, _ []byte) *http.Response {
			if req.Method == http.MethodGet && limited.Swap(false) {
				return providertest.Response(req, http.StatusTooManyRequests, nil,
					`{"error":{"type":"invalid_request_error","code":"rate_limit","message":"Too many requests hit the API too quickly."}}`)
			}
			return providertest.Response(req, 200, nil, "{}")
		}}
		c := pacer.New(fake, stripe.Preset(stripe.Test), pacer.WithoutRetry()).Client()
		start := time.Now()
		if resp, _ := send(t, c, http.MethodGet, "/v1/customers", ""); resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("status %d, want the fake's 429", resp.StatusCode)
		}
		send(t, c, http.MethodGet, "/v1/customers", "")
		if waited := time.Since(start); waited < 40*time.Millisecond {
			t.Fatalf("the call after a 429 went after %v; the bucket should have been emptied", waited)
		}
	})
}

func TestRoute(t *testing.T) {
	g, e := stripe.ScopeGlobal, stripe.ScopeEndpoint
	cases := []struct {
		method, url string
		want        []string
	}{
		{"GET", api + "/v1/customers", []string{g, e + "=GET /v1/customers"}},
		{"POST", api + "/v1/customers", []string{g, e + "=POST /v1/customers"}},
		{"DELETE", api + "/v1/customers/cus_NffrFeUfNV2Hib", []string{g, e + "=DELETE /v1/customers/{id}"}},
		{"GET", api + "/v1/customers/search", []string{g, e + "=GET /v1/customers/search", stripe.ScopeSearch}},
		{"GET", api + "/v1/files/file_1", []string{g, e + "=GET /v1/files/{id}", stripe.ScopeFilesRead}},
		{"POST", "https://files.stripe.com/v1/files", []string{g, e + "=POST /v1/files", stripe.ScopeFilesWrite}},
		{"POST", api + "/v1/payment_intents/pi_3MtwBwLkdIwHu7ix28a3tqPa/confirm", []string{g, e + "=POST /v1/payment_intents/{id}/confirm"}},
		{"GET", api + "/v1/coupons/25OFF", []string{g, e + "=GET /v1/coupons/{id}"}},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, c.url, nil)
		charges := stripe.Route(req, []pacer.Charge{{Scope: pacer.DefaultScope}})
		var got []string
		for _, ch := range charges {
			s := ch.Scope
			if ch.Key != "" {
				s += "=" + ch.Key
			}
			got = append(got, s)
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s %s: charged %v, want %v", c.method, c.url, got, c.want)
		}
	}
}

// okTransport answers every request 200 and counts them.
type okTransport struct{ n atomic.Int64 }

func (o *okTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	o.n.Add(1)
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
}

// A workload's Max is a share of each scope on its own, as the package doc
// says: with Max 0.7, a backfill that calls one endpoint gets 0.7 of that
// endpoint's 25/s after headroom, about 15.8/s, not 0.7 of the account's
// 100/s; spread over four endpoints, it gets the 63/s.
func TestMaxIsAShareOfEachEndpoint(t *testing.T) {
	for _, tc := range []struct {
		endpoints int
		want      float64
	}{{1, 25 * 0.9 * 0.7}, {4, 100 * 0.9 * 0.7}} {
		synctest.Test(t, func(t *testing.T) {
			base := &okTransport{}
			tr := pacer.New(base, stripe.Preset(stripe.Live), pacer.WithWorkload("backfill", pacer.Workload{Max: 0.7}))
			if err := tr.Err(); err != nil {
				t.Fatal(err)
			}
			ctx := pacer.ContextWithWorkload(context.Background(), "backfill")
			paths := []string{"/v1/customers", "/v1/charges", "/v1/invoices", "/v1/refunds"}[:tc.endpoints]
			const seconds = 100
			for start, i := time.Now(), 0; time.Since(start) < seconds*time.Second; i++ {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, api+paths[i%len(paths)], nil)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			if got := float64(base.n.Load()) / seconds; got < tc.want*0.95 || got > tc.want*1.1 {
				t.Errorf("%d endpoints: the backfill sent %.1f/s, want about %.1f/s", tc.endpoints, got, tc.want)
			}
		})
	}
}
