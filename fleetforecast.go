package pacer

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/pacer-go/pacer/store"
)

// Fleet forecasts: on a shared store that reads levels, the alerter's
// check (at most once a forecastCheck, on its own goroutine) reads each
// budget's fleet-wide spend from the store's ledger (FleetSpent), and
// forecasts from the fleet's rate between its readings. Stats shows the
// last reading, and does no I/O for it.

// fleetReadingsKept is how many readings a budget keeps: one a
// forecastCheck over forecastSpan, and one more.
const fleetReadingsKept = int(forecastSpan/forecastCheck) + 1

// fleetReadings are the last readings of a budget's fleet-wide spend in
// its current period. The zero value has none; its methods are safe for
// concurrent use.
type fleetReadings struct {
	mu     sync.Mutex
	period time.Time // the end of the period they are of
	n      int       // how many of at and spent hold readings, the latest last
	at     [fleetReadingsKept]time.Time
	spent  [fleetReadingsKept]float64 // in the budget's unit, reservations included
}

// add keeps a reading of spent at now, in the period ending at end: a
// new period drops the last one's readings.
func (f *fleetReadings) add(now, end time.Time, spent float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.period.Equal(end) {
		f.period, f.n = end, 0
	}
	if f.n == fleetReadingsKept {
		copy(f.at[:], f.at[1:])
		copy(f.spent[:], f.spent[1:])
		f.n--
	}
	f.at[f.n], f.spent[f.n] = now, spent
	f.n++
}

// describe sets ws's fleet figures from the readings of its period: the
// last one, the rate from the oldest within forecastSpan of it, and when,
// at that rate, the fleet's spend reaches the Limit.
func (f *fleetReadings) describe(ws *WorkloadStats) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 || ws.PeriodEnd.IsZero() || !f.period.Equal(ws.PeriodEnd) {
		return
	}
	last := f.n - 1
	ws.FleetSpent, ws.FleetRead = f.spent[last], f.at[last]
	first := 0
	for first < last && f.at[last].Sub(f.at[first]) > forecastSpan {
		first++
	}
	window := f.at[last].Sub(f.at[first])
	if window <= 0 {
		return
	}
	ws.FleetSpendRate = max(0, f.spent[last]-f.spent[first]) / window.Seconds()
	ws.FleetSpendWindow = window
	switch left := ws.Limit - ws.FleetSpent; {
	case left <= 0:
		ws.FleetRunsOut = ws.FleetRead
	case ws.FleetSpendRate > 0:
		ws.FleetRunsOut = ws.FleetRead.Add(time.Duration(min(math.Ceil(left/ws.FleetSpendRate*float64(time.Second)), float64(store.LongestWait))))
	}
}

// readFleet reads w's fleet-wide spend from a shared store that reads
// levels, keeps it, and sets ws's fleet figures. It waits for the store,
// at most the store timeout: the alerter's check calls it, never a call.
// A store that cannot answer leaves the last readings as they were.
func (t *Transport) readFleet(w *workloadState, ws *WorkloadStats, now time.Time) {
	if t.guard == nil || ws.PeriodEnd.IsZero() {
		return
	}
	spent, err := t.FleetSpent(context.Background(), w.name)
	if err == nil {
		w.fleet.add(now, ws.PeriodEnd, spent)
	}
	w.fleet.describe(ws)
}
