package pacer

import (
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// bucketAPI is a token-bucket server, as a GCRA limiter runs one
// (throttled/throttled's, whose headers it copies): rate a second, room
// for burst calls beyond the one being served. Every answer says
// X-RateLimit-Limit: burst+1 (the bucket's capacity, not a count per
// window), X-RateLimit-Remaining (the calls that could go at once) and
// X-RateLimit-Reset (the seconds until the bucket is full, rounded up); a
// 429 adds Retry-After (the seconds until a call fits, rounded up).
type bucketAPI struct {
	rate  float64
	burst int

	mu       sync.Mutex
	tat      time.Time // the theoretical arrival time of GCRA
	accepted map[string][]time.Time
	rejected map[string][]time.Time
}

func (a *bucketAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	who := req.Header.Get("X-Client")
	if who == "" {
		who = "pacer"
	}
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.accepted == nil {
		a.accepted, a.rejected = map[string][]time.Time{}, map[string][]time.Time{}
	}
	every := time.Duration(float64(time.Second) / a.rate)
	tolerance := time.Duration(a.burst) * every
	tat := a.tat
	if tat.Before(now) {
		tat = now
	}
	status := http.StatusOK
	h := http.Header{}
	if tat.Sub(now) > tolerance {
		status = http.StatusTooManyRequests
		a.rejected[who] = append(a.rejected[who], now)
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil((tat.Sub(now) - tolerance).Seconds()))))
	} else {
		tat = tat.Add(every)
		a.tat = tat
		a.accepted[who] = append(a.accepted[who], now)
	}
	remaining := max(0, int((tolerance+every-tat.Sub(now))/every))
	h.Set("X-RateLimit-Limit", strconv.Itoa(a.burst+1))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Reset", strconv.Itoa(int(math.Ceil(tat.Sub(now).Seconds()))))
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

func (a *bucketAPI) counts(who string, from, to time.Time) (accepted, rejected int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return between(a.accepted[who], from, to), between(a.rejected[who], from, to)
}

// A counter is a server model that counts what it accepted and refused.
type counter interface {
	http.RoundTripper
	counts(who string, from, to time.Time) (accepted, rejected int)
}

// farWire is a network with a round trip: each call takes base plus up to
// jitter to reach the server, and as long again to come back, each way
// drawn on its own, so answers come back in another order than their calls
// were sent in — as a provider's answers do over the internet.
type farWire struct {
	next         http.RoundTripper
	base, jitter time.Duration

	mu sync.Mutex
	n  int
}

func (w *farWire) RoundTrip(req *http.Request) (*http.Response, error) {
	w.mu.Lock()
	w.n++
	n := w.n
	w.mu.Unlock()
	time.Sleep(w.base + lagUpTo(w.jitter)(2*n))
	resp, err := w.next.RoundTrip(req)
	time.Sleep(w.base + lagUpTo(w.jitter)(2*n+1))
	return resp, err
}

// A network is how far a test's server is from pacer.
type network struct {
	name string
	wrap func(http.RoundTripper) http.RoundTripper
	// callers is how many goroutines call: enough to keep the limit busy
	// across the round trip.
	callers int
}

var (
	onLoopback = network{"loopback", func(rt http.RoundTripper) http.RoundTripper { return &wire{next: rt} }, 16}
	// overTheInternet is a 200–400 ms round trip: 100 ms plus up to 100 ms
	// each way.
	overTheInternet = network{"rtt 200-400ms", func(rt http.RoundTripper) http.RoundTripper {
		return &farWire{next: rt, base: 100 * time.Millisecond, jitter: 100 * time.Millisecond}
	}, 64}
)

// spend runs net.callers callers through a Transport configured by opts
// for d against api reached over net, and checks what the server accepted
// from skip on against want of ceiling a second.
func spend(t *testing.T, api counter, net network, ceiling float64, d, skip time.Duration, want float64, opts ...Option) {
	t.Helper()
	tr := New(net.wrap(api), append([]Option{WithLogger(slogTo(io.Discard)), WithoutRetry()}, opts...)...)
	start := time.Now()
	hammer(tr, net.callers, start.Add(d))
	a, r := api.counts("pacer", start.Add(skip), start.Add(d))
	check(t, strings.TrimPrefix(t.Name(), "Test"), a, r, ceiling*(d-skip).Seconds(), want)
}

// A token bucket that publishes its capacity as X-RateLimit-Limit (11,
// beside a rate of 100 a second) and the time until it is full as a
// one-second reset does not limit to 11 a second: the server accepts 90 a
// second and more, without a refusal, and what it did outranks what its
// headers seem to say. pacer read "11 per second" and paced at 12 (0.13 of
// the quota; BENCHMARKS.md, issue 25's matrix).
func TestTokenBucketsPublishedCapacityIsNotItsRate(t *testing.T) {
	for _, net := range []network{onLoopback, overTheInternet} {
		for _, told := range []int{100, 200} {
			t.Run(net.name+"/told "+strconv.Itoa(told), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					toPresent()
					api := &bucketAPI{rate: 100, burst: 10}
					// Issue 25's targets are 0.97 limit known, 0.95 told
					// 2× (0.95 and 0.93 over the round trip). With the
					// limit known the live counts pace the scope up to the
					// limit itself: at 98 % of it, as before, the bucket
					// took 0.980 on loopback and 0.966 over the round trip
					// (the virtual matrix in bench/ keeps every cell's
					// figure).
					want := 0.95
					if told == 100 {
						want = 0.99
						if net.callers > onLoopback.callers {
							want = 0.975
						}
					}
					spend(t, api, net, 100, 22*time.Second, 2*time.Second, want, WithLimit(PerSecond(told)))
				})
			})
		}
	}
}

// Over a round trip, a remaining count is as old as half the trip when it
// arrives, dozens of calls have been sent since, and a window that gives
// back what it was given has given back as many meanwhile. Read net of the
// calls in flight alone, the count read as scarcity: 0.73 of a sliding
// window (issue 25). With the limit known and told twice it, on loopback
// and over a 200–400 ms round trip. (A fixed window over the round trip:
// TestFixedWindowOverARoundTrip.)
func TestSlidingWindowOverARoundTrip(t *testing.T) {
	for _, net := range []network{onLoopback, overTheInternet} {
		for _, told := range []int{100, 200} {
			t.Run(net.name+"/told "+strconv.Itoa(told), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					toPresent()
					time.Sleep(348 * time.Millisecond)
					api := &windowAPI{limit: 100, window: time.Second, sliding: true, retryAfter: true}
					want := 0.95
					if net.callers > onLoopback.callers {
						want = 0.92 // the target is 0.95 (0.93 told 2×): 0.94–0.96 reached
					}
					spend(t, api, net, 100, 22*time.Second, 2*time.Second, want, WithLimit(PerSecond(told)))
				})
			})
		}
	}
}

// A fixed window counts a call when it arrives: over a round trip, one
// sent later than the trip's floor before the refill its answers show
// lands in the next window, so this window's count is spent before then.
// Spread until the refill itself, the window's last calls went out at a
// crawl: told twice its limit over a 200–400 ms round trip, 0.84 of the
// window was spent. Once the turn is nearer than the floor, what is sent
// spends the next window's count (TestTheCallsInFlightAtAFixedWindowsTurnSpendTheNext):
// reckoned from the average round trip rather than the floor, a call with
// a short way out arrived before the turn, and this test saw 1.4 % refused.
func TestFixedWindowOverARoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		time.Sleep(348 * time.Millisecond)
		api := &windowAPI{limit: 100, window: time.Second}
		spend(t, api, overTheInternet, 100, 22*time.Second, 2*time.Second, 0.88, WithLimit(PerSecond(200))) // 0.924; 0.844 without the rule
	})
}

// A count that stays at its peak while the scope spends, before what comes
// back is measured, is a bucket refilling faster than the scope spends: its
// reset is when it is full again, not a window's end. Spread over that
// reset, a token bucket's first second and a half went at a tenth of its
// rate: its first two seconds spent 0.61 of what the server allowed, now
// 0.73 (over 20 s, 0.932 → 0.951 in the virtual matrix).
func TestTokenBucketsFirstSeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		api := &bucketAPI{rate: 100, burst: 10}
		spend(t, api, onLoopback, 100, 2*time.Second, 0, 0.67, WithLimit(PerSecond(100)))
	})
}
