package pacer

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/period"
	"github.com/pacer-go/pacer/store"
)

// alertLog keeps the alerts it is given, with the time each came.
type alertLog struct {
	mu     sync.Mutex
	alerts []observe.Alert
	at     []time.Time
}

func (l *alertLog) notify(a observe.Alert) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.alerts = append(l.alerts, a)
	l.at = append(l.at, time.Now())
}

// An eleven-hour flood of throttled calls makes one alert per interval —
// the first at once, the last flushing the tail when its interval ends —
// and the alerts' counts add up to every throttled call.
func TestAlertsDoNotFlood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			flood    = 11 * time.Hour
			calls    = 50_000
			interval = time.Hour
		)
		log := &alertLog{}
		rec := &recorder{}
		tr := New(&stubAPI{clock: clock.System}, WithLimit(Limit{Count: 1, Per: 24 * time.Hour, Burst: 1}),
			WithFailFast(), WithObserver(rec), WithAlerts(interval, log.notify))
		mustNotErr(t, tr.Err())
		start := time.Now().Add(flood / calls) // the first call is sent, the second throttled
		for range calls {
			get(tr, context.Background(), "http://api.test/")
			time.Sleep(flood / calls)
		}
		time.Sleep(2 * interval) // the tail is sent, and the sender ends
		synctest.Wait()

		throttled := int64(rec.kinds()[observe.EventThrottled])
		if throttled != calls-1 {
			t.Fatalf("%d calls throttled, want all but the first of %d", throttled, calls)
		}
		if want := int(flood/interval) + 1; len(log.alerts) != want {
			t.Fatalf("%d alerts, want %d", len(log.alerts), want)
		}
		var sum int64
		for i, a := range log.alerts {
			sum += a.Count
			if want := start.Add(time.Duration(i) * interval); !log.at[i].Equal(want) {
				t.Errorf("alert %d came at %v, want %v", i, log.at[i].Sub(start), want.Sub(start))
			}
			if a.Scope != DefaultScope || a.Count != a.Throttled || a.Rejected != 0 {
				t.Errorf("alert %d = %+v", i, a)
			}
			if a.First.After(a.Last) || a.Last.After(log.at[i]) || i > 0 && !a.First.After(log.alerts[i-1].Last) {
				t.Errorf("alert %d covers %v to %v, which does not follow the one before", i, a.First.Sub(start), a.Last.Sub(start))
			}
		}
		if first := log.alerts[0]; first.Count != 1 {
			t.Errorf("the first alert counts %d, want 1: it is sent at once", first.Count)
		}
		if s, want := log.alerts[1].String(), `pacer: scope "default" throttled 4545 times (4545 refused here, 0 rejected by the provider)`; !strings.HasPrefix(s, want) {
			t.Errorf("the second alert says %q, want it to start %q", s, want)
		}
		if sum != throttled {
			t.Errorf("the alerts count %d throttled calls, want %d", sum, throttled)
		}
	})
}

// Rejections by the provider count as well, on every scope the call was
// charged to, and each scope has its own interval.
func TestAlertsCountRejectionsPerScope(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &alertLog{}
		api := &scriptedAPI{steps: []scripted{{http.StatusTooManyRequests, nil}, {http.StatusServiceUnavailable, nil}}}
		tr := New(api, WithoutRetry(), WithScope(Scope{Name: "account", Limit: PerSecond(100)}),
			WithRoute(func(_ *http.Request, ch []Charge) []Charge { return append(ch, Charge{Scope: "account"}) }),
			WithAlerts(time.Minute, log.notify))
		mustNotErr(t, tr.Err())
		for range 2 {
			get(tr, context.Background(), "http://api.test/")
			time.Sleep(time.Second) // past the AIMD cut's emptied bucket
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		log.mu.Lock()
		defer log.mu.Unlock()
		got := map[string][2]int64{}
		for _, a := range log.alerts {
			c := got[a.Scope]
			got[a.Scope] = [2]int64{c[0] + a.Rejected, c[1] + 1}
		}
		for _, scope := range []string{DefaultScope, "account"} {
			if got[scope] != [2]int64{2, 2} {
				t.Errorf("scope %q: %d rejections in %d alerts, want 2 in 2 (one at once, one when the minute ends)", scope, got[scope][0], got[scope][1])
			}
		}
	})
}

func TestAlertsRefuseABadConfiguration(t *testing.T) {
	for _, opt := range []Option{WithAlerts(0, func(observe.Alert) {}), WithAlerts(time.Minute, nil)} {
		if New(nil, opt).Err() == nil {
			t.Error("no configuration error")
		}
	}
}

// Two Transports sharing one store send one alert per interval between
// them; the one that lost sends its counts when it next wins.
func TestAlertsAreDecidedByTheSharedStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &alertLog{}
		shared := store.NewMemory()
		var trs [2]*Transport
		for i := range trs {
			trs[i] = New(&stubAPI{clock: clock.System}, WithStore(shared, store.Policy{}), WithFailFast(),
				WithLimit(Limit{Count: 1, Per: 24 * time.Hour, Burst: 1}), WithAlerts(time.Minute, log.notify))
		}
		// The bucket is shared too: one call is sent, the rest throttled.
		const calls = 600
		for i := range calls {
			get(trs[i%2], context.Background(), "http://api.test/")
			time.Sleep(time.Second)
		}
		time.Sleep(3 * time.Minute)
		synctest.Wait()
		var sum int64
		for i, a := range log.alerts {
			sum += a.Count
			if i > 0 && log.at[i].Sub(log.at[i-1]) < time.Minute {
				t.Errorf("alerts %d and %d came %v apart, less than the interval", i-1, i, log.at[i].Sub(log.at[i-1]))
			}
		}
		if sum != calls-1 {
			t.Errorf("the alerts count %d throttled calls, want %d", sum, calls-1)
		}
		t.Logf("%d alerts", len(log.alerts))
		if n := len(log.alerts); n > 10+2 {
			t.Errorf("%d alerts for a ten-minute flood with a one-minute interval", n)
		}
	})
}

// forecastAlerts is what a forecast alert test heard.
type forecastAlerts struct {
	alerts alertLog
	events recorder
}

// forecasts returns the forecast alerts heard, leaving out the thresholds'.
func (h *forecastAlerts) forecasts() []observe.Alert {
	h.alerts.mu.Lock()
	defer h.alerts.mu.Unlock()
	var out []observe.Alert
	for _, a := range h.alerts.alerts {
		if !a.RunsOut.IsZero() {
			out = append(out, a)
		}
	}
	return out
}

// spendAlongside runs a call every five seconds on each Transport in turn
// for a while, as a fleet's backfill does, and lets the alerts be sent.
func spendAlongside(t *testing.T, for_ time.Duration, trs ...*Transport) {
	t.Helper()
	ctx := ContextWithWorkload(context.Background(), "backfill")
	start := time.Now()
	for time.Since(start) < for_ {
		for _, tr := range trs {
			get(tr, ctx, "http://api.test/") // refused once spent
		}
		time.Sleep(5 * time.Second)
	}
	synctest.Wait()
}

// A budget of 300 an hour spent at one call every five seconds runs out
// 35 minutes early: once the rate has five minutes behind it, the alerter
// raises an EventBudgetForecast and an alert saying when, once per period
// — and, for a fleet sharing a store, once for the whole fleet. (On a
// store.Memory shared in one process, which no guard stands in front of,
// each Transport forecasts by its own count, and the fleet's calls exhaust
// the budget sooner than any one foresees; a shared store gives the
// fleet's forecast: TestForecastAlertIsTheFleets.)
func TestForecastAlertOncePerPeriod(t *testing.T) {
	for _, instances := range []int{1, 3} {
		t.Run(fmt.Sprintf("instances=%d", instances), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var heard forecastAlerts
				trs := backfillFleet(t, store.NewMemory(), instances, &heard)
				start := time.Now()
				spendAlongside(t, 2*time.Hour, trs...)

				events, alerts := heard.events.of(observe.EventBudgetForecast), heard.forecasts()
				if len(events) != 2 || len(alerts) != 2 {
					t.Fatalf("%d forecast events, %d alerts over two periods; want one each a period: %v", len(events), len(alerts), alerts)
				}
				// The first check with five minutes behind its rate is at
				// 300s: 61 calls each, 239 left, at 61/300 a second.
				a, e := alerts[0], events[0]
				at := start.Add(300 * time.Second)
				left, rate := 239.0, 61.0/300
				in := time.Duration(left / rate * float64(time.Second))
				end := start.Add(time.Hour)
				if a.Workload != "backfill" || !a.First.Equal(at) || !closeTo(a.RunsOut.Sub(at), in) || !a.PeriodEnd.Equal(end) || a.Scope != "" || a.Percent != 0 {
					t.Fatalf("alert %+v, want one at %v that it runs out in %v, before %v", a, at.Sub(start), in, end.Sub(start))
				}
				if e.Workload != "backfill" || !closeTo(e.Wait, end.Sub(at.Add(in))) || math.Abs(e.Rate-61.0/300) > 1e-12 {
					t.Fatalf("event %+v, want it %v early at %v a second", e, end.Sub(at.Add(in)), 61.0/300)
				}
				if s, want := a.String(), `pacer: workload "backfill"'s budget runs out at 2000-01-01T00:24:35Z at its current rate, 35m25s before its period ends`; !strings.HasPrefix(s, want) {
					t.Errorf("the alert says %q, want it to start %q", s, want)
				}
				if second := alerts[1]; !second.PeriodEnd.After(end) {
					t.Errorf("the second alert is for the period ending %v, want the next period's", second.PeriodEnd.Sub(start))
				}
			})
		})
	}
}

// backfillFleet returns n Transports on store s, each with a workload
// backfill of 300 calls an hour, telling heard their events and alerts.
func backfillFleet(t *testing.T, s store.Store, n int, heard *forecastAlerts) []*Transport {
	t.Helper()
	var trs []*Transport
	for range n {
		tr := New(&stubAPI{clock: clock.System}, WithStore(s, store.Policy{}),
			WithWorkload("backfill", Workload{Budget: Budget{Limit: 300, Per: time.Hour}}),
			WithObserver(&heard.events), WithAlerts(time.Hour, heard.alerts.notify))
		mustNotErr(t, tr.Err())
		trs = append(trs, tr)
	}
	return trs
}

// A budget forecast to run out less early than its margin raises nothing,
// and a negative margin is an error that says what to give instead.
func TestForecastAlertMargin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var heard forecastAlerts
		tr := New(&stubAPI{clock: clock.System},
			WithWorkload("backfill", Workload{Budget: Budget{Limit: 300, Per: time.Hour, ForecastMargin: 40 * time.Minute}}),
			WithObserver(&heard.events), WithAlerts(time.Hour, heard.alerts.notify))
		mustNotErr(t, tr.Err())
		spendAlongside(t, 30*time.Minute, tr) // forecast 35 minutes early, at most
		if n := len(heard.events.of(observe.EventBudgetForecast)); n != 0 || len(heard.forecasts()) != 0 {
			t.Fatalf("%d events and %d alerts within a 40-minute margin, want none", n, len(heard.forecasts()))
		}
	})
	err := New(nil, WithWorkload("w", Workload{Budget: Budget{Limit: 1, Per: time.Hour, ForecastMargin: -time.Minute}})).Err()
	if err == nil || !strings.Contains(err.Error(), "ForecastMargin -1m0s must not be negative; leave it 0") {
		t.Fatalf("a negative margin: %v", err)
	}
}

// A Transport without budgets looks for forecasts once, then never again:
// its calls pay one atomic load for them, not a reading of the clock.
func TestForecastAlerterWithoutBudgetsStopsLooking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(&stubAPI{clock: clock.System}, WithAlerts(time.Hour, func(observe.Alert) {}))
		mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		synctest.Wait()
		if a := tr.observers[0].(*alerter); a.nextForecast.Load() != noForecasts {
			t.Fatalf("the alerter looks again at %v, want never", time.Unix(0, a.nextForecast.Load()))
		}
	})
}

// A daily budget, calendar period, raises its forecast alert once a day:
// 300 a day at one call every 30 s runs out at about 02:16, nearly 22
// hours early, each day anew.
func TestForecastAlertOncePerCalendarDay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var heard forecastAlerts
		tr := New(&stubAPI{clock: clock.System},
			WithWorkload("backfill", Workload{Budget: Budget{Limit: 300, Period: period.Daily(0, 0, time.UTC)}}),
			WithObserver(&heard.events), WithAlerts(time.Hour, heard.alerts.notify))
		mustNotErr(t, tr.Err())
		ctx := ContextWithWorkload(context.Background(), "backfill")
		start := time.Now() // midnight
		for time.Since(start) < 48*time.Hour {
			get(tr, ctx, "http://api.test/")
			time.Sleep(30 * time.Second)
		}
		synctest.Wait()
		alerts := heard.forecasts()
		if len(alerts) != 2 || len(heard.events.of(observe.EventBudgetForecast)) != 2 {
			t.Fatalf("%d forecast alerts over two days, want one a day: %v", len(alerts), alerts)
		}
		for day, a := range alerts {
			// At 00:05, 11 calls over 300 s; the 289 left last 7881.8 s more.
			at := start.Add(time.Duration(day)*24*time.Hour + 5*time.Minute)
			left, rate := 289.0, 11.0/300
			runsOut := at.Add(time.Duration(left / rate * float64(time.Second)))
			if !a.First.Equal(at) || !closeTo(a.RunsOut.Sub(runsOut), 0) || !a.PeriodEnd.Equal(start.Add(time.Duration(day+1)*24*time.Hour)) {
				t.Errorf("day %d: alert %+v, want one at %v that it runs out at %v", day, a, at, runsOut)
			}
		}
	})
}
