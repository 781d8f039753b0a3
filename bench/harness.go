package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a benchmark run.
type Options struct {
	NginxBin   string
	Server     Server
	Duration   time.Duration // of each client × scenario
	Goroutines int           // the workload's callers, in all processes together
	RedisAddr  string        // for pacer in scenarios 3, 13 and 14; required there (not 15)
	// LimitSync is how often pacer's processes sharing Redis read what the
	// fleet learned (store.Policy.LimitSync); 0: they do not share it.
	LimitSync  time.Duration
	Headroom   float64 // pacer's headroom; 0: its default
	PacerBurst int     // the Burst of pacer's Limit; 0: its default
	// Trace, when positive, makes pacer write its pace to standard error
	// at that interval (ClientConfig.Trace).
	Trace time.Duration
}

// A Result is one client in one scenario.
type Result struct {
	Scenario Scenario
	Client   string
	Counts
	// Ceiling is the most the server could have accepted in the run's
	// window: rate × time + burst for limit_req, Conn × time ÷ Service for
	// limit_conn, rate × time for httprate and ulule's fixed window (a
	// window lets no more through at a steady pace), rate × time + Burst+1
	// for throttled's GCRA bucket, less the neighbour's rate × time, and
	// the incident's time, where there are. Over a round trip the time is
	// the run's less the fixed delay each way (Network.window): no call the
	// server takes earlier or later can be answered within the run.
	Ceiling float64
	Service time.Duration // one call's duration on /conn, alone; 0 elsewhere
	// Neighbour is what the server did with an unpaced neighbour's calls,
	// in a scenario that has one, at NeighbourRate calls a second.
	Neighbour     Counts
	NeighbourRate float64
}

// Rejected is the server's refusals: 429s and 503s.
func (r Result) Rejected() int64 { return r.TooMany + r.Unavailable }

// Goodput is the accepted requests as a share of the server's ceiling.
func (r Result) Goodput() float64 { return float64(r.Accepted) / r.Ceiling }

// Recovered is, in a scenario with an incident, the accepted calls a second
// over the run's last five seconds, as a share of the server's limit.
func (r Result) Recovered() float64 {
	g := r.Scenario.Go
	secs := int(r.Scenario.Duration / time.Second)
	if g == nil || g.Incident == 0 || len(r.PerSecond) < secs {
		return 0
	}
	var n int64
	for _, c := range r.PerSecond[secs-5 : secs] {
		n += c
	}
	return float64(n) / 5 / (float64(g.Limit) / g.Window.Seconds())
}

// Run measures one client in one scenario against a server of its own,
// started for this run alone, so that no run inherits another's debt. The
// scenario's network (Scenario.Net) lies below the client and the
// neighbour; a busy host's spinner runs from before the server starts until
// the run has ended.
func Run(o Options, sc Scenario, client string) (Result, error) {
	if sc.Duration > 0 {
		o.Duration = sc.Duration
	}
	if sc.Nginx != nil {
		o.Server = *sc.Nginx
	}
	if sc.Net.Goroutines > 0 {
		o.Goroutines = sc.Net.Goroutines
	}
	if sc.Net.Busy {
		stop, err := startBusy()
		if err != nil {
			return Result{}, err
		}
		defer stop()
	}
	if sc.Go != nil {
		return runGo(o, sc, client)
	}
	n, err := StartNginx(o.NginxBin, o.Server)
	if err != nil {
		return Result{}, err
	}
	defer n.Stop()
	res := Result{Scenario: sc, Client: client}
	cfg := ClientConfig{Rate: o.Server.Rate * sc.Scale, Burst: o.Server.Burst * sc.Scale, MaxWait: o.Duration,
		Headroom: o.Headroom, PacerBurst: o.PacerBurst, Trace: o.Trace}
	rate := float64(o.Server.Rate)
	if sc.Path == PathConn {
		// On loopback whatever the scenario's network: the server's own
		// time, which its cap is counted in.
		if res.Service, err = callDuration(n.URL + PathConn); err != nil {
			return Result{}, err
		}
		rate = float64(o.Server.Conn) / res.Service.Seconds()
		cfg = ClientConfig{Conn: o.Server.Conn * sc.Scale, ConnRate: rate * float64(sc.Scale), MaxWait: o.Duration, Trace: o.Trace}
	}
	spec := childSpec{Client: client, URL: n.URL + sc.Path, Goroutines: o.Goroutines, Duration: o.Duration, Config: cfg, Net: sc.Net}
	if err := runSpec(o, sc, spec, rate, &res); err != nil {
		return Result{}, err
	}
	secs := sc.Net.window(o.Duration).Seconds()
	if sc.Path == PathConn {
		res.Ceiling = rate * secs
	} else {
		res.Ceiling = rate*secs + float64(o.Server.Burst)
	}
	res.Ceiling -= res.NeighbourRate * secs
	return res, nil
}

// runGo measures one client in a scenario against a GoLimiter, with the
// scenario's neighbour beside it.
func runGo(o Options, sc Scenario, client string) (Result, error) {
	g, err := StartGoServer(*sc.Go)
	if err != nil {
		return Result{}, err
	}
	defer g.Stop()
	rate := sc.Go.Rate()
	res := Result{Scenario: sc, Client: client}
	cfg := ClientConfig{Rate: int(rate) * sc.Scale, Burst: sc.Scale, MaxWait: o.Duration,
		Headroom: o.Headroom, PacerBurst: o.PacerBurst, Trace: o.Trace}
	spec := childSpec{Client: client, URL: g.URL + sc.Path, Goroutines: o.Goroutines, Duration: o.Duration, Config: cfg, Net: sc.Net}
	if err := runSpec(o, sc, spec, rate, &res); err != nil {
		return Result{}, err
	}
	res.Ceiling = (rate-res.NeighbourRate)*sc.Net.window(o.Duration-sc.Go.Incident).Seconds() + float64(sc.Go.Capacity())
	return res, nil
}

// runSpec runs spec — in sc.Procs processes when that is more than one —
// with sc's neighbour beside it, and puts what both saw in res. serverRate
// is the server's rate, calls a second, that sc.NeighbourShare is a share
// of.
func runSpec(o Options, sc Scenario, spec childSpec, serverRate float64, res *Result) error {
	res.NeighbourRate = sc.Neighbour
	if sc.NeighbourShare > 0 {
		res.NeighbourRate = sc.NeighbourShare * serverRate
	}
	spec.Start = time.Now()
	done := make(chan Counts, 1)
	if res.NeighbourRate > 0 {
		go func() { done <- neighbour(spec.URL, res.NeighbourRate, spec.Start, o.Duration, sc.Net) }()
	}
	var err error
	if sc.Procs > 1 {
		res.Counts, err = runProcesses(o, sc, spec)
	} else {
		res.Counts, err = spec.run()
	}
	if res.NeighbourRate > 0 {
		res.Neighbour = <-done
	}
	return err
}

// neighbour starts a call to url every 1/rate s, each on its own goroutine
// through a plain client over net, from start for d: a client on the same
// key that nothing paces, whose rate no round trip slows. A call still under
// way at the end is cut off and not counted.
func neighbour(url string, rate float64, start time.Time, d time.Duration, net Network) Counts {
	wire := NewWireOver(net)
	defer wire.CloseIdle()
	return neighbourOver(wire, url, rate, start, d)
}

// neighbourOver is neighbour through wire, whatever lies below it.
func neighbourOver(wire *Wire, url string, rate float64, start time.Time, d time.Duration) Counts {
	c := &http.Client{Transport: wire}
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(d))
	defer cancel()
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	var accepted, failed atomic.Int64
	var wg sync.WaitGroup
	for now := range tick.C {
		if now.Sub(start) >= d {
			break
		}
		wg.Go(func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				panic(err) // url is built by the harness: a bug, not a measurement
			}
			resp, err := c.Do(req)
			if err != nil {
				if ctx.Err() == nil {
					failed.Add(1)
				}
				return
			}
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode == http.StatusOK {
				accepted.Add(1)
			}
		})
	}
	wg.Wait()
	return Counts{Accepted: accepted.Load(), Failed: failed.Load(),
		TooMany: wire.tooMany.Load(), Unavailable: wire.unavailable.Load(), Other: wire.other.Load()}
}

// callDuration is the shortest of three calls to url made one at a time: how
// long the server takes to answer one call when nothing else is in flight.
func callDuration(url string) (time.Duration, error) {
	tr := NewWire()
	defer tr.CloseIdle()
	c := &http.Client{Transport: tr}
	best := time.Duration(0)
	for range 3 {
		t0 := time.Now()
		resp, err := c.Get(url)
		if err != nil {
			return 0, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, err
		}
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("GET %s alone: %s", url, resp.Status)
		}
		if d := time.Since(t0); best == 0 || d < best {
			best = d
		}
	}
	return best, nil
}

// childSpec is one process's share of a run.
type childSpec struct {
	Client     string
	URL        string
	Goroutines int
	Start      time.Time
	Duration   time.Duration
	Config     ClientConfig
	Net        Network
}

func (s childSpec) run() (Counts, error) {
	wire := NewWireOver(s.Net)
	defer wire.CloseIdle()
	client, release, err := NewClient(s.Client, s.Config, wire)
	if err != nil {
		return Counts{}, err
	}
	defer release()
	return Workload(client, wire, s.URL, s.Goroutines, s.Start, s.Duration), nil
}

// envChild holds a childSpec, as JSON, in a process the harness started.
const envChild = "PACER_BENCH_CHILD"

// MaybeChild makes this process one of a run's processes, or a busy host's
// spinner, and exits, when the harness started it as one. Call it first thing in main (and TestMain).
func MaybeChild() {
	maybeSpin()
	js := os.Getenv(envChild)
	if js == "" {
		return
	}
	var spec childSpec
	if err := json.Unmarshal([]byte(js), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "bench child:", err)
		os.Exit(2)
	}
	c, err := spec.run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench child:", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(c); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// runProcesses runs spec in sc.Procs OS processes — this executable, again
// — that start together and split the goroutines between them. Each
// process gets the whole configuration: the full limit, as a fleet's
// instances do. pacer's get one Redis bucket, under a prefix new to this
// run, unless sc.Apart gives each its own memory.
func runProcesses(o Options, sc Scenario, spec childSpec) (Counts, error) {
	procs := sc.Procs
	if spec.Client == Pacer && !sc.Apart {
		if o.RedisAddr == "" {
			return Counts{}, errors.New("pacer's processes share a Redis store: set the Redis address")
		}
		var b [8]byte
		rand.Read(b[:])
		spec.Config.RedisAddr, spec.Config.RedisPrefix = o.RedisAddr, "pacer-bench:"+hex.EncodeToString(b[:])+":"
		spec.Config.LimitSync = o.LimitSync
	}
	exe, err := os.Executable()
	if err != nil {
		return Counts{}, err
	}
	spec.Goroutines = max(1, o.Goroutines/procs)
	spec.Start = time.Now().Add(time.Second) // time for every process to start and connect
	js, err := json.Marshal(spec)
	if err != nil {
		return Counts{}, err
	}
	type out struct {
		res Counts
		err error
	}
	outs := make(chan out, procs)
	for range procs {
		go func() {
			cmd := exec.Command(exe)
			cmd.Env = append(os.Environ(), envChild+"="+string(js))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				outs <- out{err: fmt.Errorf("process of %s: %v: %s", spec.Client, err, stderr.String())}
				return
			}
			var r Counts
			err := json.Unmarshal(stdout.Bytes(), &r)
			outs <- out{r, err}
		}()
	}
	var total Counts
	var errs []error
	for range procs {
		o := <-outs
		errs = append(errs, o.err)
		total.add(o.res)
	}
	return total, errors.Join(errs...)
}
