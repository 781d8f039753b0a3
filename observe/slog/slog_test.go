package pacerslog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	pacerslog "github.com/pacer-go/pacer/observe/slog"
)

const secret = "sk-live-0123456789"

// api answers 429 with Retry-After: 2 to its first call, 200 after.
type api struct{ calls atomic.Int64 }

func (a *api) RoundTrip(req *http.Request) (*http.Response, error) {
	resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("ok")), Request: req}
	if a.calls.Add(1) == 1 {
		resp.StatusCode = http.StatusTooManyRequests
		resp.Header.Set("Retry-After", "2")
	}
	return resp, nil
}

func send(tr http.RoundTripper, ctx context.Context) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/v1/things?api_key="+secret, nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	if resp, err := tr.RoundTrip(req); err == nil {
		resp.Body.Close()
	}
}

// run sends a 429 that is retried, a call past the budget and a throttled
// call through a Transport that logs to a JSON handler at level, and
// returns the records.
func run(t *testing.T, level slog.Level, obs func(*slog.Logger) pacer.Observer) (records []map[string]any, raw string) {
	var buf bytes.Buffer
	synctest.Test(t, func(t *testing.T) {
		l := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: level}))
		tr := pacer.New(&api{}, pacer.WithObserver(obs(l)), pacer.WithHeadroom(1),
			pacer.WithLimit(pacer.Limit{Count: 1, Per: time.Second, Burst: 1}),
			pacer.WithScope(pacer.Scope{Name: "key", Limit: pacer.PerSecond(100)}),
			pacer.WithRoute(func(req *http.Request, ch []pacer.Charge) []pacer.Charge {
				return append(ch, pacer.Charge{Scope: "key", Key: req.URL.Query().Get("api_key")})
			}),
			pacer.WithWorkload("batch", pacer.Workload{Budget: pacer.Budget{Limit: 2, Per: time.Hour}}),
			pacer.WithLogger(slog.New(slog.DiscardHandler)))
		batch := pacer.ContextWithWorkload(context.Background(), "batch")
		send(tr, batch)
		send(tr, batch)
		short, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		send(tr, short)
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
	records, raw := run(t, slog.LevelInfo, func(l *slog.Logger) pacer.Observer { return pacerslog.New(l) })
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
	for _, leak := range []string{secret, "api.test", "Bearer", "/v1/things"} {
		if strings.Contains(raw, leak) {
			t.Errorf("the log shows %q:\n%s", leak, raw)
		}
	}
}

func TestLevelsCanBeChanged(t *testing.T) {
	records, _ := run(t, slog.LevelInfo, func(l *slog.Logger) pacer.Observer {
		return pacerslog.New(l).WithLevel(pacer.EventAdmitted, slog.LevelInfo).WithLevel(pacer.EventRejected, slog.LevelDebug)
	})
	n := map[string]int{}
	for _, r := range records {
		n[r["event"].(string)]++
	}
	if n["admitted"] != 2 || n["rejected"] != 0 || n["retried"] != 1 {
		t.Errorf("events logged: %v; want both attempts admitted, the retry, and no rejection", n)
	}
}
