package bench

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	MaybeChild() // the processes of scenarios 3 and 13–15 are this test binary, again
	os.Exit(m.Run())
}

// nginxOrSkip returns the nginx binary, or skips the test (fails it when
// CI=true, where scripts/test provides one).
func nginxOrSkip(t *testing.T) string {
	t.Helper()
	bin := FindNginx()
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no nginx: scripts/test installs it and sets PACER_NGINX_BIN")
		}
		t.Skip("no nginx: run ./scripts/test, which installs it and sets PACER_NGINX_BIN")
	}
	return bin
}

// TestShortRun is the harness's short version: each scenario for pacer and
// scenario 1 for every peer, under a second each. It checks that the
// harness measures what it says — the server limits, the ceiling bounds
// what it accepted, pacer at the published limit draws no 429 and under
// limit_conn no 503 — not the full run's targets, which need its length.
func TestShortRun(t *testing.T) {
	o := Options{
		NginxBin:   nginxOrSkip(t),
		Server:     Server{Rate: 50, Burst: 10, Conn: 4},
		Duration:   500 * time.Millisecond,
		Goroutines: 16,
		RedisAddr:  os.Getenv("PACER_REDIS_ADDR"),
		LimitSync:  time.Second,
	}
	type run struct {
		scenario int
		client   string
	}
	runs := []run{{1, Plain}, {1, XRate}, {1, RetryableHTTP}, {1, Failsafe}}
	for _, sc := range Scenarios {
		if sc.Go != nil && sc.Go.Incident > 0 {
			continue // its incident alone lasts a minute
		}
		if sc.Procs > 1 && !sc.Apart && o.RedisAddr == "" {
			t.Logf("scenario %d skipped: PACER_REDIS_ADDR is not set", sc.ID)
			continue
		}
		runs = append(runs, run{sc.ID, Pacer})
	}
	var results []Result
	for _, r := range runs {
		sc, _ := ScenarioByID(r.scenario)
		sc.Duration = 0 // the short run's length, whatever the full run's
		res, err := Run(o, sc, r.client)
		if err != nil {
			t.Fatalf("scenario %d, %s: %v", r.scenario, r.client, err)
		}
		results = append(results, res)
		t.Logf("scenario %d %-13s accepted %d rejected %d failed %d goodput %.3f p50 %v",
			r.scenario, r.client, res.Accepted, res.Rejected(), res.Failed, res.Goodput(), Percentile(res.Latencies, 0.5))
		if res.Accepted == 0 || len(res.Latencies) == 0 {
			t.Errorf("scenario %d, %s: nothing accepted", r.scenario, r.client)
		}
		// The server cannot accept more than its ceiling; the 5% is for
		// the clocks of client and server not starting together.
		ceiling := res.Ceiling
		if sc.Go != nil {
			// An idle sliding window lets a whole window through at once:
			// beside 20 s at the limit it is noise, beside half a second
			// it is more than the rate allows.
			ceiling += float64(sc.Go.Limit)
		}
		if float64(res.Accepted) > 1.05*ceiling+1 {
			t.Errorf("scenario %d, %s: %d accepted, above the ceiling %.0f: the counts or the ceiling are wrong",
				r.scenario, r.client, res.Accepted, ceiling)
		}
		switch {
		case r.client == Plain && res.TooMany == 0:
			t.Errorf("the plain client drew no 429: nginx does not limit")
		case r.client == Pacer && r.scenario == 1 && res.Rejected() > 0:
			t.Errorf("pacer at the published limit drew %d 429s", res.Rejected())
		case r.client == Pacer && r.scenario == 4 && res.Unavailable > 0:
			t.Errorf("pacer at limit_conn's cap drew %d 503s", res.Unavailable)
		}
	}
	var b bytes.Buffer
	WriteTables(&b, results)
	if n := strings.Count(b.String(), "\n| "); n < len(results) {
		t.Errorf("the tables have %d rows for %d results:\n%s", n, len(results), b.String())
	}
}
