package simulate

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// A Pattern says how the requests of one second are placed within it.
type Pattern string

const (
	// Even spreads a second's n requests at s, s + 1/n, s + 2/n, …
	// With several clients, client c's requests are c/clients of a gap
	// later than client 0's, so that the clients take turns: with all of
	// them at the same instants, the first in line would win every tie.
	Even Pattern = "even"
	// Clumped spreads them evenly over the first ClumpWidth of the second
	// instead, as a cron job or a retry storm does; clients take turns as
	// for Even.
	Clumped Pattern = "clumped"
	// Poisson draws independent arrivals at the second's rate, from a
	// generator seeded with Seed and the client's number.
	Poisson Pattern = "poisson"
)

var patterns = []Pattern{Even, Clumped, Poisson}

func (p Pattern) valid() bool { return slices.Contains(patterns, p) }

// String implements flag.Value, with Set.
func (p Pattern) String() string { return string(p) }

// Set implements flag.Value.
func (p *Pattern) Set(s string) error {
	if !Pattern(s).valid() {
		return fmt.Errorf("must be one of %v", patterns)
	}
	*p = Pattern(s)
	return nil
}

// An Arrival is one request offered to the limiters.
type Arrival struct {
	At     time.Duration // since the start of the run, within [0, Duration)
	Client int           // 0-based
}

// Arrivals returns every client's requests over the run in the order they
// arrive; requests that arrive at the same instant (which only Poisson
// arrivals can give) are ordered by client.
// The config must be valid.
func Arrivals(c Config) []Arrival {
	var all []Arrival
	for client := range c.Clients {
		all = append(all, clientArrivals(c, client)...)
	}
	slices.SortStableFunc(all, func(a, b Arrival) int {
		if a.At != b.At {
			return compare(a.At, b.At)
		}
		return a.Client - b.Client
	})
	return all
}

func compare(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func clientArrivals(c Config, client int) []Arrival {
	var out []Arrival
	var rng *rand.Rand
	if c.Arrivals == Poisson {
		rng = rand.New(rand.NewPCG(c.Seed, uint64(client)))
	}
	for s := time.Duration(0); s < c.Duration; s += time.Second {
		n := c.rateAt(s)
		switch c.Arrivals {
		case Even:
			out = spread(out, client, c.Clients, s, time.Second, n)
		case Clumped:
			out = spread(out, client, c.Clients, s, c.ClumpWidth, n)
		case Poisson:
			out = poisson(out, rng, client, s, n)
		}
	}
	return out
}

// spread appends n arrivals of one client evenly spaced over [start,
// start+width), offset by client/clients of the spacing so that the clients'
// arrivals interleave evenly.
func spread(out []Arrival, client, clients int, start, width time.Duration, n int) []Arrival {
	slots := time.Duration(n * clients)
	for k := range n {
		slot := time.Duration(k*clients + client)
		out = append(out, Arrival{At: start + width*slot/slots, Client: client})
	}
	return out
}

// poisson appends the arrivals of a Poisson process of the given rate over
// the second starting at start: exponential gaps, restarted each second,
// which is exact because the process is memoryless.
func poisson(out []Arrival, rng *rand.Rand, client int, start time.Duration, rate int) []Arrival {
	if rate == 0 {
		return out
	}
	t := 0.0
	for {
		t += rng.ExpFloat64() / float64(rate)
		if t >= 1 {
			return out
		}
		out = append(out, Arrival{At: start + time.Duration(t*float64(time.Second)), Client: client})
	}
}
