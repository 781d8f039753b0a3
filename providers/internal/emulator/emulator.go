// Package emulator has what the provider emulators share: the windows and
// buckets they count in, a transport that serves a handler in process (so
// that a testing/synctest bubble holds the whole exchange and runs in
// virtual time), and a tally of what the emulator accepted and refused.
//
// Each provider's emulator lives in a package of its own beside this one and
// carries its own figures, as the provider documents them, with the quote:
// the tests run a preset against it, so a preset figure that disagrees with
// the documentation shows up as refusals (too high) or as a shortfall of
// throughput (too low).
package emulator

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"time"
)

// Transport returns a RoundTripper that serves every request with h in the
// caller's goroutine, with no network in between. The request's body is
// read whole first, as a server would.
func Transport(h http.Handler) http.RoundTripper {
	return roundTripper{h}
}

type roundTripper struct{ h http.Handler }

func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	in := req.Clone(req.Context())
	in.Body = io.NopCloser(bytes.NewReader(body))
	in.RequestURI = req.URL.RequestURI()
	if in.Host == "" {
		in.Host = req.URL.Host
	}
	rec := httptest.NewRecorder()
	rt.h.ServeHTTP(rec, in)
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}

// Server starts an httptest.Server that serves h, for use outside a
// synctest bubble (a real network listener does not run in virtual time).
func Server(h http.Handler) *httptest.Server { return httptest.NewServer(h) }

// A Window counts events in a sliding window: at most Limit in any span of
// length Per. It is the strictest reading of "N per period", so a preset
// that passes it passes a fixed window or a token bucket of the same
// figures too.
type Window struct {
	Limit int
	Per   time.Duration
	at    []time.Time
}

// Allow records an event of cost n at now when the window has room for it,
// and reports whether it had.
func (w *Window) Allow(now time.Time, n int) bool {
	cut := now.Add(-w.Per)
	i := sort.Search(len(w.at), func(i int) bool { return w.at[i].After(cut) })
	w.at = w.at[i:]
	if len(w.at)+n > w.Limit {
		return false
	}
	for range n {
		w.at = append(w.at, now)
	}
	return true
}

// Until returns how long after now the window has room for one more event:
// zero when it has room at now. A provider's Retry-After says as much.
func (w *Window) Until(now time.Time) time.Duration {
	cut := now.Add(-w.Per)
	i := sort.Search(len(w.at), func(i int) bool { return w.at[i].After(cut) })
	if n := len(w.at) - i; n >= w.Limit && w.Limit > 0 {
		return w.at[len(w.at)-w.Limit].Add(w.Per).Sub(now)
	}
	return 0
}

// Remaining returns the room left in the window at now.
func (w *Window) Remaining(now time.Time) int {
	cut := now.Add(-w.Per)
	n := 0
	for _, t := range w.at {
		if t.After(cut) {
			n++
		}
	}
	return max(w.Limit-n, 0)
}

// A Bucket is a token bucket that holds at most Capacity and refills at
// Capacity per Per, continuously. Its level may go below zero when usage
// is settled after the fact (output tokens counted as produced).
type Bucket struct {
	Capacity float64
	Per      time.Duration
	level    float64
	last     time.Time
	started  bool
}

func (b *Bucket) refill(now time.Time) {
	if !b.started {
		b.level, b.last, b.started = b.Capacity, now, true
		return
	}
	b.level = min(b.Capacity, b.level+now.Sub(b.last).Seconds()*b.Capacity/b.Per.Seconds())
	b.last = now
}

// Level returns what the bucket holds at now.
func (b *Bucket) Level(now time.Time) float64 {
	b.refill(now)
	return b.level
}

// Take removes n at now when the bucket holds at least n, and reports
// whether it did.
func (b *Bucket) Take(now time.Time, n float64) bool {
	b.refill(now)
	if b.level < n {
		return false
	}
	b.level -= n
	return true
}

// Spend removes n at now whatever the bucket holds.
func (b *Bucket) Spend(now time.Time, n float64) {
	b.refill(now)
	b.level -= n
}

// Until returns how long until the bucket holds n, zero when it does.
func (b *Bucket) Until(now time.Time, n float64) time.Duration {
	missing := n - b.Level(now)
	if missing <= 0 {
		return 0
	}
	return time.Duration(missing / b.Capacity * float64(b.Per))
}

// UntilFull returns how long until the bucket is full again.
func (b *Bucket) UntilFull(now time.Time) time.Duration {
	b.refill(now)
	return time.Duration((b.Capacity - b.level) / b.Capacity * float64(b.Per))
}

// A Tally counts what an emulator accepted and refused, by name: the
// endpoint or key served, and the limit that refused.
type Tally struct {
	mu       sync.Mutex
	accepted map[string]int
	units    map[string]int64
	refused  map[string]int
}

// Accept counts a request served under key, of cost units.
func (t *Tally) Accept(key string, units int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.accepted == nil {
		t.accepted, t.units = map[string]int{}, map[string]int64{}
	}
	t.accepted[key]++
	t.units[key] += units
}

// Refuse counts a request refused by the named limit.
func (t *Tally) Refuse(limit string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.refused == nil {
		t.refused = map[string]int{}
	}
	t.refused[limit]++
}

// Accepted returns the requests served under key.
func (t *Tally) Accepted(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.accepted[key]
}

// Units returns the units served under key.
func (t *Tally) Units(key string) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.units[key]
}

// Total returns every request served.
func (t *Tally) Total() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, c := range t.accepted {
		n += c
	}
	return n
}

// Refused returns the refusals, by limit.
func (t *Tally) Refused() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]int, len(t.refused))
	for k, v := range t.refused {
		out[k] = v
	}
	return out
}
