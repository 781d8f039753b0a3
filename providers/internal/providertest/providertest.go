// Package providertest has what the provider presets' tests share: a fake
// provider that runs in memory, and checks of what reached it.
package providertest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A Fake is an in-memory provider: an http.RoundTripper that records every
// request that reaches it and answers with Respond (200 "{}" when nil). It
// reads time with time.Now, so inside a testing/synctest bubble it records
// virtual time.
type Fake struct {
	Respond func(req *http.Request, body []byte) *http.Response

	mu   sync.Mutex
	sent []Sent
}

// Sent is one request as the fake provider saw it.
type Sent struct {
	At     time.Time
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// RoundTrip records req and answers it.
func (f *Fake) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
	}
	f.mu.Lock()
	f.sent = append(f.sent, Sent{time.Now(), req.Method, req.URL.Path, req.Header.Clone(), body})
	f.mu.Unlock()
	if f.Respond != nil {
		if resp := f.Respond(req, body); resp != nil {
			resp.Request = req
			return resp, nil
		}
	}
	return Response(req, http.StatusOK, nil, "{}"), nil
}

// Requests returns what reached the fake so far, in arrival order.
func (f *Fake) Requests() []Sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent)
}

// Response builds a response with the given status, headers (pairs of name
// and value) and body.
func Response(req *http.Request, status int, header []string, body string) *http.Response {
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Add(header[i], header[i+1])
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: req}
}

// MostInWindow returns the largest number of the given times, weighted by
// cost (nil: one each), that fall in any half-open window [t, t+per). It is
// what a provider counting in a sliding window of length per would see.
func MostInWindow(times []time.Time, cost []int64, per time.Duration) int64 {
	type event struct {
		at   time.Time
		cost int64
	}
	events := make([]event, len(times))
	for i, t := range times {
		events[i] = event{t, 1}
		if cost != nil {
			events[i].cost = cost[i]
		}
	}
	slices.SortFunc(events, func(a, b event) int { return a.at.Compare(b.at) })
	var most, sum int64
	start := 0
	for _, e := range events {
		sum += e.cost
		for !events[start].at.After(e.at.Add(-per)) {
			sum -= events[start].cost
			start++
		}
		most = max(most, sum)
	}
	return most
}

// Times returns the arrival times of the requests that match keep.
func Times(sent []Sent, keep func(Sent) bool) []time.Time {
	var ts []time.Time
	for _, s := range sent {
		if keep(s) {
			ts = append(ts, s.At)
		}
	}
	return ts
}

// Do sends req through c and, when it succeeds, reads the response's body to
// its end and closes it, as a caller done with the response does: that is
// what gives back a concurrency slot.
func Do(c *http.Client, req *http.Request) (*http.Response, error) {
	resp, err := c.Do(req)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

// Gap sends the requests next makes, one after another, through c, and
// returns how long after the first the second was answered: how long the
// Transport held it back. A call that fails or is not answered 200 is
// returned as an error, with the status.
func Gap(c *http.Client, next func() *http.Request) (time.Duration, error) {
	var at [2]time.Time
	for i := range at {
		resp, err := Do(c, next())
		if err != nil {
			return 0, err
		}
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("call %d answered %s", i+1, resp.Status)
		}
		at[i] = time.Now()
	}
	return at[1].Sub(at[0]), nil
}

// A Peak counts the calls in flight at a fake provider, and keeps the most
// there were at once.
type Peak struct{ now, most atomic.Int64 }

// Enter counts a call arriving.
func (p *Peak) Enter() {
	n := p.now.Add(1)
	for m := p.most.Load(); n > m && !p.most.CompareAndSwap(m, n); m = p.most.Load() {
	}
}

// Leave counts a call answered.
func (p *Peak) Leave() { p.now.Add(-1) }

// Most returns the most calls that were in flight at once.
func (p *Peak) Most() int64 { return p.most.Load() }

// Drive runs workers goroutines against c for d of (virtual) time, each
// sending the requests next makes, one after another, until d has passed;
// a call still waiting then is abandoned through its context. A worker
// whose call fails without a response (pacer refuses a wait that would
// outlast the context, say) counts it under status 0 and stops, rather
// than spin without time passing. It returns the statuses the callers saw,
// by code.
func Drive(c *http.Client, workers int, d time.Duration, next func(worker, n int) *http.Request) map[int]int {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				req := next(w, n).WithContext(ctx)
				resp, err := Do(c, req)
				if ctx.Err() != nil {
					return
				}
				code := 0
				if err == nil {
					code = resp.StatusCode
				}
				mu.Lock()
				statuses[code]++
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return statuses
}

// Today moves a synctest bubble's clock, which starts at midnight UTC on
// 2000-01-01, to 2026-12-01: a provider's reset given in Unix seconds of
// the year 2000 is below what pacer takes for a timestamp (it would read
// it as a delay of 30 years), and real resets are of today.
func Today() {
	time.Sleep(time.Until(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)))
}
