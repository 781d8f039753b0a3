package simulate

import (
	"strings"
	"testing"
	"time"
)

func TestDefaultIsValid(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Allowance() != 500 || c.PacerCount() != 50 {
		t.Errorf("allowance %d and pacer count %d, want 50/s × 10 s = 500 and 50/s × 1 s = 50", c.Allowance(), c.PacerCount())
	}
}

func TestValidateNamesWhatIsWrong(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"zero duration", func(c *Config) { c.Duration = 0 }, "duration"},
		{"fractional duration", func(c *Config) { c.Duration = 1500 * time.Millisecond }, "whole number of seconds"},
		{"huge duration", func(c *Config) { c.Duration = 1000 * time.Hour }, "duration"},
		{"negative rate", func(c *Config) { c.Rate = -1 }, "rate -1"},
		{"negative spike rate", func(c *Config) { c.SpikeRate = -5 }, "spike-rate"},
		{"spike backwards", func(c *Config) { c.SpikeStart, c.SpikeEnd = 30*time.Second, 20*time.Second }, "spike"},
		{"spike past the end", func(c *Config) { c.SpikeEnd = 61 * time.Second }, "spike"},
		{"fractional spike", func(c *Config) { c.SpikeStart = 1500 * time.Millisecond }, "whole numbers"},
		{"unknown arrivals", func(c *Config) { c.Arrivals = "bursty" }, "arrivals"},
		{"zero clump", func(c *Config) { c.Arrivals, c.ClumpWidth = Clumped, 0 }, "clump-width"},
		{"no clients", func(c *Config) { c.Clients = 0 }, "clients"},
		{"empty bucket", func(c *Config) { c.Capacity = 0 }, "capacity"},
		{"negative refill", func(c *Config) { c.Refill = -50 }, "refill"},
		{"NaN refill", func(c *Config) { c.Refill = nan() }, "refill"},
		{"zero window", func(c *Config) { c.Window = 0 }, "window"},
		{"window too short to allow one", func(c *Config) { c.Refill, c.Window = 0.5, time.Second }, "allows no request"},
		{"negative pacer period", func(c *Config) { c.PacerPer = -time.Second }, "pacer-per"},
		{"headroom above 1", func(c *Config) { c.Headroom = 1.5 }, "headroom"},
		{"zero headroom", func(c *Config) { c.Headroom = 0 }, "headroom"},
		{"too many requests", func(c *Config) { c.Rate, c.Duration, c.SpikeEnd = 100_000, time.Hour, 0; c.SpikeStart = 0 }, "at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.change(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want an error mentioning %q", err, tc.want)
			}
			if _, err := Run(c); err == nil {
				t.Error("Run accepted the config")
			}
		})
	}
}

func nan() float64 {
	zero := 0.0
	return zero / zero
}
