package pacer

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/store"
)

// countsPlentyAPI is a server that limits by more than it counts: a token
// bucket of 50 a second (bucketAPI), whose every answer, its 429s
// included, says 80 of 100 remain until a reset a second away — as
// GitHub's answers report the primary limit while a secondary one refuses
// ("403 or 429" with an error message; only the primary limit's refusal
// sets x-ratelimit-remaining to 0: "Exceeding the rate limit",
// docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api,
// read 2026-12-06). retryAfter keeps the bucket's Retry-After on a 429.
type countsPlentyAPI struct {
	*bucketAPI
	retryAfter bool
}

func (a countsPlentyAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := a.bucketAPI.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	resp.Header.Set("X-RateLimit-Limit", "100")
	resp.Header.Set("X-RateLimit-Remaining", "80")
	resp.Header.Set("X-RateLimit-Reset", "1")
	if !a.retryAfter {
		resp.Header.Del("Retry-After")
	}
	return resp, nil
}

// A refusal while the count says the call fitted is the server limiting
// by more than it counts: what it did outranks what its count says. The
// refusal cuts the scope as a bare 429 does, below the count's pace,
// until the climb back ends. Taken as the count's lesson, as a 429 with a
// count was before, the scope went on at the count's pace, the limit it
// was told (100 a second), and the server refused half its calls: 0.500
// refused per call, on loopback and over a round trip, with or without
// Retry-After. Aimed at the limit itself while the cut climbed back, the
// cut's share of a pace a tenth above the blind one went over what the
// server had accepted at once, and over the route a second cut measured
// the pause after the first and held the scope at 0.81 of the rate.
func TestACountARefusalContradictsIsOverruled(t *testing.T) {
	for _, net := range []network{onLoopback, overTheInternet} {
		for _, ra := range []bool{false, true} {
			name := net.name + "/bare 429"
			if ra {
				name = net.name + "/Retry-After"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					toPresent()
					api := countsPlentyAPI{&bucketAPI{rate: 50, burst: 5}, ra}
					tr := New(net.wrap(api), WithLogger(slogTo(io.Discard)), WithoutRetry(), WithLimit(PerSecond(100)))
					start := time.Now()
					// Two minutes: the climb back ends, and the count
					// paces again until the next refusal overrules it.
					hammer(tr, net.callers, start.Add(122*time.Second))
					a, r := api.counts("pacer", start.Add(2*time.Second), start.Add(122*time.Second))
					// 0.963–0.996 of the rate, 0.1–0.2 % refused.
					check(t, strings.TrimPrefix(t.Name(), "Test"), a, r, 50*120, 0.93)
				})
			})
		}
	}
}

// Stats say why the scope paces below what its count allows, and once
// the climb back ends the count paces the scope again.
func TestAnOverruledCountIsSaidAndForgiven(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		api := countsPlentyAPI{&bucketAPI{rate: 50, burst: 5}, false}
		tr := New(&wire{next: api}, WithLogger(slogTo(io.Discard)), WithoutRetry(), WithLimit(PerSecond(100)))
		hammer(tr, 16, time.Now().Add(3*time.Second))
		s := scopeStats(t, tr, "default")
		if s.Factor >= 1 || s.Rate > 60 || !strings.Contains(s.Why, "did not explain") {
			t.Fatalf("after refusals the count said fitted: %.1f a second (factor %.2f), why %q; want a cut below the count's 100, said to overrule it",
				s.Rate, s.Factor, s.Why)
		}
		time.Sleep(s.RecoveredIn + time.Second)
		if err := get(tr, context.Background(), "http://api.test/"); err != nil {
			t.Fatal(err)
		}
		if s = scopeStats(t, tr, "default"); s.Factor != 1 || strings.Contains(s.Why, "did not explain") || s.Rate < 99 {
			t.Errorf("after the climb back: %.1f a second (factor %.2f), why %q; want the count's pace, the limit itself", s.Rate, s.Factor, s.Why)
		}
	})
}

// A fleet that shares one bucket climbs an overruled cut below its counts
// in every process, not only the one refused: the cut it reads from the
// store says so (pace.Curve.Overruled). Three processes told 100 a
// second behind the bucket of 50: 0.978 of it, 10 refused in two
// minutes. With the flag left out of the record the fleet took 0.189 of
// the rate, 8.5 % refused: the processes that adopted the cut paced by
// their counts, into refusals.
func TestAFleetClimbsAnOverruledCutBelowItsCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		api := countsPlentyAPI{&bucketAPI{rate: 50, burst: 5}, false}
		shared := fleetStore{store.NewMemory()}
		var trs []*Transport
		for range 3 {
			tr := New(&wire{next: api}, WithLogger(slogTo(io.Discard)), WithoutRetry(), WithLimit(PerSecond(100)),
				WithStore(shared, store.Policy{LimitSync: time.Second}))
			if err := tr.Err(); err != nil {
				t.Fatal(err)
			}
			trs = append(trs, tr)
		}
		start := time.Now()
		var wg sync.WaitGroup
		for _, tr := range trs {
			wg.Go(func() { hammer(tr, 8, start.Add(122*time.Second)) })
		}
		wg.Wait()
		a, r := api.counts("pacer", start.Add(2*time.Second), start.Add(122*time.Second))
		check(t, "three processes", a, r, 50*120, 0.9)
	})
}
