package paceroptel_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/observe/internal/observetest"
	paceroptel "github.com/pacer-go/pacer/observe/otel"
)

// point is one data point: its attributes, written k=v in order, and value.
type point struct {
	attrs string
	value float64
}

// collect reads every data point of every instrument, by instrument name.
func collect(t *testing.T, r *sdkmetric.ManualReader) map[string][]point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string][]point{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != paceroptel.ScopeName {
			t.Errorf("instrumentation scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[m.Name] = append(out[m.Name], point{attrString(p.Attributes), float64(p.Value)})
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out[m.Name] = append(out[m.Name], point{attrString(p.Attributes), float64(p.Value)})
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					out[m.Name] = append(out[m.Name], point{attrString(p.Attributes), p.Value})
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[m.Name] = append(out[m.Name], point{attrString(p.Attributes), float64(p.Count)})
					out[m.Name+".sum"] = append(out[m.Name+".sum"], point{attrString(p.Attributes), p.Sum})
				}
			default:
				t.Errorf("%s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return out
}

func attrString(s attribute.Set) string {
	var b strings.Builder
	for _, kv := range s.ToSlice() {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(string(kv.Key) + "=" + kv.Value.String())
	}
	return b.String()
}

func value(t *testing.T, got map[string][]point, name, attrs string) float64 {
	t.Helper()
	for _, p := range got[name] {
		if p.attrs == attrs {
			return p.value
		}
	}
	t.Errorf("no %s{%s}; have %v", name, attrs, got[name])
	return -1
}

func TestMetricsThroughAnInMemoryReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reader := sdkmetric.NewManualReader()
		m, err := paceroptel.New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
		if err != nil {
			t.Fatal(err)
		}
		tr := observetest.New(m)
		m.Watch(tr)
		open, err := observetest.Run(tr)
		if err != nil {
			t.Fatal(err)
		}

		got := collect(t, reader)
		const defBatch = "pacer.scope=default,pacer.workload=batch"
		for _, c := range []struct {
			name, attrs string
			want        float64
		}{
			{"pacer.admitted", defBatch, 3},
			{"pacer.wait", defBatch, 2},
			{"pacer.throttled", "pacer.scope=default,pacer.workload=default", 1},
			{"pacer.provider.rejections", "http.response.status_code=429,pacer.scope=default,pacer.workload=batch", 1},
			{"pacer.provider.rejections", "http.response.status_code=429,pacer.scope=key,pacer.workload=batch", 1},
			{"pacer.cooldowns", "pacer.scope=default", 1},
			{"pacer.retries", defBatch, 1},
			{"pacer.budget.exhausted", "pacer.workload=batch", 1},
			{"pacer.in_flight", defBatch, 1},
			{"pacer.in_flight", "pacer.scope=default,pacer.workload=default", 0},
			{"pacer.waiting", "pacer.scope=default", 0},
			{"pacer.tokens", "pacer.scope=default,pacer.unit=requests", 0},
			{"pacer.cooldown.remaining", "pacer.scope=default", 0},
			{"pacer.budget.limit", "pacer.unit=requests,pacer.workload=batch", 3},
			{"pacer.budget.spent", "pacer.unit=requests,pacer.workload=batch", 3},
			{"pacer.budget.reserved", "pacer.unit=requests,pacer.workload=batch", 0},
			{"pacer.budget.period_end", "pacer.workload=batch", 946688400},
			{"pacer.rate", "pacer.scope=key,pacer.unit=requests", 100},
		} {
			if v := value(t, got, c.name, c.attrs); v != c.want {
				t.Errorf("%s{%s} = %v, want %v", c.name, c.attrs, v, c.want)
			}
		}
		// Both waits were about 1/0.5 s: the rate the 429 halved (it came
		// before any history to measure the server by), climbing back a
		// little while they waited.
		if sum := value(t, got, "pacer.wait.sum", defBatch); sum < 3.4 || sum > 4 {
			t.Errorf("the waits add up to %vs, want about 2/0.5", sum)
		}
		for name, points := range got {
			for _, p := range points {
				for _, leak := range observetest.Leaks {
					if strings.Contains(p.attrs, leak) {
						t.Errorf("%s{%s} shows %q", name, p.attrs, leak)
					}
				}
			}
		}
		open.Body.Close()
		if v := value(t, collect(t, reader), "pacer.in_flight", defBatch); v != 0 {
			t.Errorf("in flight after the body was closed: %v", v)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		if _, ok := collect(t, reader)["pacer.in_flight"]; ok {
			t.Error("the gauges are still reported after Close")
		}
	})
}

// While a call waits, the gauges say what holds it back and since when.
func TestMetricsSayWhyCallsWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reader := sdkmetric.NewManualReader()
		m, err := paceroptel.New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
		if err != nil {
			t.Fatal(err)
		}
		tr := observetest.Paused(m)
		m.Watch(tr)
		start := time.Now()
		done := observetest.Wait(tr)
		got := collect(t, reader)
		if v := value(t, got, "pacer.waiting.by_reason", "pacer.reason=cooldown,pacer.scope=default"); v != 1 {
			t.Errorf("pacer.waiting.by_reason = %v, want 1 held by the cooldown", v)
		}
		if v := value(t, got, "pacer.wait.oldest_start", "pacer.scope=default"); v != float64(start.Unix()) {
			t.Errorf("pacer.wait.oldest_start = %v, want %v", v, start.Unix())
		}
		if err := done(); err != nil {
			t.Fatal(err)
		}
		got = collect(t, reader)
		if n := len(got["pacer.waiting.by_reason"]) + len(got["pacer.wait.oldest_start"]); n != 0 {
			t.Errorf("%d points of waits once none waits, want 0", n)
		}
	})
}

// The events that change a Transport's configuration or warn of trouble
// are counted too, each under attributes the configuration bounds.
func TestMetricsCountWarningsAndChanges(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	m, err := paceroptel.New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []observe.Event{
		{Kind: observe.EventPaceChanged, Scope: "openai/requests", Workload: "batch", Rate: 8},
		{Kind: observe.EventPaceChanged, Scope: "openai/requests", Workload: "default", Rate: 9},
		{Kind: observe.EventSlotHeld, Scope: "default", Wait: 10 * time.Minute},
		{Kind: observe.EventBodyNotReplayable, Workload: "batch"},
		{Kind: observe.EventLimitChanged, Scope: "default", Origin: observe.OriginSetLimit},
		{Kind: observe.EventLimitChanged, Scope: "default", Origin: observe.OriginStore},
		{Kind: observe.EventBudgetThreshold, Workload: "batch", Percent: 80},
		{Kind: observe.EventBudgetForecast, Workload: "batch", Wait: time.Hour, Rate: 0.5},
	} {
		m.Observe(e)
	}
	got := collect(t, reader)
	for _, c := range []struct {
		name, attrs string
		want        float64
	}{
		{"pacer.pace.changes", "pacer.scope=openai/requests", 2},
		{"pacer.slots.held", "pacer.scope=default", 1},
		{"pacer.not_replayable", "pacer.workload=batch", 1},
		{"pacer.limit.changes", "pacer.origin=set_limit,pacer.scope=default", 1},
		{"pacer.limit.changes", "pacer.origin=store,pacer.scope=default", 1},
		{"pacer.budget.thresholds", "pacer.budget.percent=80,pacer.workload=batch", 1},
		{"pacer.budget.forecasts", "pacer.workload=batch", 1},
	} {
		if v := value(t, got, c.name, c.attrs); v != c.want {
			t.Errorf("%s{%s} = %v, want %v", c.name, c.attrs, v, c.want)
		}
	}
}

// newMetrics returns Metrics on a meter provider read by hand.
func newMetrics(t *testing.T) (*paceroptel.Metrics, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	m, err := paceroptel.New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	return m, reader
}

// During a backfill, the forecast gauges say what Stats say: the budget's
// spend rate and its window, when it runs out and how early, and the
// scope's backlog and how long it takes to drain.
func TestMetricsForecast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, reader := newMetrics(t)
		tr, err := observetest.Backfill(m)
		if err != nil {
			t.Fatal(err)
		}
		m.Watch(tr)
		start, release := observetest.RunBackfill(tr)
		got := collect(t, reader)
		const workload, scope = "pacer.workload=backfill", "pacer.scope=default"
		for _, c := range []struct {
			name, attrs string
			want        float64
		}{
			{"pacer.budget.spend_rate", "pacer.unit=requests," + workload, observetest.BackfillRate},
			{"pacer.budget.spend_window", workload, observetest.BackfillWindow.Seconds()},
			{"pacer.budget.runs_out", workload, float64(start.Unix()) + observetest.BackfillRunsOut},
			{"pacer.budget.runs_out_early", workload, observetest.BackfillEarly},
			{"pacer.backlog", scope + ",pacer.unit=requests", observetest.BackfillBacklog},
			{"pacer.backlog.drain", scope, observetest.BackfillDrain.Seconds()},
		} {
			if v := value(t, got, c.name, c.attrs); math.Abs(v-c.want) > 1e-3 {
				t.Errorf("%s{%s} = %v, want %v", c.name, c.attrs, v, c.want)
			}
		}
		if err := release(); err != nil {
			t.Fatal(err)
		}
	})
}

// A reconciliation's drift is a gauge per group, its failures a counter.
func TestMetricsOfReconciliation(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	m, err := paceroptel.New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	m.Observe(observe.Event{Kind: observe.EventBudgetDrift, Scope: "project:proj_1", Amount: 0.25, Percent: 25})
	m.Observe(observe.Event{Kind: observe.EventBudgetDrift, Scope: "project:proj_1", Amount: -0.5, Percent: -10})
	m.Observe(observe.Event{Kind: observe.EventReconcileFailed, Scope: "api_key:key_1"})
	got := collect(t, reader)
	if v := value(t, got, "pacer.budget.drift", "pacer.reconcile.group=project:proj_1"); v != -0.5 {
		t.Errorf("pacer.budget.drift = %v, want the last drift, -0.5", v)
	}
	if v := value(t, got, "pacer.reconcile.failures", "pacer.reconcile.group=api_key:key_1"); v != 1 {
		t.Errorf("pacer.reconcile.failures = %v, want 1", v)
	}
}

// A long window the provider reports is a gauge of the share spent and one
// of the time until it reopens.
func TestMetricsLongWindows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, reader := newMetrics(t)
		tr, err := observetest.LongWindows(m)
		if err != nil {
			t.Fatal(err)
		}
		m.Watch(tr)
		got := collect(t, reader)
		const window = "pacer.scope=default,pacer.window=5h"
		if v := value(t, got, "pacer.window.used", window); v != observetest.LongUsed {
			t.Errorf("pacer.window.used = %v, want %v", v, observetest.LongUsed)
		}
		if v := value(t, got, "pacer.window.reset", window); v != observetest.LongReset.Seconds() {
			t.Errorf("pacer.window.reset = %v, want %v", v, observetest.LongReset.Seconds())
		}
	})
}

// A pool's members are reported with pacer.member: their state, their
// calls and refusals, and when a parked one is tried again; never what
// they apply.
func TestMetricsOfPoolMembers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, reader := newMetrics(t)
		tr, err := observetest.Pool(m)
		if err != nil {
			t.Fatal(err)
		}
		m.Watch(tr)
		got := collect(t, reader)
		for _, tt := range []struct {
			name, attrs string
			want        float64
		}{
			{"pacer.member.calls", "pacer.member=a", 2},
			{"pacer.member.calls", "pacer.member=b", 1},
			{"pacer.member.refused", "pacer.member=a", 0},
			{"pacer.member.refused", "pacer.member=b", 1},
			{"pacer.member.rotated_away", "pacer.member=b", 1},
			{"pacer.member.state", "pacer.member=a,pacer.member.state=ready", 1},
			{"pacer.member.state", "pacer.member=a,pacer.member.state=parked", 0},
			{"pacer.member.state", "pacer.member=b,pacer.member.state=parked", 1},
			{"pacer.member.state", "pacer.member=b,pacer.member.state=ready", 0},
			{"pacer.member.parked_until", "pacer.member=b", float64(time.Now().Add(observetest.PoolParkedFor).UnixNano()) / 1e9},
		} {
			if v := value(t, got, tt.name, tt.attrs); v != tt.want {
				t.Errorf("%s{%s} = %v, want %v", tt.name, tt.attrs, v, tt.want)
			}
		}
		if _, ok := got["pacer.member.parked_until"]; ok && len(got["pacer.member.parked_until"]) != 1 {
			t.Errorf("pacer.member.parked_until = %v, want b's alone", got["pacer.member.parked_until"])
		}
		if s := fmt.Sprint(got); strings.Contains(s, "secret") {
			t.Errorf("a member's credential is in the metrics: %s", s)
		}
	})
}
