package storetest

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/store"
)

// Hang checks, in wall time, that a store whose server stops answering holds
// no request past the store timeout (100 ms here), nor past the request's
// own context. It sends one request through a Transport that fails open on
// s, calls hang, which must make every call to s block (pause the server,
// lock its table), sends two more, one with a deadline shorter than the
// store timeout and one with a longer one, and calls resume.
//
// It takes well under a second.
func Hang(t *testing.T, s store.Store, hang, resume func()) {
	t.Helper()
	var sent atomic.Int64
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		sent.Add(1)
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
	})
	tr := pacer.New(base, pacer.WithLimit(pacer.PerSecond(100)), pacer.WithStore(s, store.Policy{OnFailure: store.FailOpen, Timeout: 100 * time.Millisecond}))
	get := func(timeout time.Duration) (time.Duration, error) { return timedGet(tr, timeout) }
	if _, err := get(time.Second); err != nil {
		t.Fatal(err)
	}
	hang()
	defer resume()
	// The request's context ends first: its error, at its deadline.
	if took, err := get(30 * time.Millisecond); !errors.Is(err, context.DeadlineExceeded) || took > 500*time.Millisecond {
		t.Fatalf("with the store hung, a request with a 30 ms deadline returned %v after %v", err, took)
	}
	// The store timeout ends first: the request fails open.
	if took, err := get(5 * time.Second); err != nil || took > time.Second {
		t.Fatalf("with the store hung, a request returned %v after %v; want sent after the 100 ms store timeout", err, took)
	}
	if sent.Load() != 2 {
		t.Fatalf("sent %d requests, want 2", sent.Load())
	}
}

// timedGet sends a GET through tr on a context that ends after timeout,
// closes the response, and returns how long the call took.
func timedGet(tr *pacer.Transport, timeout time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.example/", nil)
	start := time.Now()
	resp, err := tr.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
	}
	return time.Since(start), err
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
