package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeStripe answers like Stripe: the first customer creation is refused
// with Stripe's 429 body, the next one succeeds.
type fakeStripe struct {
	mu   sync.Mutex
	keys []string // the Idempotency-Key of each POST /v1/customers
}

func (f *fakeStripe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_test")
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/customers":
		r.ParseForm()
		f.mu.Lock()
		f.keys = append(f.keys, r.Header.Get("Idempotency-Key"))
		first := len(f.keys) == 1
		f.mu.Unlock()
		if first {
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write([]byte(`{"error":{"code":"rate_limit","doc_url":"https://stripe.com/docs/error-codes/rate-limit","message":"Too many requests hit the API too quickly. We recommend an exponential backoff of your requests.","type":"invalid_request_error"}}`))
			return
		}
		w.Write([]byte(`{"id":"cus_NffrFeUfNV2Hib","object":"customer","email":"` + r.PostForm.Get("email") + `","livemode":false}`))
	case r.Method == http.MethodGet && r.URL.Path == "/v1/customers/cus_NffrFeUfNV2Hib":
		w.Write([]byte(`{"id":"cus_NffrFeUfNV2Hib","object":"customer","email":"jenny.rosen@example.com","livemode":false}`))
	default:
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":{"type":"invalid_request_error","message":"Unrecognized request URL"}}`))
	}
}

func TestRunAgainstAFakeStripe(t *testing.T) {
	fake := &fakeStripe{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	var out strings.Builder
	if err := run(context.Background(), &out, srv.URL, "sk_test_123", nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "retrieved customer cus_NffrFeUfNV2Hib <jenny.rosen@example.com>") {
		t.Fatalf("output:\n%s", out.String())
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	// One refusal, one retry: stripe-go's retries are off, so pacer's are
	// the only ones, and both attempts carry stripe-go's key.
	if len(fake.keys) != 2 {
		t.Fatalf("%d POST attempts, want 2", len(fake.keys))
	}
	if fake.keys[0] == "" || fake.keys[0] != fake.keys[1] {
		t.Fatalf("Idempotency-Keys %q: want one key on both attempts", fake.keys)
	}
}
