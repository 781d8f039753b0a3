package pacerprom_test

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/observe/internal/observetest"
	pacerprom "github.com/pacer-go/pacer/observe/prometheus"
)

// The metrics, scraped through the HTTP handler, count what happened, and
// the gauges read the Transport's state; no key, URL or credential shows.
func TestMetricsThroughTheHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := pacerprom.New()
		tr := observetest.New(m)
		if err := tr.Err(); err != nil {
			t.Fatal(err)
		}
		m.Watch(tr)
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(m)
		open, err := observetest.Run(tr)
		if err != nil {
			t.Fatal(err)
		}

		srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		defer srv.Close()
		want := `
# HELP pacer_admitted_total Calls admitted and sent.
# TYPE pacer_admitted_total counter
pacer_admitted_total{scope="default",workload="batch"} 3
# HELP pacer_budget_exhausted_total Calls refused because their workload's spend budget was exhausted.
# TYPE pacer_budget_exhausted_total counter
pacer_budget_exhausted_total{workload="batch"} 1
# HELP pacer_budget_limit A workload's spend cap per period.
# TYPE pacer_budget_limit gauge
pacer_budget_limit{unit="requests",workload="batch"} 3
# HELP pacer_budget_spent What this process spent of its workload's budget in the current period.
# TYPE pacer_budget_spent gauge
pacer_budget_spent{unit="requests",workload="batch"} 3
# HELP pacer_cooldowns_total Pauses the provider imposed on a scope.
# TYPE pacer_cooldowns_total counter
pacer_cooldowns_total{scope="default"} 1
pacer_cooldowns_total{scope="key"} 1
# HELP pacer_in_flight Calls in flight, counted on scopes that cap concurrency.
# TYPE pacer_in_flight gauge
pacer_in_flight{scope="default",workload="batch"} 1
pacer_in_flight{scope="default",workload="default"} 0
pacer_in_flight{scope="key",workload="batch"} 0
pacer_in_flight{scope="key",workload="default"} 0
# HELP pacer_provider_rejections_total Calls the provider rejected: 429, 503 or a back-pressure status.
# TYPE pacer_provider_rejections_total counter
pacer_provider_rejections_total{scope="default",status="429",workload="batch"} 1
pacer_provider_rejections_total{scope="key",status="429",workload="batch"} 1
# HELP pacer_retries_total Calls sent again.
# TYPE pacer_retries_total counter
pacer_retries_total{scope="default",workload="batch"} 1
# HELP pacer_throttled_total Calls refused by pacer because their wait could not be made.
# TYPE pacer_throttled_total counter
pacer_throttled_total{scope="default",workload="default"} 1
# HELP pacer_tokens What the scope's lowest bucket, of every key, holds now (in-memory store only).
# TYPE pacer_tokens gauge
pacer_tokens{scope="default",unit="requests"} 0
pacer_tokens{scope="key",unit="requests"} 0
`
		names := []string{"pacer_admitted_total", "pacer_budget_exhausted_total", "pacer_budget_limit", "pacer_budget_spent",
			"pacer_cooldowns_total", "pacer_in_flight", "pacer_provider_rejections_total", "pacer_retries_total",
			"pacer_throttled_total", "pacer_tokens"}
		if err := testutil.ScrapeAndCompare(srv.URL, strings.NewReader(want), names...); err != nil {
			t.Error(err)
		}

		body := scrape(t, srv.URL)
		// The 429 cut the rate to 0.85/s and emptied the bucket: the retry,
		// after the pause, and the next call each waited 1/0.85 s.
		for _, line := range []string{
			`pacer_wait_seconds_count{scope="default",workload="batch"} 2`,
			`pacer_wait_seconds_bucket{scope="default",workload="batch",le="1"} 0`,
			`pacer_wait_seconds_bucket{scope="default",workload="batch",le="2.5"} 2`,
			`pacer_waiting{scope="default"} 0`,
			`pacer_cooldown_remaining_seconds{scope="default"} 0`,
			`pacer_budget_reserved{unit="requests",workload="batch"} 0`,
			`pacer_budget_period_end_seconds{workload="batch"} 9.466884e+08`, // 2000-01-01 01:00 UTC: an hour after the first spend
		} {
			if !strings.Contains(body, line+"\n") {
				t.Errorf("the scrape lacks %q:\n%s", line, body)
			}
		}
		for _, leak := range observetest.Leaks {
			if strings.Contains(body, leak) {
				t.Errorf("the scrape shows %q", leak)
			}
		}
		open.Body.Close()
		if body := scrape(t, srv.URL); !strings.Contains(body, `pacer_in_flight{scope="default",workload="batch"} 0`) {
			t.Errorf("the closed call is still in flight:\n%s", body)
		}
	})
}

// While a call waits, the gauges say what holds it back and since when.
func TestMetricsSayWhyCallsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := pacerprom.New()
		tr := observetest.Paused(m)
		m.Watch(tr)
		start := time.Now()
		done := observetest.Wait(tr)
		want := fmt.Sprintf(`
# HELP pacer_oldest_wait_start_seconds When the call waiting longest on the scope began to wait, in Unix seconds.
# TYPE pacer_oldest_wait_start_seconds gauge
pacer_oldest_wait_start_seconds{scope="default"} %g
# HELP pacer_waiting_by_reason Calls waiting for admission, by what holds them back: rate, concurrency, reserve or cooldown.
# TYPE pacer_waiting_by_reason gauge
pacer_waiting_by_reason{reason="cooldown",scope="default"} 1
`, float64(start.Unix()))
		if err := testutil.CollectAndCompare(m, strings.NewReader(want), "pacer_oldest_wait_start_seconds", "pacer_waiting_by_reason"); err != nil {
			t.Error(err)
		}
		if err := done(); err != nil {
			t.Fatal(err)
		}
		if n := testutil.CollectAndCount(m, "pacer_oldest_wait_start_seconds", "pacer_waiting_by_reason"); n != 0 {
			t.Errorf("%d series of waits once none waits, want 0", n)
		}
	})
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Before Watch, only the counters are reported; after it, a lint-clean
// set of metrics.
func TestMetricsLint(t *testing.T) {
	m := pacerprom.New(pacerprom.WithNamespace("api"))
	m.Watch(pacer.New(nil, pacer.WithObserver(m), pacer.WithLimit(pacer.PerSecond(10))))
	problems, err := testutil.CollectAndLint(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	if n := testutil.CollectAndCount(m, "api_rate"); n != 1 {
		t.Errorf("%d api_rate series, want 1 for the default scope", n)
	}
}

// The events that change a Transport's configuration or warn of trouble
// are counted too, each under labels the Transport's configuration bounds.
func TestMetricsCountWarningsAndChanges(t *testing.T) {
	m := pacerprom.New()
	for _, e := range []observe.Event{
		{Kind: observe.EventPaceChanged, Scope: "openai/requests", Workload: "batch", Rate: 8, Why: "the provider published its limit"},
		{Kind: observe.EventPaceChanged, Scope: "openai/requests", Workload: "default", Rate: 9},
		{Kind: observe.EventSlotHeld, Scope: "default", Wait: 10 * time.Minute},
		{Kind: observe.EventBodyNotReplayable, Workload: "batch"},
		{Kind: observe.EventLimitChanged, Scope: "default", Limit: observe.Limit{Count: 5, Per: time.Second}, Previous: observe.Limit{Count: 10, Per: time.Second}, Origin: observe.OriginSetLimit},
		{Kind: observe.EventLimitChanged, Scope: "default", Limit: observe.Limit{Count: 4, Per: time.Second}, Previous: observe.Limit{Count: 5, Per: time.Second}, Origin: observe.OriginStore},
		{Kind: observe.EventBudgetThreshold, Workload: "batch", Percent: 50},
		{Kind: observe.EventBudgetThreshold, Workload: "batch", Percent: 80},
		{Kind: observe.EventBudgetForecast, Workload: "batch", Wait: time.Hour, Rate: 0.5},
	} {
		m.Observe(e)
	}
	want := `
# HELP pacer_bodies_not_replayable_total Calls sent once because their body was too large to keep for a retry.
# TYPE pacer_bodies_not_replayable_total counter
pacer_bodies_not_replayable_total{workload="batch"} 1
# HELP pacer_budget_forecasts_total Times a workload's budget was forecast to run out more than its margin before its period ends.
# TYPE pacer_budget_forecasts_total counter
pacer_budget_forecasts_total{workload="batch"} 1
# HELP pacer_budget_thresholds_total Times a workload's budget crossed 50, 80 or 100 percent of its limit.
# TYPE pacer_budget_thresholds_total counter
pacer_budget_thresholds_total{percent="50",workload="batch"} 1
pacer_budget_thresholds_total{percent="80",workload="batch"} 1
# HELP pacer_limit_changes_total Runtime changes of a scope's configured limit.
# TYPE pacer_limit_changes_total counter
pacer_limit_changes_total{origin="set_limit",scope="default"} 1
pacer_limit_changes_total{origin="store",scope="default"} 1
# HELP pacer_pace_changes_total Times what the provider said changed a scope's pace.
# TYPE pacer_pace_changes_total counter
pacer_pace_changes_total{scope="openai/requests"} 2
# HELP pacer_slots_held_total Concurrency slots held longer than the slot-age alert allows.
# TYPE pacer_slots_held_total counter
pacer_slots_held_total{scope="default"} 1
`
	if err := testutil.CollectAndCompare(m, strings.NewReader(want), "pacer_bodies_not_replayable_total", "pacer_budget_forecasts_total", "pacer_budget_thresholds_total",
		"pacer_limit_changes_total", "pacer_pace_changes_total", "pacer_slots_held_total"); err != nil {
		t.Error(err)
	}
}

// During a backfill, the forecast gauges say what Stats say: the budget's
// spend rate and its window, when it runs out and how early, and the
// scope's backlog and how long it takes to drain.
func TestMetricsForecast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := pacerprom.New()
		tr, err := observetest.Backfill(m)
		if err != nil {
			t.Fatal(err)
		}
		m.Watch(tr)
		start, release := observetest.RunBackfill(tr)
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(m)
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, f := range families {
			for _, mm := range f.GetMetric() {
				got[f.GetName()] = mm.GetGauge().GetValue()
			}
		}
		for name, want := range map[string]float64{
			"pacer_budget_spend_rate":             observetest.BackfillRate,
			"pacer_budget_spend_window_seconds":   observetest.BackfillWindow.Seconds(),
			"pacer_budget_runs_out_seconds":       float64(start.Unix()) + observetest.BackfillRunsOut,
			"pacer_budget_runs_out_early_seconds": observetest.BackfillEarly,
			"pacer_backlog":                       observetest.BackfillBacklog,
			"pacer_backlog_drain_seconds":         observetest.BackfillDrain.Seconds(),
		} {
			if v, ok := got[name]; !ok || math.Abs(v-want) > 1e-3 {
				t.Errorf("%s = %v (reported: %v), want %v", name, v, ok, want)
			}
		}
		if err := release(); err != nil {
			t.Fatal(err)
		}
	})
}

// A reconciliation's drift is a gauge per group, its failures a counter.
func TestMetricsOfReconciliation(t *testing.T) {
	m := pacerprom.New()
	for _, e := range []observe.Event{
		{Kind: observe.EventBudgetDrift, Scope: "project:proj_1", Amount: 0.25, Percent: 25},
		{Kind: observe.EventBudgetDrift, Scope: "project:proj_1", Amount: -0.5, Percent: -10},
		{Kind: observe.EventReconcileFailed, Scope: "api_key:key_1"},
	} {
		m.Observe(e)
	}
	want := `
# HELP pacer_budget_drift What the provider billed a group (a project, key or model) less what pacer charged its workloads, in the budget's unit, as a reconciliation last reported it.
# TYPE pacer_budget_drift gauge
pacer_budget_drift{group="project:proj_1"} -0.5
# HELP pacer_reconcile_failures_total Reconciliations whose usage or cost report could not be read.
# TYPE pacer_reconcile_failures_total counter
pacer_reconcile_failures_total{group="api_key:key_1"} 1
`
	if err := testutil.CollectAndCompare(m, strings.NewReader(want), "pacer_budget_drift", "pacer_reconcile_failures_total"); err != nil {
		t.Error(err)
	}
}

// A long window the provider reports is a gauge of the share spent and one
// of the time until it reopens.
func TestMetricsLongWindows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := pacerprom.New()
		tr, err := observetest.LongWindows(m)
		if err != nil {
			t.Fatal(err)
		}
		m.Watch(tr)
		want := fmt.Sprintf(`
# HELP pacer_window_reset_seconds How long until a long window reopens.
# TYPE pacer_window_reset_seconds gauge
pacer_window_reset_seconds{scope="default",window="5h"} %v
# HELP pacer_window_used_ratio The share of a long window (an hour or more) the provider says is spent.
# TYPE pacer_window_used_ratio gauge
pacer_window_used_ratio{scope="default",window="5h"} %v
`, observetest.LongReset.Seconds(), observetest.LongUsed)
		if err := testutil.CollectAndCompare(m, strings.NewReader(want), "pacer_window_used_ratio", "pacer_window_reset_seconds"); err != nil {
			t.Error(err)
		}
	})
}

// A pool's members are series labelled by name: their state, their calls
// and refusals, and when a parked one is tried again; never what they
// apply.
func TestMetricsOfPoolMembers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := pacerprom.New()
		tr, err := observetest.Pool(m)
		if err != nil {
			t.Fatal(err)
		}
		m.Watch(tr)
		until := float64(time.Now().Add(observetest.PoolParkedFor).UnixNano()) / 1e9
		want := fmt.Sprintf(`
# HELP pacer_member_calls_total Calls sent through a pool member.
# TYPE pacer_member_calls_total counter
pacer_member_calls_total{member="a"} 2
pacer_member_calls_total{member="b"} 1
# HELP pacer_member_parked_until_seconds When a parked pool member is tried again, in Unix seconds.
# TYPE pacer_member_parked_until_seconds gauge
pacer_member_parked_until_seconds{member="b"} %v
# HELP pacer_member_refused_total Calls sent through a pool member that the provider refused: 429, 503, 401, 402 or a spent quota.
# TYPE pacer_member_refused_total counter
pacer_member_refused_total{member="a"} 0
pacer_member_refused_total{member="b"} 1
# HELP pacer_member_rotated_away_total Calls a pool member refused that went on to another member.
# TYPE pacer_member_rotated_away_total counter
pacer_member_rotated_away_total{member="a"} 0
pacer_member_rotated_away_total{member="b"} 1
# HELP pacer_member_state 1 for a pool member's state (ready, parked, out, removed), 0 for the others.
# TYPE pacer_member_state gauge
pacer_member_state{member="a",state="out"} 0
pacer_member_state{member="a",state="parked"} 0
pacer_member_state{member="a",state="ready"} 1
pacer_member_state{member="a",state="removed"} 0
pacer_member_state{member="b",state="out"} 0
pacer_member_state{member="b",state="parked"} 1
pacer_member_state{member="b",state="ready"} 0
pacer_member_state{member="b",state="removed"} 0
`, until)
		if err := testutil.CollectAndCompare(m, strings.NewReader(want), "pacer_member_state", "pacer_member_calls_total",
			"pacer_member_refused_total", "pacer_member_rotated_away_total", "pacer_member_parked_until_seconds"); err != nil {
			t.Error(err)
		}
		var out strings.Builder
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(m)
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			fmt.Fprintln(&out, mf.String())
		}
		if strings.Contains(out.String(), "secret") {
			t.Errorf("a member's credential is in the metrics:\n%s", out.String())
		}
	})
}
