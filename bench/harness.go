package bench

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"time"
)

// Options configure a benchmark run.
type Options struct {
	NginxBin   string
	Server     Server
	Duration   time.Duration // of each client × scenario
	Goroutines int           // the workload's callers, in all processes together
	RedisAddr  string        // for pacer in scenarios 3, 13 and 14; required there
	// LimitSync is how often pacer's processes sharing Redis read what the
	// fleet learned (pacer.WithLimitSync); 0: they do not share it.
	LimitSync  time.Duration
	Headroom   float64 // pacer's headroom; 0: its default
	PacerBurst int     // the Burst of pacer's Limit; 0: its default
}

// A Result is one client in one scenario.
type Result struct {
	Scenario Scenario
	Client   string
	Counts
	// Ceiling is the most the server could have accepted in the run's
	// window: rate × time + burst for limit_req, Conn × time ÷ Service for
	// limit_conn, rate × time for httprate (its sliding window lets no
	// more through at a steady pace), less the neighbour's rate × time, and
	// the incident's time, where there are.
	Ceiling float64
	Service time.Duration // one call's duration on /conn, alone; 0 elsewhere
	// Neighbour is what the server did with an unpaced neighbour's calls,
	// in a scenario that has one.
	Neighbour Counts
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
// started for this run alone, so that no run inherits another's debt.
func Run(o Options, sc Scenario, client string) (Result, error) {
	if sc.Duration > 0 {
		o.Duration = sc.Duration
	}
	if sc.Nginx != nil {
		o.Server = *sc.Nginx
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
		Headroom: o.Headroom, PacerBurst: o.PacerBurst}
	if sc.Path == PathConn {
		if res.Service, err = callDuration(n.URL + PathConn); err != nil {
			return Result{}, err
		}
		cfg = ClientConfig{Conn: o.Server.Conn, ConnRate: float64(o.Server.Conn) / res.Service.Seconds(), MaxWait: o.Duration}
	}
	spec := childSpec{Client: client, URL: n.URL + sc.Path, Goroutines: o.Goroutines, Duration: o.Duration, Config: cfg}
	if sc.Procs > 1 {
		res.Counts, err = runProcesses(o, sc.Procs, spec)
	} else {
		spec.Start = time.Now()
		res.Counts, err = spec.run()
	}
	if err != nil {
		return Result{}, err
	}
	secs := o.Duration.Seconds()
	if sc.Path == PathConn {
		res.Ceiling = float64(o.Server.Conn) * secs / res.Service.Seconds()
	} else {
		res.Ceiling = float64(o.Server.Rate)*secs + float64(o.Server.Burst)
	}
	return res, nil
}

// runGo measures one client in a scenario against go-chi/httprate, with
// the scenario's neighbour beside it.
func runGo(o Options, sc Scenario, client string) (Result, error) {
	g, err := StartGoServer(*sc.Go)
	if err != nil {
		return Result{}, err
	}
	defer g.Stop()
	rate := float64(sc.Go.Limit) / sc.Go.Window.Seconds()
	res := Result{Scenario: sc, Client: client}
	cfg := ClientConfig{Rate: int(rate) * sc.Scale, Burst: sc.Scale, MaxWait: o.Duration,
		Headroom: o.Headroom, PacerBurst: o.PacerBurst}
	spec := childSpec{Client: client, URL: g.URL + sc.Path, Goroutines: o.Goroutines, Duration: o.Duration, Config: cfg, Start: time.Now()}
	done := make(chan Counts, 1)
	if sc.Neighbour > 0 {
		go func() { done <- neighbour(spec.URL, sc.Neighbour, spec.Start, o.Duration) }()
	}
	if sc.Procs > 1 {
		res.Counts, err = runProcesses(o, sc.Procs, spec)
	} else {
		res.Counts, err = spec.run()
	}
	if err != nil {
		return Result{}, err
	}
	if sc.Neighbour > 0 {
		res.Neighbour = <-done
	}
	res.Ceiling = (rate - sc.Neighbour) * (o.Duration - sc.Go.Incident).Seconds()
	return res, nil
}

// neighbour calls url every 1/rate s, on a plain client, from start for d:
// a client on the same key that nothing paces.
func neighbour(url string, rate float64, start time.Time, d time.Duration) Counts {
	wire := NewWire()
	defer wire.CloseIdle()
	c := &http.Client{Transport: wire}
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	var n Counts
	for now := range tick.C {
		if now.Sub(start) >= d {
			break
		}
		resp, err := c.Get(url)
		if err != nil {
			n.Failed++
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			n.Accepted++
		}
	}
	n.TooMany, n.Unavailable, n.Other = wire.tooMany.Load(), wire.unavailable.Load(), wire.other.Load()
	return n
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
}

func (s childSpec) run() (Counts, error) {
	wire := NewWire()
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

// MaybeChild makes this process one of a run's processes, and exits, when the
// harness started it as one. Call it first thing in main (and TestMain).
func MaybeChild() {
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

// runProcesses runs spec in procs OS processes — this executable, again —
// that start together and split the goroutines between them. Each process
// gets the whole configuration: the full limit, as a fleet's instances do.
// pacer's get one Redis bucket, under a prefix new to this run.
func runProcesses(o Options, procs int, spec childSpec) (Counts, error) {
	if spec.Client == Pacer {
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
