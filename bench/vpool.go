package bench

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/store/memory"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/pool"
)

// The pool bench: one pacer Transport with a pool of keys (pacer.WithPool)
// in front of a server that limits each key with its own real third-party
// limiter (GoLimiter's families), and, for a shared quota, all of them
// together with one more limiter of the same family above them, as an
// OpenAI project limits its keys or a Twilio account its senders. It runs
// in virtual time, over VNetwork's wires, and is scored from outside: what
// the server accepted and refused for each key.

// A PoolSetup is what the pool's keys are and what pacer is told of them.
type PoolSetup struct {
	Name string
	// Limits are the keys' own limits, calls a second.
	Limits []int
	// Shared, when positive, is a limit above every key, calls a second.
	Shared int
	// Headroom, when positive, is pacer's WithHeadroom.
	Headroom float64
	// Learned: pacer is told only a stand-in (the lowest limit, as a
	// Provisional scope of which every key is a key) and learns each key's
	// limit from its answers' headers. Otherwise each member has a scope
	// of its own at its key's limit.
	Learned bool
}

// PoolSetups are the pool bench's setups.
var PoolSetups = []PoolSetup{
	{Name: "3 keys, limits known", Limits: []int{30, 50, 70}},
	{Name: "3 keys, limits learned", Limits: []int{30, 50, 70}, Learned: true},
	{Name: "3 keys under a shared quota", Limits: []int{60, 60, 60}, Shared: 100},
	{Name: "3 keys under a shared quota, headroom 0.97", Limits: []int{60, 60, 60}, Shared: 100, Headroom: 0.97},
}

// A PoolCell is one run: a family's limiter per key, a network, a setup.
type PoolCell struct {
	Kind     Kind
	Family   string
	Net      VNetwork
	Setup    PoolSetup
	Duration time.Duration
}

// Name is the cell's family, network and setup.
func (c PoolCell) Name() string { return c.Family + ", " + c.Net.Name + ", " + c.Setup.Name }

// PoolCells are the pool bench's cells, d each: the three Go families ×
// loopback and the round trip × every setup. A token bucket's published
// limit is its capacity, not a rate (GoLimiter's GCRA), so its keys are
// not learned.
func PoolCells(d time.Duration) []PoolCell {
	kinds := []struct {
		k    Kind
		name string
	}{{Sliding, "sliding window"}, {Fixed, "fixed window"}, {GCRA, "token bucket (GCRA)"}}
	var out []PoolCell
	for _, k := range kinds {
		for _, n := range []VNetwork{VLoopback, VRoundTrip} {
			for _, s := range PoolSetups {
				if s.Learned && k.k == GCRA {
					continue
				}
				out = append(out, PoolCell{Kind: k.k, Family: k.name, Net: n, Setup: s, Duration: d})
			}
		}
	}
	return out
}

// limiter returns the cell's family's limiter at limit a second around h.
func (c PoolCell) limiter(limit int, h http.Handler) (http.Handler, error) {
	l := GoLimiter{Kind: c.Kind, Limit: limit, Window: time.Second, RetryAfter: true}
	if c.Kind == GCRA {
		l.Burst = max(limit/10, 1)
	}
	// No cleaner: its ticker would outlive the bubble.
	return l.handlerOver(h, memory.NewStoreWithOptions(limiter.StoreOptions{Prefix: limiter.DefaultPrefix}))
}

// A PoolResult is what the server saw of one cell, from SteadyFrom to the
// end of the run (answers to calls in flight at the end are not counted).
type PoolResult struct {
	Cell PoolCell
	// By key, in the setup's order: the calls accepted and refused (429).
	Accepted, Refused []int64
	// Ceiling is the most the server could accept in that time at its
	// steady rate: the sum of the keys' limits, or the shared limit when
	// lower (a bucket's burst, spent in the first seconds, is left out).
	Ceiling float64
}

// Goodput is the accepted calls as a share of the ceiling.
func (r PoolResult) Goodput() float64 { return float64(sum(r.Accepted)) / r.Ceiling }

// RefusedPerAccepted is the 429s over the accepted calls.
func (r PoolResult) RefusedPerAccepted() float64 {
	return float64(sum(r.Refused)) / float64(max(sum(r.Accepted), 1))
}

func sum(xs []int64) (n int64) {
	for _, x := range xs {
		n += x
	}
	return n
}

// poolServer answers each key through its own limiter, under the shared
// one when there is one, and counts what it accepted and refused for each
// key from a time on.
type poolServer struct {
	from, to time.Time // what it counts: the calls it answers in [from, to)
	byKey    map[string]http.Handler
	index    map[string]int
	root     http.Handler // the shared limiter around byKey's, or byKey's alone (dispatch)

	mu                 sync.Mutex
	accepted, refused  []int64
	unknown, otherwise int64
}

// dispatch hands a call to its key's limiter. Under a shared limiter that
// let it through, the key's limiter's headers replace the shared ones.
func (s *poolServer) dispatch(w http.ResponseWriter, r *http.Request) {
	for _, name := range []string{"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset"} {
		w.Header().Del(name)
	}
	s.byKey[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")].ServeHTTP(w, r)
}

func (s *poolServer) RoundTrip(req *http.Request) (*http.Response, error) {
	key := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	if _, ok := s.byKey[key]; !ok {
		s.mu.Lock()
		s.unknown++
		s.mu.Unlock()
		return &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
	}
	resp, err := inProcess{s.root}.RoundTrip(req)
	if now := time.Now(); err != nil || now.Before(s.from) || !now.Before(s.to) {
		return resp, err
	}
	s.mu.Lock()
	switch i := s.index[key]; resp.StatusCode {
	case http.StatusOK:
		s.accepted[i]++
	case http.StatusTooManyRequests:
		s.refused[i]++
	default:
		s.otherwise++
	}
	s.mu.Unlock()
	return resp, nil
}

// RunPool runs c, inside the synctest bubble it is called in.
func RunPool(c PoolCell) (PoolResult, error) {
	time.Sleep(time.Until(vStart))
	start := time.Now()
	srv := &poolServer{from: start.Add(SteadyFrom), to: start.Add(c.Duration), byKey: map[string]http.Handler{}, index: map[string]int{},
		accepted: make([]int64, len(c.Setup.Limits)), refused: make([]int64, len(c.Setup.Limits))}
	srv.root = http.HandlerFunc(srv.dispatch)
	opts := []pacer.Option{pacer.WithLogger(slog.New(slog.DiscardHandler)), pacer.WithMaxWait(c.Duration)}
	cfg := pool.Config{}
	if c.Setup.Headroom > 0 {
		opts = append(opts, pacer.WithHeadroom(c.Setup.Headroom))
	}
	if c.Setup.Learned {
		opts = append(opts, pacer.WithScope(pacer.Scope{Name: "key", Limit: pacer.PerSecond(minInt(c.Setup.Limits)), Provisional: true}))
		cfg.Scopes = []string{"key"}
	}
	ceiling := 0.0
	for i, limit := range c.Setup.Limits {
		name, cred := fmt.Sprintf("key-%d", i+1), fmt.Sprintf("sk-%d", i+1)
		h, err := c.limiter(limit, okHandler)
		if err != nil {
			return PoolResult{}, err
		}
		srv.byKey[cred], srv.index[cred] = h, i
		m := pool.Member{Name: name, Apply: pool.Bearer(cred)}
		if !c.Setup.Learned {
			opts = append(opts, pacer.WithScope(pacer.Scope{Name: name, Limit: pacer.PerSecond(limit)}))
			m.Scopes = []string{name}
		}
		cfg.Members = append(cfg.Members, m)
		ceiling += float64(limit)
	}
	if c.Setup.Shared > 0 {
		h, err := c.limiter(c.Setup.Shared, srv.root)
		if err != nil {
			return PoolResult{}, err
		}
		srv.root = h
		opts = append(opts, pacer.WithScope(pacer.Scope{Name: "shared", Limit: pacer.PerSecond(c.Setup.Shared)}))
		cfg.SharedQuota = []string{"shared"}
		ceiling = min(ceiling, float64(c.Setup.Shared))
	}
	tr := pacer.New(c.Net.wire(seedOf(c.Name()), srv), append(opts, pacer.WithPool(cfg))...)
	if err := tr.Err(); err != nil {
		return PoolResult{}, err
	}
	end := start.Add(c.Duration)
	var wg sync.WaitGroup
	for range c.Net.Goroutines {
		wg.Go(func() {
			for time.Now().Before(end) {
				req, _ := http.NewRequest(http.MethodGet, "http://api.test"+PathLimit, nil)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					time.Sleep(time.Millisecond)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	if srv.unknown != 0 {
		return PoolResult{}, fmt.Errorf("%d calls reached the server with no key of the pool", srv.unknown)
	}
	return PoolResult{Cell: c, Accepted: srv.accepted, Refused: srv.refused,
		Ceiling: ceiling * (c.Duration - SteadyFrom).Seconds()}, nil
}

func minInt(xs []int) int {
	m := xs[0]
	for _, x := range xs[1:] {
		m = min(m, x)
	}
	return m
}

// WritePool writes rs as one table, a row a cell.
func WritePool(w io.Writer, rs []PoolResult) {
	fmt.Fprintln(w, "| family | network | setup | goodput | 429s per accepted | accepted by key |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, r := range rs {
		fmt.Fprintf(w, "| %s | %s | %s | %.3f | %.4f | %v |\n", r.Cell.Family, r.Cell.Net.Name, r.Cell.Setup.Name,
			r.Goodput(), r.RefusedPerAccepted(), r.Accepted)
	}
}
