package pacer

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/store"
)

// sharedMemory is a store.Memory behind the guard, as a shared store is.
type sharedMemory struct{ *store.Memory }

// Three processes share a budget of 300 an hour, each spending one call
// every five seconds: the fleet spends it in about 8m20s, where each
// process alone would take 25 minutes. The alerter reads the fleet's
// spend from the store at each check, and the forecast alert, once its
// readings span five minutes, says the fleet's: the budget runs out about
// 8m20s in, not 24m. Stats shows the last reading, without I/O.
func TestForecastAlertIsTheFleets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var heard forecastAlerts
		trs := backfillFleet(t, sharedMemory{store.NewMemory()}, 3, &heard)
		start := time.Now()
		spendAlongside(t, 30*time.Minute, trs...)

		alerts := heard.forecasts()
		if len(alerts) != 1 || len(heard.events.of(observe.EventBudgetForecast)) != 1 {
			t.Fatalf("%d forecast alerts and %d events in the period, want one each for the fleet: %v",
				len(alerts), len(heard.events.of(observe.EventBudgetForecast)), alerts)
		}
		// The check at 300s: about 182 spent by the fleet, at about 0.6 a
		// second since its first reading, so 118 left last about 197 s.
		a := alerts[0]
		if in := a.RunsOut.Sub(start); !a.First.Equal(start.Add(300*time.Second)) || in < 8*time.Minute || in > 8*time.Minute+40*time.Second {
			t.Errorf("alert at %v that the budget runs out at %v; want at 5m0s that it runs out about 8m17s in, as the fleet spends it",
				a.First.Sub(start), in)
		}
		// The last check was the last admitted call's, at 8m0s: about
		// 291 spent by the fleet, 100 of them by this process.
		for _, w := range trs[0].Stats().Workloads {
			if w.Name != "backfill" {
				continue
			}
			out := w.FleetRunsOut.Sub(start)
			if w.FleetSpent < 285 || w.FleetSpent > 300 || !w.FleetRead.Equal(start.Add(8*time.Minute)) || w.Spent != 100 ||
				out < 8*time.Minute || out > 8*time.Minute+40*time.Second || w.FleetSpendWindow != 8*time.Minute {
				t.Errorf("Stats: spent %v, the fleet %v read at %v over %v, runs out at %v; want this process's 100, "+
					"the fleet's about 291 read at 8m0s over the 8m0s since its first reading, running out about 8m15s in",
					w.Spent, w.FleetSpent, w.FleetRead.Sub(start), w.FleetSpendWindow, out)
			}
		}
	})
}
