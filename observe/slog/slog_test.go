package pacerslog_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/observe/internal/observetest"
	pacerslog "github.com/pacer-go/pacer/observe/slog"
)

// run runs the shared scenario through a Transport that logs to a JSON
// handler at level, and returns the records.
func run(t *testing.T, level slog.Level, obs func(*slog.Logger) observe.Observer) (records []map[string]any, raw string) {
	var buf bytes.Buffer
	synctest.Test(t, func(t *testing.T) {
		l := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: level}))
		open, err := observetest.Run(observetest.New(obs(l)))
		if err != nil {
			t.Fatal(err)
		}
		open.Body.Close()
	})
	dec := json.NewDecoder(strings.NewReader(buf.String()))
	for dec.More() {
		var r map[string]any
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		records = append(records, r)
	}
	return records, buf.String()
}

func TestLogsWhatGoesWrongAtWarn(t *testing.T) {
	records, raw := run(t, slog.LevelInfo, func(l *slog.Logger) observe.Observer { return pacerslog.New(l) })
	var got []string
	for _, r := range records {
		got = append(got, r["level"].(string)+" "+r["msg"].(string)+" "+r["scope"].(string)+" "+r["workload"].(string))
	}
	want := []string{
		"WARN pacer: rejected default batch",
		"WARN pacer: rejected key batch",
		"WARN pacer: cooldown_started default batch",
		"WARN pacer: cooldown_started key batch",
		"INFO pacer: retried default batch",
		"WARN pacer: budget_exhausted  batch",
		"WARN pacer: throttled default default",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("logged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r := records[0]; r["status"] != float64(429) || r["event"] != "rejected" {
		t.Errorf("the rejection: %v", r)
	}
	if r := records[2]; r["wait"] != float64(2*time.Second) {
		t.Errorf("the pause: %v", r)
	}
	if r := records[4]; r["attempt"] != float64(2) {
		t.Errorf("the retry: %v", r)
	}
	if r := records[6]; !strings.Contains(r["err"].(string), "throttled") {
		t.Errorf("the throttled call: %v", r)
	}
	for _, leak := range observetest.Leaks {
		if strings.Contains(raw, leak) {
			t.Errorf("the log shows %q:\n%s", leak, raw)
		}
	}
}

func TestLevelsCanBeChanged(t *testing.T) {
	records, _ := run(t, slog.LevelInfo, func(l *slog.Logger) observe.Observer {
		return pacerslog.New(l).WithLevel(observe.EventAdmitted, slog.LevelInfo).WithLevel(observe.EventRejected, slog.LevelDebug)
	})
	n := map[string]int{}
	for _, r := range records {
		n[r["event"].(string)]++
	}
	if n["admitted"] != 3 || n["rejected"] != 0 || n["retried"] != 1 {
		t.Errorf("events logged: %v; want the three admissions (an attempt, its retry, the next call), the retry, and no rejection", n)
	}
}

// A budget forecast to run out early is something going wrong, said once
// a period: at Warn, with how early.
func TestLogsABudgetForecastAtWarn(t *testing.T) {
	if got := pacerslog.DefaultLevel(observe.EventBudgetForecast); got != slog.LevelWarn {
		t.Errorf("a budget forecast is logged at %v, want Warn", got)
	}
}

// A pool member out of rotation or parked is something going wrong: at
// Warn, with the member's name.
func TestLogsAPoolMemberAtWarnWithItsName(t *testing.T) {
	for _, kind := range []observe.EventKind{observe.EventMemberOut, observe.EventMemberParked} {
		if got := pacerslog.DefaultLevel(kind); got != slog.LevelWarn {
			t.Errorf("%v is logged at %v, want Warn", kind, got)
		}
	}
	var buf bytes.Buffer
	pacerslog.New(slog.New(slog.NewJSONHandler(&buf, nil))).Observe(observe.Event{Kind: observe.EventMemberOut, Member: "key-a", Status: 401})
	if !strings.Contains(buf.String(), `"member":"key-a"`) {
		t.Errorf("logged %s, want the member's name", buf.String())
	}
}
