package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pacer-go/pacer/internal/simulate"
)

// writeTable prints the report as aligned columns, one row per limiter (and
// one per limiter and client when several share the limit), with footnotes
// that say how each limiter was configured.
func writeTable(w io.Writer, r *simulate.Report, scenario string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Scenario %s: %s.\n\n", scenario, r.Config.Traffic())
	// Right-aligned numbers; every cell after the name brings its own two
	// spaces of padding, so that the names stay flush left.
	tw := tabwriter.NewWriter(&b, 0, 0, 0, ' ', tabwriter.AlignRight)
	row := func(name string, cells ...any) {
		fmt.Fprintf(tw, "%-14s", name)
		for _, c := range cells {
			fmt.Fprintf(tw, "\t  %v", c)
		}
		fmt.Fprint(tw, "\t\n")
	}
	row("limiter", "offered", "allowed", "rejected", "busiest second", "queued at end", "delay p50", "delay p99", "delay max")
	for _, res := range r.Results {
		queued, p50, p99, most := "-", "-", "-", "-"
		if q := res.Queue; q != nil {
			queued = fmt.Sprint(q.QueuedAtEnd)
			p50, p99, most = seconds(q.DelayP50), seconds(q.DelayP99), seconds(q.DelayMax)
		}
		row(res.Name, res.Offered, res.Allowed, res.Rejected, res.BusiestSecond, queued, p50, p99, most)
	}
	if r.Config.Clients > 1 {
		fmt.Fprintln(tw)
		row("per client", "client", "offered", "allowed", "rejected", "queued at end")
		for _, res := range r.Results {
			for i, c := range res.Clients {
				queued := "-"
				if res.Queue != nil {
					queued = fmt.Sprint(c.Queued)
				}
				row(res.Name, i+1, c.Offered, c.Allowed, c.Rejected, queued)
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n")
	for _, note := range footnotes(r) {
		fmt.Fprintf(&b, "%s\n", note)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// footnotes say how each limiter was set up and how to read the columns.
func footnotes(r *simulate.Report) []string {
	c, p := r.Config, r.Pace
	return []string{
		fmt.Sprintf("token-bucket:   %d tokens, refilled at %v/s; starts full.", c.Capacity, c.Refill),
		fmt.Sprintf("fixed-window:   %d requests per %s window (refill × window), windows aligned to the start of the run.", c.Allowance(), simulate.Seconds(c.Window)),
		fmt.Sprintf("sliding-window: %d requests in any %s (a sliding log: exact, not the two-window estimate).", c.Allowance(), simulate.Seconds(c.Window)),
		fmt.Sprintf("pacer:          told the API allows %d per %s (refill × %s: the same long-run allowance as the others);", p.Limit.Count, simulate.Seconds(c.PacerPer), simulate.Seconds(c.PacerPer)),
		fmt.Sprintf("                it keeps %.4g%% of that, pacing at %.4g/s with a burst of %d, so that no %s ever holds more than %d.", c.Headroom*100, p.Rate, p.Burst, simulate.Seconds(c.PacerPer), p.Limit.Count),
		"                It makes calls wait instead of rejecting them: allowed = sent within the run,",
		"                rejected = 0, and the rest were still queued when the run ended. Delay: arrival to send.",
		"busiest second: the most requests let through in one whole second [s, s+1) of the run.",
	}
}

// seconds formats a delay to a useful precision: 8.54s, 120ms, 0s.
func seconds(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%dms", d.Round(time.Millisecond).Milliseconds())
	case d > 0:
		return "<1ms"
	}
	return "0s"
}
