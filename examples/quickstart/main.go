// Quickstart runs the same traffic against a rate-limited API twice — through
// a plain http.Client, then through pacer — and prints what happened.
//
// The API is a fake, started in this process on 127.0.0.1: it allows 50
// requests a second (a burst of 5) and answers 429 with Retry-After and the
// IETF RateLimit headers past that, the way real providers do. The traffic is
// a backfill of 240 requests from 8 goroutines, and an interactive user who
// clicks ten times a second for two seconds.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/pacer-go/pacer"
	"golang.org/x/time/rate"
)

const publishedLimit = 50 // requests a second, as the provider documents

// traffic is what both clients send.
type traffic struct {
	backfillCalls, backfillPool int
	clicks                      int
	clickEvery                  time.Duration
}

var defaultTraffic = traffic{backfillCalls: 240, backfillPool: 8, clicks: 20, clickEvery: 100 * time.Millisecond}

func main() {
	plain, paced := compare(defaultTraffic)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "client\tsent\taccepted\t429s\telapsed\tbackfill ok\tinteractive ok\tinteractive p50\tinteractive max\t")
	for _, r := range []result{plain, paced} {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%v\t%d/%d\t%d/%d\t%v\t%v\t\n", r.name, r.sent, r.accepted, r.rejected,
			r.elapsed.Round(10*time.Millisecond), r.backfillOK, defaultTraffic.backfillCalls, r.interactiveOK, defaultTraffic.clicks,
			r.percentile(0.5), r.percentile(1))
	}
	w.Flush()
	fmt.Printf("\nThe API allows %d requests a second. The plain client sends everything at once and most of it\n"+
		"is refused; pacer sends at 90%% of the published limit, so nothing is refused, and the interactive\n"+
		"clicks go ahead of the backfill.\n", publishedLimit)
}

// compare sends the traffic to a fresh fake API through a plain client, then
// to another through pacer.
func compare(tr traffic) (plain, paced result) {
	api := newFakeAPI()
	defer api.Close()
	plain = run("plain http.Client", &http.Client{}, api.URL, tr)

	// The pacer version: the published limit, an interactive workload that
	// keeps 30% of the burst for itself and goes first, and a backfill.
	transport := pacer.New(nil,
		pacer.WithLimit(pacer.PerSecond(publishedLimit)),
		pacer.WithWorkload("interactive", pacer.Workload{Reserve: 0.3}),
		pacer.WithWorkload("backfill", pacer.Workload{}),
	)
	if err := transport.Err(); err != nil {
		log.Fatal(err)
	}
	// A fresh API, so that pacer does not start in the plain client's debt.
	api2 := newFakeAPI()
	defer api2.Close()
	return plain, run("pacer", transport.Client(), api2.URL, tr)
}

// result is what one run saw.
type result struct {
	name                      string
	sent, accepted, rejected  int64
	backfillOK, interactiveOK int64
	elapsed                   time.Duration
	clickLatencies            []time.Duration
}

func (r result) percentile(p float64) time.Duration {
	if len(r.clickLatencies) == 0 {
		return 0
	}
	s := slices.Clone(r.clickLatencies)
	slices.Sort(s)
	return s[int(math.Ceil(p*float64(len(s))))-1].Round(time.Millisecond)
}

// run sends the backfill and the clicks through client and counts outcomes.
func run(name string, client *http.Client, url string, tr traffic) result {
	r := result{name: name}
	var mu sync.Mutex
	send := func(workload string) (ok bool) {
		ctx := pacer.ContextWithWorkload(context.Background(), workload)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			log.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			log.Printf("%s: %v", name, err)
			return false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		mu.Lock()
		defer mu.Unlock()
		r.sent++
		if resp.StatusCode == http.StatusTooManyRequests {
			r.rejected++
			return false
		}
		r.accepted++
		return true
	}

	start := time.Now()
	var wg sync.WaitGroup
	var next atomic.Int64
	for range tr.backfillPool {
		wg.Go(func() {
			for next.Add(1) <= int64(tr.backfillCalls) {
				if send("backfill") {
					mu.Lock()
					r.backfillOK++
					mu.Unlock()
				}
			}
		})
	}
	wg.Go(func() {
		for i := range tr.clicks {
			time.Sleep(time.Until(start.Add(time.Duration(i) * tr.clickEvery)))
			clicked := time.Now()
			ok := send("interactive")
			mu.Lock()
			r.clickLatencies = append(r.clickLatencies, time.Since(clicked))
			if ok {
				r.interactiveOK++
			}
			mu.Unlock()
		}
	})
	wg.Wait()
	r.elapsed = time.Since(start)
	return r
}

// newFakeAPI starts an API that enforces its published limit the way real
// providers do: a token bucket, and past it a 429 that says when to retry.
func newFakeAPI() *httptest.Server {
	limiter := rate.NewLimiter(publishedLimit, 5)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		reservation := limiter.ReserveN(now, 1)
		w.Header().Set("RateLimit-Policy", fmt.Sprintf(`"default";q=%d;w=1`, publishedLimit))
		if delay := reservation.DelayFrom(now); delay > 0 {
			reservation.CancelAt(now)
			w.Header().Set("Retry-After", fmt.Sprint(int(math.Ceil(delay.Seconds()))))
			w.Header().Set("RateLimit", fmt.Sprintf(`"default";r=0;t=%d`, int(math.Ceil(delay.Seconds()))))
			http.Error(w, `{"error":"rate_limited"}`, http.StatusTooManyRequests)
			return
		}
		w.Header().Set("RateLimit", fmt.Sprintf(`"default";r=%d;t=1`, int(limiter.TokensAt(now))))
		fmt.Fprintln(w, `{"ok":true}`)
	}))
}
