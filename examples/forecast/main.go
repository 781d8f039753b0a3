// Forecast runs a backfill under an hourly budget and prints, as it goes,
// what pacer forecasts from its Stats: how fast the budget is spent, when
// at that rate it runs out and how long before its hour is over, and how
// long the calls waiting on the API's limit take to drain.
//
// The API is a fake in this process, a RoundTripper that answers every
// call at once: no server, no key. The budget is GitHub's 5,000 requests
// an hour given to one job; the API's limit is 20 calls a second.
//
//	go run ./examples/forecast
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/pacer-go/pacer"
)

func main() {
	if err := run(os.Stdout, 3*time.Second, time.Second); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run runs the backfill for a while, printing a forecast every so often.
func run(w io.Writer, length, every time.Duration) error {
	tr := pacer.New(fakeAPI{},
		pacer.WithLimit(pacer.Limit{Count: 20, Per: time.Second, Burst: 1}),
		pacer.WithWorkload("backfill", pacer.Workload{Budget: pacer.Budget{Limit: 5000, Per: time.Hour}}))
	if err := tr.Err(); err != nil {
		return err
	}
	ctx, stop := context.WithCancel(pacer.ContextWithWorkload(context.Background(), "backfill"))
	var wg sync.WaitGroup
	for range 8 { // eight workers, as many as the job's pool
		wg.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://api.example/items", nil)
				if resp, err := tr.RoundTrip(req); err == nil {
					resp.Body.Close()
				}
			}
		})
	}
	for elapsed := every; elapsed <= length; elapsed += every {
		time.Sleep(every)
		fmt.Fprintln(w, forecast(tr.Stats()))
	}
	stop()
	wg.Wait()
	return nil
}

// forecast says what the Stats forecast for the backfill and its scope.
func forecast(st pacer.Stats) string {
	var b strings.Builder
	for _, ws := range st.Workloads {
		if ws.Name != "backfill" {
			continue
		}
		fmt.Fprintf(&b, "budget: %.0f of %.0f spent, at %.3g a second over the last %v", ws.Spent, ws.Limit, ws.SpendRate, ws.SpendWindow.Round(time.Second))
		switch {
		case ws.RunsOut.IsZero():
			b.WriteString("; at this rate it does not run out")
		case ws.RunsOutEarly > 0:
			fmt.Fprintf(&b, "; at this rate it runs out at %s, in %v: %v before its hour is over",
				ws.RunsOut.UTC().Format(time.TimeOnly), ws.RunsOutIn.Round(time.Second), ws.RunsOutEarly.Round(time.Second))
		default:
			fmt.Fprintf(&b, "; at this rate it lasts its hour")
		}
	}
	for _, sc := range st.Scopes {
		if sc.Name == pacer.DefaultScope {
			fmt.Fprintf(&b, "\nbacklog: %d calls waiting, costing %.0f, drain in %v at %.3g a second", sc.Waiting, sc.BacklogCost, sc.DrainIn.Round(time.Millisecond), sc.Rate)
		}
	}
	return b.String()
}

// fakeAPI answers every call at once with 200.
type fakeAPI struct{}

func (fakeAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
}
