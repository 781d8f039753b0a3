package simulate

import (
	"fmt"
	"time"
)

// Traffic says in one line what the run offered, for titles: "1 client
// offering 40 requests/s, spiking to 200/s from 20s to 30s, for 60s;
// arrivals even".
func (c Config) Traffic() string {
	clients := "1 client"
	if c.Clients > 1 {
		clients = fmt.Sprintf("%d clients, each", c.Clients)
	}
	spike := ""
	if c.SpikeEnd > c.SpikeStart {
		spike = fmt.Sprintf(", spiking to %d/s from %s to %s", c.SpikeRate, Seconds(c.SpikeStart), Seconds(c.SpikeEnd))
	}
	arrivals := string(c.Arrivals)
	switch c.Arrivals {
	case Clumped:
		arrivals = fmt.Sprintf("clumped in the first %v of each second", c.ClumpWidth)
	case Poisson:
		arrivals = fmt.Sprintf("poisson, seed %d", c.Seed)
	}
	return fmt.Sprintf("%s offering %d requests/s%s, for %s; arrivals %s", clients, c.Rate, spike, Seconds(c.Duration), arrivals)
}

// Limiters says in one line how the limiters were set up.
func (r *Report) Limiters() string {
	c, p := r.Config, r.Pace
	return fmt.Sprintf("token bucket: %d tokens refilled at %v/s · windows: %d per %s · pacer: told %d per %s, keeps %.4g%% → %.4g/s, burst %d",
		c.Capacity, c.Refill, c.Allowance(), Seconds(c.Window), p.Limit.Count, Seconds(c.PacerPer), c.Headroom*100, p.Rate, p.Burst)
}

// Seconds formats a setting's duration as people write it: 60s, not 1m0s.
func Seconds(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}
