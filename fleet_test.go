package pacer

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/store"
)

// fleetStore is a store.Memory shared by the Transports of a fleet in one
// test: wrapped, so that each takes it for a shared store, as it would
// redisstore or pgstore, not for its own in-memory one.
type fleetStore struct{ *store.Memory }

func (fleetStore) HonoursContext() bool { return true }

// member is one process of a fleet: what it sent and what it learned.
type member struct {
	next               http.RoundTripper
	accepted, rejected atomic.Int64

	mu     sync.Mutex
	cuts   int     // pace changes of its own, after a refusal
	synced int     // pace changes it read from the store
	lowest float64 // the lowest pace a change left it at
	events []Event // every pace change
	times  []string
	start  time.Time
}

func (m *member) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := m.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		m.rejected.Add(1)
	} else if err == nil {
		m.accepted.Add(1)
	}
	return resp, err
}

func (m *member) Observe(e Event) {
	if e.Kind != EventPaceChanged {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case e.Origin == OriginStore:
		m.synced++
	case strings.Contains(e.Why, "refused"):
		m.cuts++
	}
	if m.lowest == 0 || e.Rate < m.lowest {
		m.lowest = e.Rate
	}
	m.events = append(m.events, e)
	if m.start.IsZero() {
		m.start = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	}
	m.times = append(m.times, fmt.Sprintf("%v %s %.1f %q", time.Since(m.start), e.Origin, e.Rate, e.Why))
}

// fleetResult is what a fleet did behind one server.
type fleetResult struct {
	accepted, rejected int // from the server's view, over the whole run
	steady             int // accepted after the warm-up
	members            []*member
}

// runFleet runs n Transports, each with callers goroutines, configured at
// told a second and sharing one store (with limit sync every every, if
// positive), behind api for d, and returns what the server saw.
func runFleet(t *testing.T, api *limitedAPI, n, callers int, told int, every time.Duration, warmUp, d time.Duration) fleetResult {
	t.Helper()
	shared := fleetStore{store.NewMemory()}
	res := fleetResult{}
	var trs []*Transport
	for range n {
		m := &member{next: &wire{next: api}}
		opts := []Option{WithLimit(PerSecond(told)), WithoutRetry(), WithStore(shared), WithObserver(m)}
		if every > 0 {
			opts = append(opts, WithLimitSync(every))
		}
		tr := New(m, opts...)
		if err := tr.Err(); err != nil {
			t.Fatal(err)
		}
		res.members = append(res.members, m)
		trs = append(trs, tr)
	}
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for _, tr := range trs {
		wg.Go(func() { hammer(tr, callers, end) })
	}
	wg.Wait()
	res.accepted, res.rejected = len(api.accepted), len(api.rejected)
	res.steady = between(api.accepted, start.Add(warmUp), end)
	return res
}

func (r fleetResult) log(t *testing.T, what string, ceiling float64) {
	t.Helper()
	t.Logf("%s: %d accepted (%.3f of the ceiling after warm-up), %d 429s", what, r.accepted, float64(r.steady)/ceiling, r.rejected)
	for i, m := range r.members {
		m.mu.Lock()
		t.Logf("  process %d: %d accepted, %d 429s, %d cuts of its own, %d from the store, lowest pace %.2f/s", i, m.accepted.Load(), m.rejected.Load(), m.cuts, m.synced, m.lowest)
		m.mu.Unlock()
	}
}

// A fleet of four sharing one bucket, told twice the server's limit,
// behind a limiter that answers bare 429s (nginx's limit_req): each
// process sends about a quarter of what the server accepts, so the calls
// it saw accepted measured a quarter of the capacity. Each cut four times
// too deep, down to 0.3 a second, and carried that pace into the shared
// bucket in its demands, which slowed the whole fleet: 0.85–0.93 of the
// ceiling over two minutes. A cut measures the share of its calls the
// server accepted, at the bucket's pace.
func TestFleetCutMeasuresTheServersCapacity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		api := &limitedAPI{limit: 50, burst: 10, mode: "bare-429"}
		r := runFleet(t, api, 4, 8, 100, 0, 5*time.Second, 120*time.Second)
		r.log(t, "4 processes", 50*115)
		if got := float64(r.steady) / (50 * 115); got < 0.95 {
			t.Errorf("the fleet had %.3f of the ceiling after warm-up, want at least 0.95", got)
		}
		for i, m := range r.members {
			if m.lowest < 25 {
				t.Errorf("process %d cut its pace to %.2f a second, want at least half the server's 50", i, m.lowest)
			}
		}
	})
}
