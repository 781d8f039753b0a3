package pacer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// unifiedAPI is a fake of a subscription's long window as Anthropic's
// unified headers report it: size calls per period, a window that opens at
// the first call and reopens whole at its reset, its share used reported
// with two decimals (as some captures show it), and a 429 with the
// seconds to the reset once it is spent.
type unifiedAPI struct {
	size   int
	period time.Duration
	name   string // "5h", "7d"

	mu       sync.Mutex
	start    time.Time
	used     int
	accepted []time.Time
	rejected []time.Time
}

func (a *unifiedAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.start.IsZero() || !now.Before(a.start.Add(a.period)) {
		a.start, a.used = now, 0
	}
	reset := a.start.Add(a.period)
	h := http.Header{}
	h.Set("Date", now.UTC().Format(http.TimeFormat))
	status := http.StatusOK
	if a.used < a.size {
		a.used++
		a.accepted = append(a.accepted, now)
		h.Set("Anthropic-Ratelimit-Unified-Status", "allowed")
	} else {
		status = http.StatusTooManyRequests
		a.rejected = append(a.rejected, now)
		h.Set("Anthropic-Ratelimit-Unified-Status", "rejected")
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(reset.Sub(now).Seconds()))))
	}
	h.Set("Anthropic-Ratelimit-Unified-"+a.name+"-Utilization", strconv.FormatFloat(math.Floor(100*float64(a.used)/float64(a.size))/100, 'f', 2, 64))
	h.Set("Anthropic-Ratelimit-Unified-"+a.name+"-Reset", strconv.FormatInt(reset.Unix(), 10))
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

// A batch that can wait, against a long window it could spend in a fifth
// of its time at the scope's pace: without SpreadLongWindows it meets the
// wall early and waits out the rest; with it the work lasts to the reset
// and uses at least 0.9 of the window, with no refusal.
func TestLongWindowsArePacedToTheirEnd(t *testing.T) {
	for _, tt := range []struct {
		name   string
		period time.Duration
		size   int
		limit  Limit // the scope's short limit: the window lasts a fifth of its period at it
	}{
		{"5h", 5 * time.Hour, 6000, PerSecond(2)},
		{"7d", 7 * 24 * time.Hour, 2016, PerMinute(2)},
	} {
		for _, spread := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/spread=%v", tt.name, spread), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					toPresent()
					api := &unifiedAPI{size: tt.size, period: tt.period, name: tt.name}
					tr := New(api, WithLimit(tt.limit), WithWorkload("batch", Workload{SpreadLongWindows: spread}))
					start := time.Now()
					end := start.Add(tt.period - time.Second) // within the first window
					batch(tr, 4, end)
					api.mu.Lock()
					n, rejected := between(api.accepted, start, end), between(api.rejected, start, end)
					last := api.accepted[n-1]
					api.mu.Unlock()
					lasted := last.Sub(start)
					t.Logf("%d of %d accepted, the last after %v of %v, %d refused; Stats: %+v", n, tt.size, lasted, tt.period, rejected, tr.Stats().Scopes[0].Windows)
					if !spread {
						if lasted > tt.period/2 {
							t.Errorf("without spreading the window lasted %v of %v; want the wall met early (the test shows nothing)", lasted, tt.period)
						}
						return
					}
					if float64(n) < 0.9*float64(tt.size) {
						t.Errorf("%d of %d calls accepted in the window, want at least 0.9 of it", n, tt.size)
					}
					if lasted < tt.period*9/10 {
						t.Errorf("the work lasted %v of the %v window, want it to last to the reset", lasted, tt.period)
					}
					if rejected > 0 {
						t.Errorf("%d calls refused, want none: the window was spread", rejected)
					}
				})
			})
		}
	}
}

// batch runs callers goroutines of workload "batch" that call through rt
// until end, as a backfill does: a refusal that says how long to wait is
// waited out, within end.
func batch(rt http.RoundTripper, callers int, end time.Time) {
	ctx, cancel := context.WithDeadline(ContextWithWorkload(context.Background(), "batch"), end)
	defer cancel()
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for time.Now().Before(end) {
				err := get(rt, ctx, "http://api.test/")
				if err == nil {
					continue
				}
				wait := time.Minute
				var te *ThrottledError
				var qe *QuotaError
				switch {
				case errors.As(err, &te) && te.RetryAfter > 0:
					wait = te.RetryAfter
				case errors.As(err, &qe) && !qe.Reset.IsZero():
					wait = time.Until(qe.Reset)
				}
				time.Sleep(min(wait, time.Until(end)))
			}
		})
	}
	wg.Wait()
}

func TestLastingPace(t *testing.T) {
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		remaining float64
		in        time.Duration
		want      float64
	}{{3600, time.Hour, 1}, {100, 100 * time.Second, 1}, {0, time.Hour, 0}, {-5, time.Hour, 0}, {100, 0, 0}, {100, -time.Second, 0}} {
		if got := lastingPace(tt.remaining, now.Add(tt.in), now); got != tt.want {
			t.Errorf("lastingPace(%v, now+%v) = %v, want %v", tt.remaining, tt.in, got, tt.want)
		}
	}
}

// Each long window a response reports is a scope's figures in Stats:
// Anthropic's unified windows as shares, GitHub's hourly count with its
// limit and remaining, each reset counted from the snapshot — on a keyed
// bucket too, as the Anthropic preset charges one per model class.
func TestLongWindowsInStats(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) { longWindowsInStats(t, keyed) })
	}
}

func longWindowsInStats(t *testing.T, keyed bool) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		now := time.Now()
		api := &scriptedAPI{steps: []scripted{
			{http.StatusOK, map[string]string{
				"Anthropic-Ratelimit-Unified-Status":         "allowed_warning",
				"Anthropic-Ratelimit-Unified-5h-Utilization": "0.35",
				"Anthropic-Ratelimit-Unified-5h-Reset":       strconv.FormatInt(now.Add(2*time.Hour).Unix(), 10),
				"Anthropic-Ratelimit-Unified-7d-Utilization": "0.85",
				"Anthropic-Ratelimit-Unified-7d-Reset":       strconv.FormatInt(now.Add(72*time.Hour).Unix(), 10)}},
			{http.StatusOK, map[string]string{"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "4000",
				"X-RateLimit-Reset": strconv.FormatInt(now.Add(40*time.Minute).Unix(), 10), "X-RateLimit-Resource": "core"}},
		}}
		opts := []Option{WithLimit(PerHour(5000))}
		if keyed {
			opts = append(opts, WithRoute(func(_ *http.Request, _ []Charge) []Charge { return []Charge{{Scope: DefaultScope, Key: "sonnet"}} }))
		}
		tr := New(api, opts...)
		mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		time.Sleep(10 * time.Minute)
		ws := tr.Stats().Scopes[0].Windows
		want := map[string][4]float64{ // used, limit, remaining, reset in minutes
			"5h": {0.35, -1, -1, 110}, "7d": {0.85, -1, -1, 72*60 - 10}, "core": {0.2, 5000, 4000, 30}}
		if len(ws) != len(want) {
			t.Fatalf("Stats windows = %+v, want %d of them", ws, len(want))
		}
		for _, w := range ws {
			f, ok := want[w.Name]
			if !ok || math.Abs(w.Used-f[0]) > 1e-9 || w.Limit != int64(f[1]) || w.Remaining != int64(f[2]) || w.Reset != time.Duration(f[3])*time.Minute {
				t.Errorf("Stats window %+v, want used %v, limit %v, remaining %v, reset in %v min", w, f[0], f[1], f[2], f[3])
			}
		}
	})
}

// SetWorkload says so, rather than ignore it, when asked to change
// SpreadLongWindows, which the calls read without a lock.
func TestSpreadLongWindowsCannotChangeAtRuntime(t *testing.T) {
	tr := New(nil, WithWorkload("batch", Workload{}))
	err := tr.SetWorkload("batch", Workload{SpreadLongWindows: true})
	if err == nil || !strings.Contains(err.Error(), "SpreadLongWindows cannot change at runtime") {
		t.Errorf("SetWorkload = %v, want an error that says SpreadLongWindows cannot change", err)
	}
}
