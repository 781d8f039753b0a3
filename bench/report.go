package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// WriteTables writes the results as two Markdown tables: the figures, then
// each client's as ratios against pacer's in the same scenario.
func WriteTables(w io.Writer, results []Result) {
	fmt.Fprintln(w, "| # | scenario | client | accepted | rejected (429/503) | rejected/accepted | failed calls | goodput (of ceiling) | p50 | p99 |")
	fmt.Fprintln(w, "|--:|----------|--------|---------:|-------------------:|------------------:|-------------:|---------------------:|----:|----:|")
	for _, r := range results {
		p50, p99 := Percentile(r.Latencies, 0.50), Percentile(r.Latencies, 0.99)
		fmt.Fprintf(w, "| %d | %s | %s | %d | %d | %s | %d | %.3f (%.0f) | %s | %s |\n",
			r.Scenario.ID, r.Scenario.Name, r.Client, r.Accepted, r.Rejected(),
			percent(r.Rejected(), r.Accepted), r.Failed, r.Goodput(), r.Ceiling, ms(p50), ms(p99))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Against pacer in the same scenario (× pacer's figure; rejected as the two counts when pacer's is 0):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| # | client | goodput | rejected | p50 | p99 |")
	fmt.Fprintln(w, "|--:|--------|--------:|---------:|----:|----:|")
	for _, r := range results {
		if r.Client == Pacer {
			continue
		}
		p, ok := find(results, r.Scenario.ID, Pacer)
		if !ok {
			continue
		}
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s |\n", r.Scenario.ID, r.Client,
			ratio(r.Goodput(), p.Goodput()),
			countRatio(r.Rejected(), p.Rejected()),
			ratio(Percentile(r.Latencies, 0.5).Seconds(), Percentile(p.Latencies, 0.5).Seconds()),
			ratio(Percentile(r.Latencies, 0.99).Seconds(), Percentile(p.Latencies, 0.99).Seconds()))
	}
	writeExtras(w, results)
}

// writeExtras writes, for the scenarios that have them, what an unpaced
// neighbour saw beside each client, and how far each client had recovered
// at the end of a run with an incident.
func writeExtras(w io.Writer, results []Result) {
	header := false
	for _, r := range results {
		if r.Scenario.Neighbour == 0 {
			continue
		}
		header = tableHeader(w, header, "The unpaced neighbour beside each client (same key, a call every 1/rate s):",
			"| # | client | neighbour's rate | its calls accepted | its 429s | 429s of its calls |",
			"|--:|--------|-----------------:|-------------------:|---------:|------------------:|")
		n := r.Neighbour
		fmt.Fprintf(w, "| %d | %s | %.0f/s | %d | %d | %s |\n", r.Scenario.ID, r.Client, r.Scenario.Neighbour,
			n.Accepted, n.TooMany+n.Unavailable, percent(n.TooMany+n.Unavailable, n.Accepted+n.TooMany+n.Unavailable))
	}
	header = false
	for _, r := range results {
		g := r.Scenario.Go
		if g == nil || g.Incident == 0 {
			continue
		}
		header = tableHeader(w, header, "Recovery after the incident: accepted a second over the run's last 5 s (55–60 s after the incident ended), as a share of the limit:",
			"| # | client | recovered to | accepted by second after the incident (10 s buckets) |",
			"|--:|--------|-------------:|------------------------------------------------------|")
		var buckets []string
		from := int(g.Incident / time.Second)
		for s := from; s < len(r.PerSecond); s += 10 {
			var n int64
			for _, c := range r.PerSecond[s:min(s+10, len(r.PerSecond))] {
				n += c
			}
			buckets = append(buckets, fmt.Sprint(n))
		}
		fmt.Fprintf(w, "| %d | %s | %.3f | %s |\n", r.Scenario.ID, r.Client, r.Recovered(), strings.Join(buckets, " "))
	}
}

// tableHeader writes a table's title and header unless written is true,
// and returns true.
func tableHeader(w io.Writer, written bool, title, columns, rule string) bool {
	if !written {
		fmt.Fprintf(w, "\n%s\n\n%s\n%s\n", title, columns, rule)
	}
	return true
}

func find(results []Result, scenario int, client string) (Result, bool) {
	for _, r := range results {
		if r.Scenario.ID == scenario && r.Client == client {
			return r, true
		}
	}
	return Result{}, false
}

func percent(a, b int64) string {
	if b == 0 {
		if a == 0 {
			return "—"
		}
		return "∞"
	}
	return fmt.Sprintf("%.2f%%", 100*float64(a)/float64(b))
}

func ratio(a, b float64) string {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return "—"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func countRatio(a, b int64) string {
	if b == 0 {
		return fmt.Sprintf("%d vs 0", a)
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}

func ms(d time.Duration) string {
	if d == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}
