package simulate

import (
	"context"
	"math"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
)

func TestPacerSendsItsBurstThenItsPace(t *testing.T) {
	// Told of 10 a second at 50% headroom, pacer paces at 5 a second with
	// a burst of (1 − 0.5) × 10 = 5. Twenty requests all arriving at 0 s:
	// five go at once, then one every 200 ms, the last at 3 s.
	c := Default()
	c.Duration, c.Rate = 4*time.Second, 0
	c.SpikeRate, c.SpikeStart, c.SpikeEnd = 20, 0, time.Second
	c.Arrivals, c.ClumpWidth = Clumped, time.Nanosecond // all at 0
	c.Refill, c.PacerPer, c.Headroom = 10, time.Second, 0.5
	arrivals := Arrivals(c)
	sent, err := pacerSends(c, arrivals)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range sent {
		want := time.Duration(max(0, i-4)) * 200 * time.Millisecond
		// pacer rounds each wait up to the nanosecond; allow for it.
		if d := s - want; d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("request %d sent at %v, want %v", i, s, want)
		}
	}
	r, err := RunPacer(c, arrivals)
	if err != nil {
		t.Fatal(err)
	}
	if r.Allowed != 20 || r.Rejected != 0 || r.Queue.QueuedAtEnd != 0 {
		t.Errorf("allowed %d, rejected %d, queued %d; want 20, 0, 0", r.Allowed, r.Rejected, r.Queue.QueuedAtEnd)
	}
	// Delays 0 ×5, .2, .4, …, 3.0: the 10th is 1 s, the 20th 3 s.
	if d := r.Queue.DelayP50 - time.Second; d < -time.Microsecond || d > time.Microsecond {
		t.Errorf("p50 delay %v, want 1s", r.Queue.DelayP50)
	}
	if d := r.Queue.DelayMax - 3*time.Second; d < -time.Microsecond || d > time.Microsecond {
		t.Errorf("max delay %v, want 3s", r.Queue.DelayMax)
	}
}

func TestPacerNeverExceedsThePublishedLimit(t *testing.T) {
	// The default burst is what makes pacer safe against a provider that
	// counts in any window of the published period.
	for _, scenario := range []Pattern{Even, Clumped, Poisson} {
		c := Default()
		c.Arrivals = scenario
		arrivals := Arrivals(c)
		sent, err := pacerSends(c, arrivals)
		if err != nil {
			t.Fatal(err)
		}
		sent = slices.DeleteFunc(sent, func(s time.Duration) bool { return s == notSent })
		for i := range sent {
			n := 0
			for j := i; j < len(sent) && sent[j]-sent[i] < c.PacerPer; j++ {
				n++
			}
			if n > c.PacerCount() {
				t.Fatalf("%s: %d sent in the %v from %v; the published limit is %d", scenario, n, c.PacerPer, sent[i], c.PacerCount())
			}
		}
	}
}

// TestPacerSimulationMatchesTheWaitingTransport runs the same traffic
// through a pacer.Transport that waits, as applications use it, one
// goroutine a request, in a synctest bubble where time is virtual; it must
// send at the very instants that the simulation, which keeps the queue
// itself, says.
func TestPacerSimulationMatchesTheWaitingTransport(t *testing.T) {
	spike := tinyConfig()
	spike.Duration, spike.SpikeRate, spike.SpikeEnd = 8*time.Second, 30, 3*time.Second
	spike.Refill, spike.Headroom = 10, 0.5
	clumped := spike
	clumped.Arrivals = Clumped
	shared := spike
	shared.Clients = 3
	poisson := Default()
	poisson.Arrivals, poisson.Duration, poisson.SpikeStart, poisson.SpikeEnd = Poisson, 20*time.Second, 5*time.Second, 10*time.Second
	for name, c := range map[string]Config{"spike": spike, "clumped": clumped, "shared": shared, "poisson": poisson} {
		t.Run(name, func(t *testing.T) {
			arrivals := Arrivals(c)
			simulated, err := pacerSends(c, arrivals)
			if err != nil {
				t.Fatal(err)
			}
			simulated = slices.DeleteFunc(simulated, func(s time.Duration) bool { return s == notSent })
			slices.Sort(simulated)
			real := sendThroughWaitingTransport(t, c, arrivals)
			if !slices.Equal(real, simulated) {
				t.Errorf("the waiting Transport sent %d requests, the simulation %d", len(real), len(simulated))
				for i := range min(len(real), len(simulated)) {
					if real[i] != simulated[i] {
						t.Fatalf("request %d: sent at %v by the Transport, at %v by the simulation", i, real[i], simulated[i])
					}
				}
			}
		})
	}
}

// sendThroughWaitingTransport sends each arrival at its time through a
// waiting Transport and returns, in order, when requests reached the API
// within the run.
func sendThroughWaitingTransport(t *testing.T, c Config, arrivals []Arrival) []time.Duration {
	var sent []time.Duration
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		api := &recordingAPI{start: start}
		tr := pacer.New(api, pacer.WithLimit(pacer.Limit{Count: c.PacerCount(), Per: c.PacerPer}), pacer.WithHeadroom(c.Headroom))
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for _, a := range arrivals {
			// Start the requests in arrival order, each once the one before
			// is admitted or queued, so that requests arriving at the same
			// instant queue in the order the simulation gives them.
			time.Sleep(time.Until(start.Add(a.At)))
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
				if resp, err := tr.RoundTrip(req); err == nil {
					resp.Body.Close()
				}
			})
			synctest.Wait()
		}
		time.Sleep(time.Until(start.Add(c.Duration)))
		cancel()
		wg.Wait()
		sent = api.sentBefore(c.Duration)
	})
	return sent
}

// recordingAPI answers every request at once and records when it came.
type recordingAPI struct {
	start time.Time
	mu    sync.Mutex
	sent  []time.Duration
}

func (a *recordingAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	a.mu.Lock()
	a.sent = append(a.sent, time.Since(a.start))
	a.mu.Unlock()
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
}

func (a *recordingAPI) sentBefore(end time.Duration) []time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := slices.DeleteFunc(slices.Clone(a.sent), func(s time.Duration) bool { return s >= end })
	slices.Sort(out)
	return out
}

func TestMeasurePace(t *testing.T) {
	for _, tc := range []struct {
		refill   float64
		per      time.Duration
		headroom float64
		rate     float64
		burst    int
	}{
		// Rate: headroom × count / per. Burst: (1 − headroom) × count,
		// rounded down, at least 1.
		{50, time.Second, 0.9, 45, 5},
		{50, 10 * time.Second, 0.9, 45, 50},
		{10, time.Second, 0.5, 5, 5},
		{1, time.Minute, 0.9, 0.9, 6},
		{3, time.Second, 0.9, 2.7, 1},
		{3, time.Second, 1, 3, 1},
		// An absurd refill saturates the count at MaxInt32, and measuring
		// a burst of 214748364 still takes one request.
		{1e300, time.Second, 0.9, 0.9 * math.MaxInt32, math.MaxInt32 / 10},
	} {
		c := Default()
		c.Refill, c.PacerPer, c.Headroom = tc.refill, tc.per, tc.headroom
		p, err := MeasurePace(c)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(p.Rate-tc.rate) > 1e-9*tc.rate || p.Burst != tc.burst {
			t.Errorf("%v/s over %v at %v: pace %v/s burst %d, want %v/s burst %d", tc.refill, tc.per, tc.headroom, p.Rate, p.Burst, tc.rate, tc.burst)
		}
	}
}
