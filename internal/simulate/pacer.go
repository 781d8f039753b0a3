package simulate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/store"
)

// RunPacer offers the arrivals to a real pacer.Transport, told of the limit
// Refill × PacerPer per PacerPer at Headroom, and tallies when each request
// went out. Pacer makes a request wait for its token rather than reject it,
// so Rejected stays 0 and the Queue stats say what the waiting cost.
//
// Why this is faithful and still deterministic: a waiting RoundTrip blocks
// its goroutine until a timer fires, and a simulation that let goroutines
// race would not give the same numbers twice. So the Transport here fails
// fast (pacer.WithFailFast) and the simulation does the waiting: it keeps
// pacer's wait queue itself — first come, first served, one workload — and
// has only the request at its head ask the Transport again when the
// Transport's ThrottledError says its token will be there. That is what a
// waiting Transport does (see wait in admission.go): only the head of a
// scope's queue tries for admission, waking when the store's wait is over,
// and a new call queues behind anyone already waiting. The tokens, the pace,
// the burst and the rounding are pacer's own code on a virtual clock. A test
// runs the waiting Transport in a synctest bubble on the same traffic and
// checks that it sends at the same instants.
func RunPacer(c Config, arrivals []Arrival) (Result, error) {
	sent, err := pacerSends(c, arrivals)
	if err != nil {
		return Result{}, err
	}
	t := newTally("pacer", c)
	var delays []time.Duration
	for i, a := range arrivals {
		t.offered(a)
		if sent[i] == notSent {
			t.Clients[a.Client].Queued++
			continue
		}
		t.allowed(a, sent[i])
		delays = append(delays, sent[i]-a.At)
	}
	slices.Sort(delays)
	t.Queue = &QueueStats{
		DelayP50:    nearestRank(delays, 0.50),
		DelayP99:    nearestRank(delays, 0.99),
		DelayMax:    nearestRank(delays, 1),
		QueuedAtEnd: t.Offered - t.Allowed,
	}
	t.Level = queueLevel(c, arrivals, sent)
	return t.done(), nil
}

// A Pace is the rate and burst pacer uses for the run's limit.
type Pace struct {
	Limit pacer.Limit // what pacer is told the provider publishes
	Rate  float64     // requests a second, after headroom
	Burst int         // requests it sends back to back from a full bucket
}

// MeasurePace returns the pace a pacer.Transport keeps for c's limit. It
// asks a real Transport rather than repeating its formula: the Transport
// states the rate and burst of every bucket it takes from in the Demand it
// gives its Store, so one request through a Transport whose store listens
// tells both.
func MeasurePace(c Config) (Pace, error) {
	p := Pace{Limit: pacer.Limit{Count: c.PacerCount(), Per: c.PacerPer}}
	listener := &listeningStore{Store: store.NewMemory()}
	tr := pacer.New(sentOK{}, pacer.WithLimit(p.Limit), pacer.WithHeadroom(c.Headroom), pacer.WithStore(listener, store.Policy{}), clock.With[pacer.Option](newVirtualClock()))
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://api.simulated/", nil)
	if err != nil {
		return p, err
	}
	if _, err := admit(tr, req); err != nil {
		return p, err
	}
	if len(listener.demands) != 1 {
		return p, fmt.Errorf("simulating pacer: a request took from %d buckets, want 1", len(listener.demands))
	}
	p.Rate, p.Burst = listener.demands[0].Rate, int(listener.demands[0].Burst)
	return p, nil
}

// listeningStore is a Store that remembers the demands of the last Take.
type listeningStore struct {
	store.Store
	demands []store.Demand
}

func (s *listeningStore) Take(ctx context.Context, now time.Time, demands []store.Demand) (store.Decision, error) {
	s.demands = append(s.demands[:0], demands...)
	return s.Store.Take(ctx, now, demands)
}

// newFailFastTransport returns a Transport told of c's limit that sends to
// an API answering at once, on clock, and the request to send through it.
func newFailFastTransport(c Config, clk virtualClock) (*pacer.Transport, *http.Request, error) {
	limit := pacer.Limit{Count: c.PacerCount(), Per: c.PacerPer}
	tr := pacer.New(sentOK{}, pacer.WithLimit(limit), pacer.WithHeadroom(c.Headroom), pacer.WithFailFast(), clock.With[pacer.Option](clk))
	if err := tr.Err(); err != nil {
		return nil, nil, err
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://api.simulated/", nil)
	return tr, req, err
}

// admit asks a fail-fast Transport to send req now. It returns 0 if it was
// sent, or how long until it may be.
func admit(tr *pacer.Transport, req *http.Request) (time.Duration, error) {
	resp, err := tr.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
		return 0, nil
	}
	var throttled *pacer.ThrottledError
	if !errors.As(err, &throttled) || throttled.RetryAfter <= 0 {
		return 0, fmt.Errorf("simulating pacer: %w", err)
	}
	return throttled.RetryAfter, nil
}

// notSent marks a request still waiting when the run ended.
const notSent time.Duration = -1

// pacerSends returns when pacer sent each arrival, or notSent.
func pacerSends(c Config, arrivals []Arrival) ([]time.Duration, error) {
	clock := newVirtualClock()
	tr, req, err := newFailFastTransport(c, clock)
	if err != nil {
		return nil, err
	}

	sent := make([]time.Duration, len(arrivals))
	for i := range sent {
		sent[i] = notSent
	}
	var queue []int         // indices into arrivals, in the order they will be sent
	var retry time.Duration // when the head of the queue asks again
	next := 0               // the next arrival
	for {
		now := c.Duration // the run ends before the next event
		headFirst := len(queue) > 0 && retry < c.Duration
		if headFirst {
			now = retry
		}
		// At the same instant, the head goes before a new arrival: it was
		// there first, and pacer queues a newcomer behind any waiter.
		if next < len(arrivals) && arrivals[next].At < now {
			now, headFirst = arrivals[next].At, false
		}
		if now >= c.Duration {
			return sent, nil
		}
		clock.advanceTo(now)
		if !headFirst {
			queue = append(queue, next)
			next++
			if len(queue) > 1 {
				continue // it waits its turn
			}
		}
		for len(queue) > 0 {
			wait, err := admit(tr, req)
			if err != nil {
				return nil, err
			}
			if wait > 0 {
				retry = now + wait
				break
			}
			sent[queue[0]] = now
			queue = queue[1:]
		}
	}
}

// queueLevel samples the length of pacer's queue over the run: at each
// sample time t, the requests that arrived before t and were not sent
// before t.
func queueLevel(c Config, arrivals []Arrival, sent []time.Duration) Level {
	var sends []time.Duration
	for _, s := range sent {
		if s != notSent {
			sends = append(sends, s)
		}
	}
	slices.Sort(sends) // FIFO sends them in order already; this makes it a contract
	arrived, left := 0, 0
	samples := newSampler(c, Level{Label: "requests waiting in pacer's queue"})
	samples.upTo(c.Duration, func(t time.Duration) float64 {
		for arrived < len(arrivals) && arrivals[arrived].At < t {
			arrived++
		}
		for left < len(sends) && sends[left] < t {
			left++
		}
		return float64(arrived - left)
	})
	return samples.level
}

// sentOK is the API behind the simulated Transport: every request it is
// given succeeds at once, so only pacer decides when requests go out.
type sentOK struct{}

func (sentOK) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req, Header: http.Header{}}, nil
}
