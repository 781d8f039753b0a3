package pacer

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacer-go/pacer/internal/testservers"
)

// TestAgainstNginxConfiguredAtTwiceItsRate runs pacer against a real nginx
// that limits with limit_req and says nothing but 429 — no Retry-After, no
// RateLimit fields — while pacer is configured at twice nginx's rate. The
// feedback loop must bring it down: over a 20-second run, 429s under 2% of
// accepted requests and goodput at least 85% of nginx's limit.
//
// This is wall-clock time against a real server, so the figures are asserted
// with the margins the issue sets, not to the request.
func TestAgainstNginxConfiguredAtTwiceItsRate(t *testing.T) {
	if testing.Short() {
		t.Skip("a 20-second run against nginx")
	}
	const rate, burst = 50, 10
	base := testservers.StartNginx(t, `
limit_req_zone $binary_remote_addr zone=api:1m rate=50r/s;
limit_req_status 429;
location = /api {
    limit_req zone=api burst=10 nodelay;
    try_files /ok.txt =500;
}`)
	tr := New(nil, WithLimit(PerSecond(2*rate)))
	client := tr.Client()
	const run = 20 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	var accepted, rejected, failed atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api", nil)
				resp, err := client.Do(req)
				if errors.Is(err, context.DeadlineExceeded) {
					return // the run ends: pacer says the next call cannot make it
				}
				if err != nil {
					if failed.Add(1) == 1 {
						t.Logf("first failure: %v", err)
					}
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					accepted.Add(1)
				case http.StatusTooManyRequests:
					rejected.Add(1)
				default:
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	goodput := float64(accepted.Load()) / elapsed
	share := float64(rejected.Load()) / float64(accepted.Load())
	t.Logf("%d accepted, %d 429s (%.2f%% of accepted), %d failed, goodput %.1f/s of nginx's %d/s over %.1f s",
		accepted.Load(), rejected.Load(), 100*share, failed.Load(), goodput, rate, elapsed)
	if share >= 0.02 {
		t.Errorf("429s were %.2f%% of accepted requests, want under 2%%", 100*share)
	}
	if goodput < 0.85*rate {
		t.Errorf("goodput %.1f/s, want at least 85%% of %d/s", goodput, rate)
	}
	if failed.Load() > 0 {
		t.Errorf("%d requests failed outright", failed.Load())
	}
}
