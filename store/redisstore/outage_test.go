package redisstore_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/internal/testservers"
	"github.com/pacer-go/pacer/store/redisstore"
	"github.com/pacer-go/pacer/storetest"
)

// A private Redis, stopped mid-run and started again: no request hangs past
// its context, each StoreFailure policy holds, and the stores recover.
func TestOutage(t *testing.T) {
	srv := testservers.StartRedis(t)
	storetest.Outage(t, func(t *testing.T) pacer.Store {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
		t.Cleanup(func() { rdb.Close() })
		return redisstore.New(rdb, redisstore.WithPrefix(storetest.Scope(t)))
	}, srv.Stop, srv.Start)
}

// A Redis that hangs (SIGSTOP) holds no request past the store timeout, nor
// past the request's own context; the requests fail open as configured.
func TestHangingServer(t *testing.T) {
	srv := testservers.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	var sent atomic.Int64
	base := roundTripper(func(req *http.Request) (*http.Response, error) {
		sent.Add(1)
		return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
	})
	tr := pacer.New(base, pacer.WithLimit(pacer.PerSecond(100)),
		pacer.WithStore(redisstore.New(rdb, redisstore.WithPrefix(storetest.Scope(t)))),
		pacer.WithStoreFailure(pacer.FailOpen()), pacer.WithStoreTimeout(100*time.Millisecond))
	get := func(timeout time.Duration) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://api.example/", nil)
		start := time.Now()
		resp, err := tr.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		return time.Since(start), err
	}
	if _, err := get(time.Second); err != nil {
		t.Fatal(err)
	}
	srv.Pause()
	defer srv.Resume()
	// The request's context ends first: its error, at its deadline.
	if took, err := get(30 * time.Millisecond); !errors.Is(err, context.DeadlineExceeded) || took > 500*time.Millisecond {
		t.Fatalf("with Redis hung, a request with a 30 ms deadline returned %v after %v", err, took)
	}
	// The store timeout ends first: the request fails open.
	if took, err := get(5 * time.Second); err != nil || took > time.Second {
		t.Fatalf("with Redis hung, a request returned %v after %v; want sent after the 100 ms store timeout", err, took)
	}
	if sent.Load() != 2 {
		t.Fatalf("sent %d requests, want 2", sent.Load())
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
