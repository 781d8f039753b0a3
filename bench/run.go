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
	Scale int    // the client is configured at Scale × the server's rate
	Procs int    // OS processes sharing the server's limit
}

// Scenarios are the five situations of the benchmark.
var Scenarios = []Scenario{
	{1, "limit known", PathLimit, 1, 1},
	{2, "configured at 2× the limit", PathLimit, 2, 1},
	{3, "4 processes share the limit", PathLimit, 1, 4},
	{4, "concurrency cap (limit_conn)", PathConn, 1, 1},
	{5, "Retry-After, configured at 2×", PathLimitRetryAfter, 2, 1},
}

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
}

func (c *Counts) add(o Counts) {
	c.Accepted += o.Accepted
	c.TooMany += o.TooMany
	c.Unavailable += o.Unavailable
	c.Other += o.Other
	c.Failed += o.Failed
	c.Latencies = append(c.Latencies, o.Latencies...)
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
