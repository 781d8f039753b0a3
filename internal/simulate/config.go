package simulate

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Config is everything a run depends on. Default returns the run that the
// issue describes; Validate says what is wrong with any other.
type Config struct {
	// Traffic, offered by each client.
	Duration   time.Duration // length of the run: whole seconds, at least one
	Rate       int           // requests a second outside the spike
	SpikeRate  int           // requests a second in [SpikeStart, SpikeEnd)
	SpikeStart time.Duration // whole seconds; SpikeStart == SpikeEnd means no spike
	SpikeEnd   time.Duration
	Arrivals   Pattern       // how each second's requests are placed within it
	ClumpWidth time.Duration // for Clumped: the span at the start of each second that holds its requests
	Seed       uint64        // for Poisson: the same seed gives the same arrivals
	Clients    int           // clients offering the traffic, all behind the one limit

	// The limiters.
	Capacity int           // token bucket: tokens it holds, and starts with
	Refill   float64       // token bucket: tokens added a second
	Window   time.Duration // fixed and sliding windows: each allows Refill × Window requests
	// Pacer is told that the provider publishes Refill × PacerPer requests
	// per PacerPer, the same long-run allowance as the others, and paces at
	// Headroom of it with its default burst.
	PacerPer time.Duration
	Headroom float64
}

// Default returns the run: 60 s of 40 requests a second, 200 a
// second from 20 s to 30 s, spread evenly; a bucket of 100 refilled at 50 a
// second; 10 s windows; pacer told of 50 a second, at 90%.
func Default() Config {
	return Config{
		Duration:   60 * time.Second,
		Rate:       40,
		SpikeRate:  200,
		SpikeStart: 20 * time.Second,
		SpikeEnd:   30 * time.Second,
		Arrivals:   Even,
		ClumpWidth: 100 * time.Millisecond,
		Seed:       1,
		Clients:    1,
		Capacity:   100,
		Refill:     50,
		Window:     10 * time.Second,
		PacerPer:   time.Second,
		Headroom:   0.9,
	}
}

// Bounds that keep a run to seconds of CPU and a chart to a sensible size.
const (
	MaxDuration = 24 * time.Hour
	MaxRequests = 5_000_000 // offered by all clients over the run
	MaxClients  = 1000
)

// Validate returns an error naming every setting that cannot be run, or
// nil. It names settings as the command line's flags do.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch {
	case c.Duration < time.Second || c.Duration > MaxDuration:
		bad("duration %v: must be from 1s to %v", c.Duration, MaxDuration)
	case c.Duration%time.Second != 0:
		bad("duration %v: must be a whole number of seconds", c.Duration)
	}
	if c.Rate < 0 {
		bad("rate %d: must not be negative", c.Rate)
	}
	if c.SpikeRate < 0 {
		bad("spike-rate %d: must not be negative", c.SpikeRate)
	}
	switch {
	case c.SpikeStart%time.Second != 0 || c.SpikeEnd%time.Second != 0:
		bad("spike-start %v, spike-end %v: both must be whole numbers of seconds", c.SpikeStart, c.SpikeEnd)
	case c.SpikeStart < 0 || c.SpikeEnd < c.SpikeStart || c.SpikeEnd > c.Duration:
		bad("spike-start %v, spike-end %v: must satisfy 0 ≤ start ≤ end ≤ duration (%v)", c.SpikeStart, c.SpikeEnd, c.Duration)
	}
	if !c.Arrivals.valid() {
		bad("arrivals %q: must be one of %v", c.Arrivals, patterns)
	}
	if c.Arrivals == Clumped && (c.ClumpWidth <= 0 || c.ClumpWidth > time.Second) {
		bad("clump-width %v: must be above 0 and at most 1s", c.ClumpWidth)
	}
	if c.Clients < 1 || c.Clients > MaxClients {
		bad("clients %d: must be from 1 to %d", c.Clients, MaxClients)
	}
	if c.Capacity < 1 {
		bad("capacity %d: the bucket must hold at least 1 token", c.Capacity)
	}
	if !(c.Refill > 0) || math.IsInf(c.Refill, 0) {
		bad("refill %v: must be a positive number of tokens a second", c.Refill)
	}
	if c.Window <= 0 {
		bad("window %v: must be positive", c.Window)
	} else if c.Refill > 0 && c.Allowance() < 1 {
		bad("window %v: refill × window = %v, which allows no request; lengthen the window", c.Window, c.Refill*c.Window.Seconds())
	}
	if c.PacerPer <= 0 {
		bad("pacer-per %v: must be positive", c.PacerPer)
	} else if c.Refill > 0 && c.PacerCount() < 1 {
		bad("pacer-per %v: refill × pacer-per = %v, which allows no request; lengthen the period", c.PacerPer, c.Refill*c.PacerPer.Seconds())
	}
	if !(c.Headroom > 0 && c.Headroom <= 1) {
		bad("headroom %v: must be above 0 and at most 1", c.Headroom)
	}
	if len(errs) == 0 {
		if n := c.offeredPerClient() * int64(c.Clients); n > MaxRequests {
			bad("the run would offer %d requests; at most %d fit in one run", n, MaxRequests)
		}
	}
	return errors.Join(errs...)
}

// Allowance is what each window allows: Refill × Window, rounded down, so
// that the windows have the bucket's long-run rate.
func (c Config) Allowance() int { return countOf(c.Refill, c.Window) }

// PacerCount is the Count of the limit pacer is told of: Refill × PacerPer,
// rounded down.
func (c Config) PacerCount() int { return countOf(c.Refill, c.PacerPer) }

// countOf returns perSecond × d rounded down, saturating rather than
// overflowing for absurd inputs. The epsilon keeps 0.1 × 10 s at 1.
func countOf(perSecond float64, d time.Duration) int {
	n := math.Floor(perSecond*d.Seconds() + 1e-9)
	if n >= math.MaxInt32 {
		return math.MaxInt32
	}
	return int(n)
}

// rateAt returns the requests a client offers in the second starting at s.
func (c Config) rateAt(s time.Duration) int {
	if s >= c.SpikeStart && s < c.SpikeEnd {
		return c.SpikeRate
	}
	return c.Rate
}

// offeredPerClient is the number of requests one client offers over the run
// (the expected number, for Poisson arrivals).
func (c Config) offeredPerClient() int64 {
	var n int64
	for s := time.Duration(0); s < c.Duration; s += time.Second {
		n += int64(c.rateAt(s))
	}
	return n
}
