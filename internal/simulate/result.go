package simulate

import (
	"slices"
	"time"
)

// A Report is the outcome of one run: the config it ran and one Result per
// limiter, in the order token bucket, fixed window, sliding window, pacer.
type Report struct {
	Config  Config
	Pace    Pace // what pacer made of the limit it was told
	Results []Result
}

// A Result is what one limiter did with the run's traffic.
type Result struct {
	Name     string // "token-bucket", "fixed-window", "sliding-window" or "pacer"
	Offered  int    // requests that arrived
	Allowed  int    // requests that went out within the run
	Rejected int    // requests turned away; always 0 for pacer, which queues them
	// BusiestSecond is the most requests that went out in one second of the
	// run, counting whole seconds [s, s+1) from the start.
	BusiestSecond int

	OfferedPerSecond []int // by second of the run, all clients together
	AllowedPerSecond []int
	Level            Level
	Clients          []ClientResult // one per client, in client order

	Queue *QueueStats // pacer only: what its waiting did
}

// A ClientResult is one client's share of a Result.
type ClientResult struct {
	Offered, Allowed, Rejected int
	Queued                     int // pacer only: still waiting when the run ended
}

// Level is the limiter's state sampled every Step from 0 up to the end of
// the run: Values[i] is the state at i × Step, just before any request
// arriving at that instant is decided.
type Level struct {
	Label  string  // what is measured, for the chart
	Limit  float64 // the most it can be (capacity, allowance); 0 when unbounded
	Step   time.Duration
	Values []float64
}

// QueueStats describes pacer's waiting line. Delays are those of the
// requests sent within the run, from arrival to send; percentiles are by
// nearest rank.
type QueueStats struct {
	DelayP50, DelayP99, DelayMax time.Duration
	QueuedAtEnd                  int // arrived but not yet sent when the run ended
}

// tally accumulates a Result as requests are decided.
type tally struct {
	Result
}

func newTally(name string, c Config) *tally {
	seconds := int(c.Duration / time.Second)
	return &tally{Result{
		Name:             name,
		OfferedPerSecond: make([]int, seconds),
		AllowedPerSecond: make([]int, seconds),
		Clients:          make([]ClientResult, c.Clients),
	}}
}

func (t *tally) offered(a Arrival) {
	t.Offered++
	t.OfferedPerSecond[a.At/time.Second]++
	t.Clients[a.Client].Offered++
}

// allowed counts a's request as sent at the given time, within the run.
func (t *tally) allowed(a Arrival, at time.Duration) {
	t.Allowed++
	t.AllowedPerSecond[at/time.Second]++
	t.Clients[a.Client].Allowed++
}

func (t *tally) rejected(a Arrival) {
	t.Rejected++
	t.Clients[a.Client].Rejected++
}

func (t *tally) done() Result {
	t.BusiestSecond = slices.Max(t.AllowedPerSecond)
	return t.Result
}

// sampleStep is the spacing of the Level samples: 100 ms, or coarser for a
// long run, so that a chart gets at most about 600 points a series.
func sampleStep(c Config) time.Duration {
	return max(100*time.Millisecond, (c.Duration / 600).Round(time.Millisecond))
}

// nearestRank returns the p-th quantile (0 < p ≤ 1) of sorted values: the
// smallest value at or above which lies a share p of them. Zero if empty.
func nearestRank(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.999999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
