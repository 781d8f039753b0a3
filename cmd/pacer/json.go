package main

import (
	"encoding/json"
	"io"
	"time"

	"github.com/pacer-go/pacer/internal/simulate"
)

// The JSON output: the same numbers as the table, plus the run's settings.
// The field names of a limiter's first five fields are fixed by issue 7;
// the rest may grow.
type jsonReport struct {
	Scenario string        `json:"scenario"`
	Settings jsonSettings  `json:"settings"`
	Limiters []jsonLimiter `json:"limiters"`
}

type jsonLimiter struct {
	Name          string `json:"name"`
	Offered       int    `json:"offered"`
	Allowed       int    `json:"allowed"`
	Rejected      int    `json:"rejected"`
	BusiestSecond int    `json:"busiest_second"`
	// Pacer only.
	QueuedAtEnd *int     `json:"queued_at_end,omitempty"`
	DelayP50Ms  *float64 `json:"delay_p50_ms,omitempty"`
	DelayP99Ms  *float64 `json:"delay_p99_ms,omitempty"`
	DelayMaxMs  *float64 `json:"delay_max_ms,omitempty"`
	// When several clients share the limit.
	Clients []jsonClient `json:"clients,omitempty"`
}

type jsonClient struct {
	Client   int  `json:"client"` // from 1
	Offered  int  `json:"offered"`
	Allowed  int  `json:"allowed"`
	Rejected int  `json:"rejected"`
	Queued   *int `json:"queued_at_end,omitempty"`
}

type jsonSettings struct {
	DurationSeconds   float64 `json:"duration_s"`
	Rate              int     `json:"rate"`
	SpikeRate         int     `json:"spike_rate"`
	SpikeStartSeconds float64 `json:"spike_start_s"`
	SpikeEndSeconds   float64 `json:"spike_end_s"`
	Arrivals          string  `json:"arrivals"`
	ClumpWidthSeconds float64 `json:"clump_width_s"`
	Seed              uint64  `json:"seed"`
	Clients           int     `json:"clients"`
	Capacity          int     `json:"capacity"`
	Refill            float64 `json:"refill"`
	WindowSeconds     float64 `json:"window_s"`
	WindowAllowance   int     `json:"window_allowance"`
	PacerLimit        int     `json:"pacer_limit"`
	PacerPerSeconds   float64 `json:"pacer_per_s"`
	Headroom          float64 `json:"headroom"`
	PacerRate         float64 `json:"pacer_rate"`
	PacerBurst        int     `json:"pacer_burst"`
}

func writeJSON(w io.Writer, r *simulate.Report, scenario string) error {
	c := r.Config
	out := jsonReport{
		Scenario: scenario,
		Settings: jsonSettings{
			DurationSeconds: c.Duration.Seconds(), Rate: c.Rate, SpikeRate: c.SpikeRate,
			SpikeStartSeconds: c.SpikeStart.Seconds(), SpikeEndSeconds: c.SpikeEnd.Seconds(),
			Arrivals: string(c.Arrivals), ClumpWidthSeconds: c.ClumpWidth.Seconds(), Seed: c.Seed, Clients: c.Clients,
			Capacity: c.Capacity, Refill: c.Refill, WindowSeconds: c.Window.Seconds(), WindowAllowance: c.Allowance(),
			PacerLimit: r.Pace.Limit.Count, PacerPerSeconds: c.PacerPer.Seconds(), Headroom: c.Headroom,
			PacerRate: r.Pace.Rate, PacerBurst: r.Pace.Burst,
		},
		Limiters: []jsonLimiter{},
	}
	for _, res := range r.Results {
		l := jsonLimiter{Name: res.Name, Offered: res.Offered, Allowed: res.Allowed, Rejected: res.Rejected, BusiestSecond: res.BusiestSecond}
		if q := res.Queue; q != nil {
			l.QueuedAtEnd = &q.QueuedAtEnd
			l.DelayP50Ms, l.DelayP99Ms, l.DelayMaxMs = ms(q.DelayP50), ms(q.DelayP99), ms(q.DelayMax)
		}
		if c.Clients > 1 {
			for i, cl := range res.Clients {
				jc := jsonClient{Client: i + 1, Offered: cl.Offered, Allowed: cl.Allowed, Rejected: cl.Rejected}
				if res.Queue != nil {
					jc.Queued = &cl.Queued
				}
				l.Clients = append(l.Clients, jc)
			}
		}
		out.Limiters = append(out.Limiters, l)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func ms(d time.Duration) *float64 {
	v := d.Seconds() * 1000
	return &v
}
