package bench

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// A Scenario is one situation every client is measured in.
type Scenario struct {
	ID    int
	Name  string
	Path  string // the nginx location
	Scale int    // the client is configured at Scale × the server's rate (or cap)
	Procs int    // OS processes sharing the server's limit
	// Apart, with Procs, gives each of pacer's processes its own bucket in
	// its own memory, none shared: a fleet deployed without a store, each
	// instance told the whole limit. Without it they share Redis.
	Apart bool

	// Go, when set, makes the server go-chi/httprate (GoLimiter) instead of
	// nginx; Nginx, when set, replaces the run's nginx rate and burst.
	Go    *GoLimiter
	Nginx *Server
	// Duration, when set, replaces the run's duration.
	Duration time.Duration
	// Neighbour, when positive, is the rate of an unpaced client calling
	// the same server, on the same key, beside the client measured;
	// NeighbourShare, when positive, sets that rate as a share of the
	// server's (for limit_conn, of Conn ÷ one call's duration).
	Neighbour      float64
	NeighbourShare float64
	// Net is the network the calls travel in; the zero Network is loopback.
	Net Network
	// Family names the server, in the matrix's tables (see Matrix).
	Family string
}

// Scenarios are the situations of the benchmark: five against nginx at the
// run's rate, then issue 14's, against go-chi/httprate at 100 a second and
// nginx at 100 r/s, 20 s each (the incident's two minutes), 13 and 14
// fleets of four processes sharing one bucket in Redis: one that must
// learn nginx's limit together, one behind httprate's remaining counts.
// The last is the same fleet deployed without a store, each process told
// the whole limit: it knows of the others only by what the counts say.
var Scenarios = []Scenario{
	{ID: 1, Name: "limit known", Path: PathLimit, Scale: 1, Procs: 1},
	{ID: 2, Name: "configured at 2× the limit", Path: PathLimit, Scale: 2, Procs: 1},
	{ID: 3, Name: "4 processes share the limit", Path: PathLimit, Scale: 1, Procs: 4},
	{ID: 4, Name: "concurrency cap (limit_conn)", Path: PathConn, Scale: 1, Procs: 1},
	{ID: 5, Name: "Retry-After, configured at 2×", Path: PathLimitRetryAfter, Scale: 2, Procs: 1},
	{ID: 6, Name: "httprate: limit known", Path: PathLimit, Scale: 1, Procs: 1, Go: &httprate100, Duration: 20 * time.Second},
	{ID: 7, Name: "httprate: told 2×, Retry-After", Path: PathLimit, Scale: 2, Procs: 1, Go: &httprate100, Duration: 20 * time.Second},
	{ID: 8, Name: "httprate: told 2×, no Retry-After", Path: PathLimit, Scale: 2, Procs: 1, Go: &httprate100NoRA, Duration: 20 * time.Second},
	{ID: 9, Name: "httprate: unpaced neighbour at 40%", Path: PathLimit, Scale: 1, Procs: 1, Go: &httprate100, Duration: 20 * time.Second, Neighbour: 40},
	{ID: 10, Name: "nginx 100 r/s: told 2×, bare 429", Path: PathLimit, Scale: 2, Procs: 1, Nginx: &nginx100, Duration: 20 * time.Second},
	{ID: 11, Name: "nginx 100 r/s: told 2×, Retry-After", Path: PathLimitRetryAfter, Scale: 2, Procs: 1, Nginx: &nginx100, Duration: 20 * time.Second},
	{ID: 12, Name: "httprate: 1 min of bare 429s, then healthy", Path: PathLimit, Scale: 1, Procs: 1, Go: &httprateIncident, Duration: 2 * time.Minute},
	{ID: 13, Name: "nginx 100 r/s: 4 processes, each told 2×, bare 429", Path: PathLimit, Scale: 2, Procs: 4, Nginx: &nginx100, Duration: 20 * time.Second},
	{ID: 14, Name: "httprate: 4 processes share the limit", Path: PathLimit, Scale: 1, Procs: 4, Go: &httprate100, Duration: 20 * time.Second},
	{ID: 15, Name: "httprate: 4 processes, each told the limit, no store", Path: PathLimit, Scale: 1, Procs: 4, Apart: true, Go: &httprate100, Duration: 20 * time.Second},
}

var (
	httprate100      = GoLimiter{Limit: 100, Window: time.Second, RetryAfter: true}
	httprate100NoRA  = GoLimiter{Limit: 100, Window: time.Second}
	httprateIncident = GoLimiter{Limit: 100, Window: time.Second, RetryAfter: true, Incident: time.Minute}
	nginx100         = Server{Rate: 100, Burst: 20, Conn: 4}
)

// ScenarioByID returns the scenario with the given number.
func ScenarioByID(id int) (Scenario, bool) {
	for _, s := range Scenarios {
		if s.ID == id {
			return s, true
		}
	}
	return Scenario{}, false
}

// Counts is what one run (or one process of a run) saw.
type Counts struct {
	Accepted    int64 `json:"accepted"`    // calls that ended in a 200 read to its end
	TooMany     int64 `json:"too_many"`    // 429s from the server, every attempt
	Unavailable int64 `json:"unavailable"` // 503s from the server, every attempt
	Other       int64 `json:"other"`       // any other status
	Failed      int64 `json:"failed"`      // calls that returned an error or a non-200 to the caller
	// Latencies of the calls that ended in a 200, from the moment the
	// goroutine started the call — so time spent waiting in the limiter,
	// and in a client's retries, counts — until the body was read and
	// closed.
	Latencies []time.Duration `json:"latencies_ns"`
	// PerSecond counts the accepted calls by the second of the run they
	// ended in.
	PerSecond []int64 `json:"per_second"`
}

func (c *Counts) add(o Counts) {
	c.Accepted += o.Accepted
	c.TooMany += o.TooMany
	c.Unavailable += o.Unavailable
	c.Other += o.Other
	c.Failed += o.Failed
	c.Latencies = append(c.Latencies, o.Latencies...)
	for i, n := range o.PerSecond {
		for len(c.PerSecond) <= i {
			c.PerSecond = append(c.PerSecond, 0)
		}
		c.PerSecond[i] += n
	}
}

// Workload runs goroutines that each call url through client, one call after
// another as fast as the client lets them, from start until start+d. Only
// the calls that ended in that window count as accepted; a call still under
// way at the end is cancelled. The wire's counts are added to what it
// returns.
func Workload(client *http.Client, wire *Wire, url string, goroutines int, start time.Time, d time.Duration) Counts {
	if wait := time.Until(start); wait > 0 {
		time.Sleep(wait) // the processes of one run start together
	}
	deadline := start.Add(d)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var (
		mu    sync.Mutex
		total Counts
		wg    sync.WaitGroup
	)
	for range goroutines {
		wg.Go(func() {
			var mine Counts
			for ctx.Err() == nil {
				t0 := time.Now()
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				if err != nil {
					panic(err) // url is built by the harness: a bug, not a measurement
				}
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
						break // the run is over, or the limiter says the call cannot start before it is
					}
					mine.Failed++
					continue
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch {
				case err != nil && ctx.Err() != nil:
					// cut off by the end of the run: not counted
				case err == nil && resp.StatusCode == http.StatusOK:
					if end := time.Now(); !end.After(deadline) {
						mine.Latencies = append(mine.Latencies, end.Sub(t0))
						sec := int(end.Sub(start) / time.Second)
						for len(mine.PerSecond) <= sec {
							mine.PerSecond = append(mine.PerSecond, 0)
						}
						mine.PerSecond[sec]++
					} // else it ended outside the window the ceiling is computed for
				default:
					mine.Failed++
				}
			}
			mu.Lock()
			total.add(mine)
			mu.Unlock()
		})
	}
	wg.Wait()
	// Accepted counts the calls that ended in a whole 200 — each was
	// accepted once — and not a 200 whose body the end of the run cut off.
	total.Accepted = int64(len(total.Latencies))
	total.TooMany = wire.tooMany.Load()
	total.Unavailable = wire.unavailable.Load()
	total.Other = wire.other.Load()
	return total
}

// Percentile returns the q-quantile (0 < q ≤ 1) of ds by the nearest-rank
// method, or 0 when ds is empty. It sorts ds.
func Percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(float64(len(ds))*q+0.999999999) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}
