package bench

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/pacer-go/pacer"
)

// An oracle is a client that knows what pacer cannot: the server's rate
// the moment its first refusal comes back, or the share an unpaced
// neighbour leaves. Run in a cell of the virtual matrix on the same draws
// as pacer, it tells a bound from a shortfall: where the oracle misses
// issue 25's target too, no client that starts from what pacer is told
// can meet it; where the oracle meets it and pacer does not, the gap is
// pacer's. With PACER_ORACLES=n, TestOracles runs each oracle and pacer on
// n draws of their cells and prints the means side by side:
//
//	PACER_ORACLES=8 go test -run TestOracles -v ./bench
func TestOracles(t *testing.T) {
	n := drawsFromEnv(t, "PACER_ORACLES", "the number of draws each oracle is run on")
	type row struct {
		cell, how string
		instead   func(wire http.RoundTripper) http.RoundTripper
		got       [3]float64 // goodput, refused per accepted, the neighbour's refused
	}
	var rows []row
	byName := map[string]VCell{}
	for _, c := range VCells(false, 20*time.Second) {
		byName[c.Name()] = c
		serverRate, _ := c.Family.rate()
		configured := serverRate * float64(c.Situation.Scale)
		switch {
		case c.Family.Path == PathConn && c.Situation.Scale > 1:
			cap, told := c.Family.Nginx.Conn, c.Family.Nginx.Conn*c.Situation.Scale
			rows = append(rows, row{cell: c.Name(), how: fmt.Sprintf("%d in flight until refused, then %d", told, cap),
				instead: func(w http.RoundTripper) http.RoundTripper { return newCapUntilRefused(w, told, cap) }})
		case c.Family.Path == PathConn || c.Net.Delay == 0:
			// Loopback and the busy host: pacer meets the rate cells' targets.
		case c.Situation.Scale > 1:
			// Pacer's blind pace, then the most of the limit that a fixed
			// pace spends with under 1 % refused on every family over the
			// route (the limit-known rows).
			blind, then := blindPace(configured), 0.97*serverRate
			rows = append(rows, row{cell: c.Name(), how: fmt.Sprintf("%.0f/s until refused, then %.0f/s", blind, then),
				instead: func(w http.RoundTripper) http.RoundTripper { return newPaceUntilRefused(w, blind, then) }})
		case c.Situation.NeighbourShare > 0:
			left := serverRate * (1 - c.Situation.NeighbourShare)
			for _, share := range []float64{1, 0.97, 0.95} {
				p := share * left
				rows = append(rows, row{cell: c.Name(), how: fmt.Sprintf("%.0f/s, %.0f %% of what the neighbour leaves", p, 100*share),
					instead: func(w http.RoundTripper) http.RoundTripper { return newPaceUntilRefused(w, p, p) }})
			}
			// Pacer's blind pace, which the unseen neighbour overfills,
			// until the first refusal comes back; then 97 % of what the
			// neighbour leaves: the best a client that starts blind can do.
			blind, then := blindPace(configured), 0.97*left
			rows = append(rows, row{cell: c.Name(), how: fmt.Sprintf("%.0f/s until refused, then %.0f/s", blind, then),
				instead: func(w http.RoundTripper) http.RoundTripper { return newPaceUntilRefused(w, blind, then) }})
		default:
			for _, share := range []float64{0.95, 0.96, 0.97} {
				p := share * serverRate
				rows = append(rows, row{cell: c.Name(), how: fmt.Sprintf("%.0f/s, the limit known", p),
					instead: func(w http.RoundTripper) http.RoundTripper { return newPaceUntilRefused(w, p, p) }})
			}
			// Pacer's start — its blind pace and burst, before any count
			// is back — then 96 % of the limit: a shortfall of pacer's
			// below this one is in what it makes of the counts.
			blind, burst := blindStart(configured)
			then := 0.96 * serverRate
			rows = append(rows, row{cell: c.Name(), how: fmt.Sprintf("%.0f/s, burst %.0f, until the first answer, then %.0f/s", blind, burst, then),
				instead: func(w http.RoundTripper) http.RoundTripper { return newStartThen(w, blind, burst, then) }})
		}
	}
	var names []string // the cells pacer is run in, once each
	pacers := map[string]*[3]float64{}
	for _, r := range rows {
		if pacers[r.cell] == nil {
			pacers[r.cell] = new([3]float64)
			names = append(names, r.cell)
		}
	}
	tally := func(to *[3]float64, r VResult) {
		s := r.Score()
		to[0] += s.Goodput() / float64(n)
		to[1] += s.RefusedPerAccepted() / float64(n)
		to[2] += r.NeighbourRefused() / float64(n)
	}
	for draw := range n {
		oracles := make([]VCell, len(rows))
		for i, r := range rows {
			oracles[i] = byName[r.cell]
			oracles[i].Draw, oracles[i].Instead = draw, r.instead
		}
		for i, res := range VirtualMatrix(t, oracles) {
			tally(&rows[i].got, res)
		}
		cells := make([]VCell, len(names))
		for i, name := range names {
			cells[i] = byName[name]
			cells[i].Draw = draw
		}
		for i, res := range VirtualMatrix(t, cells) {
			tally(pacers[names[i]], res)
		}
	}
	if t.Failed() || !testing.Verbose() {
		return
	}
	fmt.Printf("\nOracles beside pacer in the virtual matrix, %d draws: mean goodput · refused per accepted (· the neighbour's refused per call)\n\n| cell | oracle | oracle | pacer |\n|---|---|---:|---:|\n", n)
	for _, r := range rows {
		p := *pacers[r.cell]
		if byName[r.cell].Situation.NeighbourShare > 0 {
			fmt.Printf("| %s | %s | %.3f · %.4f · %.4f | %.3f · %.4f · %.4f |\n", r.cell, r.how, r.got[0], r.got[1], r.got[2], p[0], p[1], p[2])
		} else {
			fmt.Printf("| %s | %s | %.3f · %.4f | %.3f · %.4f |\n", r.cell, r.how, r.got[0], r.got[1], p[0], p[1])
		}
	}
}

// blindPace is the pace pacer starts at, calls a second, configured at
// configured a second with its defaults: as its Stats say, not a copy of
// its headroom.
func blindPace(configured float64) float64 {
	rate, _ := blindStart(configured)
	return rate
}

// blindStart is the pace and burst pacer starts at, configured at
// configured a second with its defaults, as its Stats say.
func blindStart(configured float64) (rate, burst float64) {
	tr := pacer.New(http.DefaultTransport, pacer.WithLimit(pacer.PerSecond(int(configured))))
	s := tr.Stats().Scopes[0]
	return s.Rate, s.Burst
}

// paceUntil sends at one pace until the answer that switches it comes
// back, then at another, one call at a time (a burst of 1 wastes nothing
// on a server that lets bursts through, and draws no refusal from one that
// does not). Calls cleared at the first pace before that answer came back
// go; none cleared after it does at that pace.
type paceUntil struct {
	next          http.RoundTripper
	before, after *rate.Limiter
	switches      func(*http.Response) bool
	switched      atomic.Bool
}

// newPaceUntilRefused paces at before until the first refusal comes back,
// then at after: with after the server's rate, the best any client that
// starts at before can do.
func newPaceUntilRefused(next http.RoundTripper, before, after float64) *paceUntil {
	return &paceUntil{next: next, before: rate.NewLimiter(rate.Limit(before), 1), after: rate.NewLimiter(rate.Limit(after), 1),
		switches: func(resp *http.Response) bool {
			return resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable
		}}
}

// newStartThen paces as pacer starts, at before with a burst of burst,
// until the first answer comes back, then at then: the best a client that
// starts as pacer does, blind, can do once it hears the server.
func newStartThen(next http.RoundTripper, before, burst, then float64) *paceUntil {
	return &paceUntil{next: next, before: rate.NewLimiter(rate.Limit(before), int(burst)), after: rate.NewLimiter(rate.Limit(then), 1),
		switches: func(*http.Response) bool { return true }}
}

func (o *paceUntil) RoundTrip(req *http.Request) (*http.Response, error) {
	if !o.switched.Load() {
		if err := wait(req.Context(), o.before); err != nil {
			return nil, err
		}
	}
	if o.switched.Load() {
		if err := wait(req.Context(), o.after); err != nil {
			return nil, err
		}
	}
	resp, err := o.next.RoundTrip(req)
	if err == nil && o.switches(resp) {
		o.switched.Store(true)
	}
	return resp, err
}

// wait waits for lim within ctx. A wait that would end past ctx's
// deadline waits the deadline out: returned at once, the workload's
// callers would call again at once, and the bubble's clock would never
// move.
func wait(ctx context.Context, lim *rate.Limiter) error {
	if err := lim.Wait(ctx); err != nil {
		<-ctx.Done()
		return err
	}
	return nil
}

// capUntilRefused holds at most before calls in flight until the first
// refusal comes back, then at most after: the best any client that starts
// at the configured cap can do.
type capUntilRefused struct {
	next    http.RoundTripper
	slots   chan struct{}
	owed    atomic.Int64 // slots still to be kept back as calls end, once refused
	after   int
	refused atomic.Bool
}

func newCapUntilRefused(next http.RoundTripper, before, after int) *capUntilRefused {
	c := &capUntilRefused{next: next, slots: make(chan struct{}, before), after: after}
	for range before {
		c.slots <- struct{}{}
	}
	return c
}

func (c *capUntilRefused) RoundTrip(req *http.Request) (*http.Response, error) {
	select {
	case <-c.slots:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	resp, err := c.next.RoundTrip(req)
	if err == nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) && !c.refused.Swap(true) {
		c.owed.Store(int64(cap(c.slots) - c.after))
	}
	if c.owed.Add(-1) < 0 {
		c.owed.Add(1)
		c.slots <- struct{}{}
	}
	return resp, err
}
