package bench

import (
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/store/memory"

	"github.com/pacer-go/pacer"
)

// The virtual matrix: the wall-clock matrix's families, situations and
// networks for pacer alone, in virtual time (testing/synctest), so that a
// change to the controller is judged in seconds, the same way every run.
//
// The servers are the libraries' own handlers (GoLimiter.handler), called
// in process through an httptest.ResponseRecorder: inside a bubble
// time.Now is the bubble's clock, so httprate, ulule and throttled count
// in virtual time. None of their stores starts a goroutine (ulule's memory
// store is made without its cleaner, whose ticker would keep the bubble
// alive). nginx's limit_req and limit_conn are models of its code
// (leakyBucket, connCap). Every answer carries a Date header, as net/http
// and nginx add one.

// A VNetwork is a network in virtual time: each call's delay before the
// server sees it and before its caller sees the answer, drawn from a hash
// of the call, and the callers that keep calls in flight
// (Network.Goroutines). Network.Delay is the fixed part each way, which
// the ceiling's window leaves out (Network.window).
type VNetwork struct {
	Network
	ways func(x uint64) (out, back time.Duration)
}

// The virtual matrix's networks.
var (
	// VLoopback: a call reaches the server up to 900 µs after it is sent
	// and is answered 1–1.1 ms after it was sent, so calls sent together
	// are counted in another order than they were sent in (as quota_test's
	// wire in the root package does).
	VLoopback = VNetwork{Network{Name: "loopback", Goroutines: 16}, loopbackWays}
	// VRoundTrip: 100 ms + U(0, 100 ms) each way, so round trips of
	// 200–400 ms and answers out of order; 64 callers.
	VRoundTrip = VNetwork{Network{Name: "rtt 200–400 ms", Delay: 100 * time.Millisecond, Jitter: 100 * time.Millisecond, Goroutines: 64}, rttWays}
	// VBusy: loopback, but each answer reaches its caller up to 30 ms
	// later (uniform), as on a loaded host whose goroutines run late.
	VBusy = VNetwork{Network{Name: "busy", Goroutines: 16}, busyWays}
)

// VNetworks are the virtual matrix's networks, in its order.
var VNetworks = []VNetwork{VLoopback, VRoundTrip, VBusy}

// uniform maps x onto [0, d].
func uniform(x uint64, d time.Duration) time.Duration { return time.Duration(x % uint64(d+1)) }

func loopbackWays(x uint64) (out, back time.Duration) {
	out = uniform(x, 900*time.Microsecond)
	return out, time.Millisecond - out + uniform(mix(x), 100*time.Microsecond)
}

func rttWays(x uint64) (out, back time.Duration) {
	return 100*time.Millisecond + uniform(x, 100*time.Millisecond), 100*time.Millisecond + uniform(mix(x), 100*time.Millisecond)
}

func busyWays(x uint64) (out, back time.Duration) {
	out, back = loopbackWays(x)
	return out, back + uniform(mix(mix(x)), 30*time.Millisecond)
}

// mix is splitmix64's finalizer.
func mix(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ x>>30) * 0xBF58476D1CE4E5B9
	x = (x ^ x>>27) * 0x94D049BB133111EB
	return x ^ x>>31
}

// draws hands each call a hash of the seed, the instant it is sent and its
// rank among the calls sent at that instant. Goroutines woken together run
// in no fixed order, but the calls sent at one instant are alike: whichever
// gets which draw, the instant's draws are the same from run to run.
type draws struct {
	seed uint64
	mu   sync.Mutex
	at   time.Time
	rank uint64
}

func (d *draws) next() uint64 {
	now := time.Now()
	d.mu.Lock()
	if !now.Equal(d.at) {
		d.at, d.rank = now, 0
	}
	d.rank++
	r := d.rank
	d.mu.Unlock()
	return mix(d.seed ^ mix(uint64(now.UnixNano())) ^ r*0x9E3779B97F4A7C15)
}

// wire is n below a caller, over server, with the draws of seed.
func (n VNetwork) wire(seed uint64, server http.RoundTripper) http.RoundTripper {
	d := &draws{seed: seed}
	return delayed{func() (time.Duration, time.Duration) { return n.ways(d.next()) }, server}
}

// inProcess calls its handler with a ResponseRecorder, the Date header set
// as a server's: a server without a listener, in the caller's time.
type inProcess struct{ h http.Handler }

func (p inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	rec.Header().Set("Date", time.Now().UTC().Format(http.TimeFormat))
	p.h.ServeHTTP(rec, req)
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}

// okHandler is the servers' answer to a call they let through.
var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	w.Write([]byte("ok\n"))
})

// leakyBucket is nginx's limit_req with nodelay, as
// ngx_http_limit_req_lookup computes it: in thousandths of a call and
// whole milliseconds, the excess drains at rate and each call adds one; a
// call that would take it past burst is refused (429, and Retry-After: 1
// when retryAfter, as /limit-ra's error_page adds) and not counted. No
// rate headers: nginx sends none.
type leakyBucket struct {
	rate, burst int64 // calls a second; calls beyond the rate
	retryAfter  bool

	mu     sync.Mutex
	seen   bool
	excess int64 // thousandths of a call
	last   int64 // ms
}

func (b *leakyBucket) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now().UnixMilli()
	b.mu.Lock()
	ok := true
	switch {
	case !b.seen:
		b.seen, b.excess, b.last = true, 0, now
	default:
		ms := max(now-b.last, 0)
		excess := max(b.excess-b.rate*1000*ms/1000+1000, 0)
		if excess > b.burst*1000 {
			ok = false
			break
		}
		b.excess = excess
		if ms != 0 {
			b.last = now
		}
	}
	b.mu.Unlock()
	if ok {
		okHandler(w, r)
		return
	}
	if b.retryAfter {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(http.StatusTooManyRequests)
}

// connCap is nginx's limit_conn: at most cap calls at once, each held for
// service from its arrival (bench/nginx.go's 64 KiB at 128 KiB/s, which
// lasts about a quarter of a second on loopback); a call over the cap is
// answered 503 at once. The answer to a call let through is returned
// when its service ends, so that the caller sees it whole then.
type connCap struct {
	cap     int
	service time.Duration

	mu   sync.Mutex
	ends []time.Time // of the calls being served
}

func (c *connCap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	c.mu.Lock()
	live := c.ends[:0]
	for _, e := range c.ends {
		if e.After(now) {
			live = append(live, e)
		}
	}
	c.ends = live
	full := len(c.ends) >= c.cap
	if !full {
		c.ends = append(c.ends, now.Add(c.service))
	}
	c.mu.Unlock()
	if full {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if sleepCtx(r.Context(), c.service) != nil {
		return // the caller gave up; its call still counts until its end
	}
	okHandler(w, r)
}

// connService is the length of one call to the concurrency cap.
const connService = 250 * time.Millisecond

// VFamilies are the virtual matrix's servers: Families, and limit_req's
// 429 with Retry-After: 1 beside its bare one.
var VFamilies = []Family{
	Families[0], Families[1], Families[2], Families[3],
	{Name: "leaky bucket, Retry-After", Library: "model of nginx limit_req 100 r/s burst=20 nodelay, 429 with Retry-After: 1", Nginx: &nginx100, Path: PathLimitRetryAfter},
	Families[4],
}

// server returns f's server, to be made inside the bubble it will run in.
func (f Family) server() (http.Handler, error) {
	switch {
	case f.Go != nil:
		// No cleaner: its ticker would outlive the run.
		return f.Go.handlerOver(okHandler, memory.NewStoreWithOptions(limiter.StoreOptions{Prefix: limiter.DefaultPrefix}))
	case f.Path == PathConn:
		return &connCap{cap: f.Nginx.Conn, service: connService}, nil
	default:
		return &leakyBucket{rate: int64(f.Nginx.Rate), burst: int64(f.Nginx.Burst), retryAfter: f.Path == PathLimitRetryAfter}, nil
	}
}

// rate is f's server's sustained rate, calls a second (for the cap, its
// calls in flight over one call's length), and capacity what it lets
// through at once from idle beyond it (Result.Ceiling).
func (f Family) rate() (rate, capacity float64) {
	switch {
	case f.Go != nil:
		return f.Go.Rate(), float64(f.Go.Capacity())
	case f.Path == PathConn:
		return float64(f.Nginx.Conn) / connService.Seconds(), 0
	default:
		return float64(f.Nginx.Rate), float64(f.Nginx.Burst)
	}
}

// A VCell is one cell of the virtual matrix.
type VCell struct {
	Family    Family
	Net       VNetwork
	Situation Situation
	Duration  time.Duration
	// Options are added to pacer's (an observer, say); AtEnd, when set, is
	// called with pacer's Transport once the run is over, still inside its
	// bubble.
	Options []pacer.Option
	AtEnd   func(*pacer.Transport)
	// Instead, when set, returns the client the cell runs in pacer's
	// place, over wire: an oracle that knows what pacer cannot (see
	// TestOracles). AtEnd is not called.
	Instead func(wire http.RoundTripper) http.RoundTripper
	// Draw picks the cell's draws of delay and jitter: 0, the cell's own
	// (the ratchets are held on it); another, a run of the same cell on
	// other draws, as VirtualMatrixDraws runs it.
	Draw int
}

// seed is the cell's seed of its draws (Draw).
func (c VCell) seed() uint64 {
	if c.Draw == 0 {
		return seedOf(c.Name())
	}
	return seedOf(fmt.Sprintf("%s #%d", c.Name(), c.Draw))
}

// Name is the cell's family, network and situation.
func (c VCell) Name() string {
	return c.Family.Name + ", " + c.Net.Name + ", " + c.Situation.Name
}

// VCells returns the virtual matrix's cells, d each: every family ×
// network × situation, or with short limit known and told 2× on loopback
// and over the round trip. The concurrency cap is left off the round trip:
// a client's slot spans the trip, the server's only its part of it, so no
// client held to the server's cap can fill it.
func VCells(short bool, d time.Duration) []VCell {
	nets, sits := VNetworks, Situations
	if short {
		nets, sits = []VNetwork{VLoopback, VRoundTrip}, Situations[:2]
	}
	var out []VCell
	for _, f := range VFamilies {
		for _, n := range nets {
			if f.Path == PathConn && n.Delay > 0 {
				continue
			}
			for _, s := range sits {
				out = append(out, VCell{Family: f, Net: n, Situation: s, Duration: d})
			}
		}
	}
	return out
}

// SteadyFrom is where a VResult's second score starts: past the first
// seconds, which a controller spends finding the server's limit.
const SteadyFrom = 2 * time.Second

// A VResult is one cell's run: Result scores it from the start as the
// wall-clock matrix does; Steady from SteadyFrom on.
type VResult struct {
	Result
	Cell   VCell
	Steady Score
}

// A Score is the calls accepted in part of a run (by when they were read
// whole), the refusals (429s and 503s, every attempt, by when they were
// answered) and the most the server could have accepted then.
type Score struct {
	Accepted, Refused int64
	Ceiling           float64
}

// Goodput is the accepted calls as a share of the ceiling.
func (s Score) Goodput() float64 { return float64(s.Accepted) / s.Ceiling }

// RefusedPerAccepted is the refusals over the accepted calls (their number
// when none was accepted).
func (s Score) RefusedPerAccepted() float64 { return float64(s.Refused) / float64(max(s.Accepted, 1)) }

// Score is r's score from the start.
func (r Result) Score() Score {
	return Score{Accepted: r.Accepted, Refused: r.Rejected(), Ceiling: r.Ceiling}
}

// NeighbourRefused is the neighbour's refusals over its calls answered.
func (r Result) NeighbourRefused() float64 {
	n := r.Neighbour
	return float64(n.TooMany+n.Unavailable) / float64(max(n.Accepted+n.TooMany+n.Unavailable, 1))
}

// VirtualMatrix runs each cell for pacer in a bubble of its own, as a
// subtest of t named by the cell, and returns the results in cells' order.
func VirtualMatrix(t *testing.T, cells []VCell) []VResult {
	out := make([]VResult, len(cells))
	for i, c := range cells {
		t.Run(c.Name(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r, err := runVirtual(c)
				if err != nil {
					t.Fatal(err)
				}
				out[i] = r
			})
		})
	}
	return out
}

// vStart is the virtual instant every cell starts at: in the present (a
// bubble starts in 2000, when resets in Unix seconds read as delays), 370
// ms past the second, so that no window starts with the run.
var vStart = time.Date(2026, 12, 1, 0, 0, 0, 370e6, time.UTC)

// refusalsAfter counts the refusals answered through it from a time on.
type refusalsAfter struct {
	next http.RoundTripper
	from time.Time
	n    atomic.Int64
}

func (c *refusalsAfter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err == nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) && !time.Now().Before(c.from) {
		c.n.Add(1)
	}
	return resp, err
}

// seedOf is a run's seed of its draws: the hash of its name, so that each
// cell's draws are its own and the same from run to run.
func seedOf(name string) uint64 {
	h := fnv.New64a()
	io.WriteString(h, name)
	return h.Sum64()
}

// runVirtual runs c, inside the bubble it is called in.
func runVirtual(c VCell) (VResult, error) {
	time.Sleep(time.Until(vStart))
	h, err := c.Family.server()
	if err != nil {
		return VResult{}, err
	}
	server := inProcess{h}
	seed := c.seed()
	start := time.Now()
	d := c.Duration
	steady := &refusalsAfter{next: c.Net.wire(seed, server), from: start.Add(SteadyFrom)}
	wire := &Wire{next: steady}

	rate, capacity := c.Family.rate()
	cfg := ClientConfig{Rate: int(rate) * c.Situation.Scale, MaxWait: d,
		Options: append([]pacer.Option{pacer.WithLogger(slog.New(slog.DiscardHandler))}, c.Options...)}
	if c.Family.Path == PathConn {
		cfg = ClientConfig{Conn: c.Family.Nginx.Conn * c.Situation.Scale, MaxWait: d, Options: cfg.Options}
	}
	var client *http.Client
	release := func() {}
	if c.Instead != nil {
		client = &http.Client{Transport: c.Instead(wire)}
	} else {
		client, release, err = NewClient(Pacer, cfg, wire)
		if err != nil {
			return VResult{}, err
		}
	}
	defer release()

	sc := Scenario{Name: c.Situation.Name, Path: c.Family.Path, Scale: c.Situation.Scale, Procs: 1, Go: c.Family.Go,
		Nginx: c.Family.Nginx, Duration: d, NeighbourShare: c.Situation.NeighbourShare, Net: c.Net.Network, Family: c.Family.Name}
	res := VResult{Result: Result{Scenario: sc, Client: Pacer, NeighbourRate: c.Situation.NeighbourShare * rate}, Cell: c}
	url := "http://api.test" + c.Family.Path
	done := make(chan Counts, 1)
	if res.NeighbourRate > 0 {
		nw := &Wire{next: c.Net.wire(seed^1, server)}
		go func() { done <- neighbourOver(nw, url, res.NeighbourRate, start, d) }()
	}
	res.Counts = Workload(client, wire, url, c.Net.Goroutines, start, d)
	if res.NeighbourRate > 0 {
		res.Neighbour = <-done
	}
	if c.AtEnd != nil && c.Instead == nil {
		c.AtEnd(client.Transport.(*pacer.Transport))
	}
	if c.Family.Path == PathConn {
		res.Service = connService
	}
	left := rate - res.NeighbourRate
	res.Ceiling = left*c.Net.window(d).Seconds() + capacity
	res.Steady = Score{Refused: steady.n.Load(), Ceiling: left * (d - SteadyFrom).Seconds()}
	for i, n := range res.PerSecond {
		if time.Duration(i)*time.Second >= SteadyFrom {
			res.Steady.Accepted += n
		}
	}
	return res, nil
}

// WriteVirtualMatrix writes rs as one table, a row a cell: pacer's goodput
// (a share of the ceiling, of what the neighbour leaves where there is
// one) and its refusals per call accepted, from the start and from
// SteadyFrom on, then the neighbour's refusals of its calls answered, then
// what note says of the cell.
func WriteVirtualMatrix(w io.Writer, rs []VResult, note func(VResult) string) {
	fmt.Fprintf(w, "| family | network | scenario | goodput · refused/accepted | from %v | neighbour refused | |\n|---|---|---|---:|---:|---:|---|\n", SteadyFrom)
	for _, r := range rs {
		nb := "—"
		if r.NeighbourRate > 0 {
			n := r.Neighbour
			nb = strconv.FormatInt(n.TooMany+n.Unavailable, 10) + " of " + strconv.FormatInt(n.Accepted+n.TooMany+n.Unavailable, 10)
		}
		s, st := r.Score(), r.Steady
		fmt.Fprintf(w, "| %s | %s | %s | %.3f · %.4f | %.3f · %.4f | %s | %s |\n", r.Cell.Family.Name, r.Cell.Net.Name, r.Cell.Situation.Name,
			s.Goodput(), s.RefusedPerAccepted(), st.Goodput(), st.RefusedPerAccepted(), nb, note(r))
	}
}
