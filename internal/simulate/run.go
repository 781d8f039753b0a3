package simulate

import "time"

// Run validates c and runs every limiter on the same arrivals.
func Run(c Config) (*Report, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	arrivals := Arrivals(c)
	allowance := float64(c.Allowance())
	pace, err := MeasurePace(c)
	if err != nil {
		return nil, err
	}
	pacer, err := RunPacer(c, arrivals)
	if err != nil {
		return nil, err
	}
	return &Report{Config: c, Pace: pace, Results: []Result{
		RunLimiter("token-bucket", NewTokenBucket(c.Capacity, c.Refill), Level{Label: "tokens in the bucket", Limit: float64(c.Capacity)}, c, arrivals),
		RunLimiter("fixed-window", NewFixedWindow(c.Allowance(), c.Window), Level{Label: "requests counted in the window", Limit: allowance}, c, arrivals),
		RunLimiter("sliding-window", NewSlidingWindow(c.Allowance(), c.Window), Level{Label: "requests in the last window", Limit: allowance}, c, arrivals),
		pacer,
	}}, nil
}

// RunLimiter offers the arrivals to l one by one and tallies what it
// allowed. level labels the samples of l.Level taken along the way.
func RunLimiter(name string, l Limiter, level Level, c Config, arrivals []Arrival) Result {
	t := newTally(name, c)
	samples := newSampler(c, level)
	for _, a := range arrivals {
		samples.upTo(a.At, l.Level)
		t.offered(a)
		if l.Allow(a.At) {
			t.allowed(a, a.At)
		} else {
			t.rejected(a)
		}
	}
	samples.upTo(c.Duration, l.Level)
	t.Level = samples.level
	return t.done()
}

// A sampler records a level every step, in time order.
type sampler struct {
	level Level
	next  time.Duration
	end   time.Duration
}

func newSampler(c Config, level Level) *sampler {
	level.Step = sampleStep(c)
	return &sampler{level: level, end: c.Duration}
}

// upTo records the samples due at or before t, reading each from read. A
// limiter's sample at t is so taken before it decides a request at t.
func (s *sampler) upTo(t time.Duration, read func(time.Duration) float64) {
	for s.next <= t && s.next <= s.end {
		s.level.Values = append(s.level.Values, read(s.next))
		s.next += s.level.Step
	}
}
