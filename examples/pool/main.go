// Pool sends one backfill through a pool of three API keys, each with its
// own limit, and prints what each key took.
//
// The API is a fake, started in this process on 127.0.0.1: it limits each
// key (its Authorization header) to its own requests a second, says so in
// X-RateLimit-* headers, and answers 429 past that. Halfway through, one key
// is revoked and answers 401. pacer learns each key's limit from its own
// answers, sends each call to the key that can take it soonest, and takes
// the revoked key out at its first 401, sending that call to another key.
// The keys are made up; the program prints only the members' names.
//
//	go run ./examples/pool
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/pool"
	"golang.org/x/time/rate"
)

// The fake API's keys and their limits, in requests a second.
var keys = map[string]int{"fake-key-small": 20, "fake-key-medium": 40, "fake-key-large": 60}

const revoked = "fake-key-medium" // answers 401 from halfway through

func main() {
	r := run(4*time.Second, 16)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "member\tstate\tsent\trefused\tmoved to another\t")
	for _, m := range r.members {
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t\n", m.Name, m.State, m.Admitted, m.Refused, m.RotatedAway)
	}
	w.Flush()
	fmt.Printf("\n%d calls in %v, %d failed, %d answered 429. The keys allow %d a second together until one is revoked.\n",
		r.ok+r.failed, r.elapsed.Round(10*time.Millisecond), r.failed, r.rejected, 120)
}

type result struct {
	members    []pool.MemberStats
	ok, failed int64
	rejected   int64
	elapsed    time.Duration
}

// run sends calls from callers goroutines for d through a pool of the fake
// API's keys, revoking one key at d/2.
func run(d time.Duration, callers int) result {
	api := newFakeAPI()
	srv := httptest.NewServer(api)
	defer srv.Close()

	members := []pool.Member{
		{Name: "small", Apply: pool.Bearer("fake-key-small")},
		{Name: "medium", Apply: pool.Bearer("fake-key-medium")},
		{Name: "large", Apply: pool.Bearer("fake-key-large")},
	}
	tr := pacer.New(nil,
		pacer.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
		// A stand-in for each key's limit until its answers publish its own.
		pacer.WithScope(pacer.Scope{Name: "key", Limit: pacer.PerSecond(10), Provisional: true}),
		pacer.WithPool(pool.Config{Scopes: []string{"key"}, Members: members}),
		pacer.WithoutRetry())
	if err := tr.Err(); err != nil {
		log.Fatal(err)
	}
	client := tr.Client()

	var res result
	start := time.Now()
	time.AfterFunc(d/2, func() { api.revoke(revoked) })
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for time.Since(start) < d {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/things", nil)
				resp, err := client.Do(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				cancel()
				if err != nil || resp.StatusCode != http.StatusOK {
					atomic.AddInt64(&res.failed, 1)
					time.Sleep(time.Millisecond)
					continue
				}
				atomic.AddInt64(&res.ok, 1)
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.members = tr.Stats().Members
	res.rejected = api.rejected.Load()
	return res
}

// fakeAPI limits each key to its requests a second with a token bucket of
// its own, says so in the IETF RateLimit headers, and answers 401 to a
// revoked key.
type fakeAPI struct {
	mu       sync.Mutex
	limiters map[string]*rate.Limiter
	revoked  map[string]bool

	rejected atomic.Int64
}

func newFakeAPI() *fakeAPI {
	a := &fakeAPI{limiters: map[string]*rate.Limiter{}, revoked: map[string]bool{}}
	for key, n := range keys {
		a.limiters[key] = rate.NewLimiter(rate.Limit(n), n/10)
	}
	return a
}

func (a *fakeAPI) revoke(key string) {
	a.mu.Lock()
	a.revoked[key] = true
	a.mu.Unlock()
}

func (a *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	a.mu.Lock()
	limiter, revoked := a.limiters[key], a.revoked[key]
	a.mu.Unlock()
	if limiter == nil || revoked {
		http.Error(w, `{"error":"invalid api key"}`, http.StatusUnauthorized)
		return
	}
	now := time.Now()
	h := w.Header()
	h.Set("RateLimit-Policy", fmt.Sprintf(`"key";q=%d;w=1`, keys[key]))
	reservation := limiter.ReserveN(now, 1)
	if delay := reservation.DelayFrom(now); delay > 0 {
		reservation.CancelAt(now)
		a.rejected.Add(1)
		h.Set("Retry-After", fmt.Sprint(int(math.Ceil(delay.Seconds()))))
		h.Set("RateLimit", fmt.Sprintf(`"key";r=0;t=%d`, int(math.Ceil(delay.Seconds()))))
		http.Error(w, `{"error":"rate_limited"}`, http.StatusTooManyRequests)
		return
	}
	h.Set("RateLimit", fmt.Sprintf(`"key";r=%d;t=1`, int(limiter.TokensAt(now))))
	fmt.Fprintln(w, `{"ok":true}`)
}
