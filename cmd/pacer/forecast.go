package main

import (
	"fmt"
	"time"

	"github.com/pacer-go/pacer/ratelimitheader"
)

// forecastLines says, for each quota, what one response lets pacer
// forecast, and no more: what is left, and until when it must last; and,
// if the window is fixed and its length is said, what was spent since it
// began and when, at that pace, the rest runs out. One response is one
// reading of the window's average, not of the pace now: the last line says
// so. refills says the provider's quotas refill continuously (OpenAI's and
// Anthropic's token buckets, whose reset is when the bucket is full
// again): what was spent since a window began then does not show.
func forecastLines(quotas []ratelimitheader.Quota, now time.Time, refills bool) []string {
	var lines []string
	for _, q := range quotas {
		if q.Remaining < 0 || !q.HasReset {
			continue // nothing to forecast without both
		}
		label := fmt.Sprintf("%s (%s)", orDash(q.Name), q.Unit)
		of := ""
		if q.Limit >= 0 {
			of = fmt.Sprintf(" of %d", q.Limit)
		}
		switch {
		case q.Remaining == 0:
			lines = append(lines, fmt.Sprintf("Forecast for %s: none%s remain; more returns in %v", label, of, duration(q.Reset)))
			continue
		case q.Reset <= 0:
			lines = append(lines, fmt.Sprintf("Forecast for %s: %d%s remain, and the window resets now", label, q.Remaining, of))
			continue
		}
		line := fmt.Sprintf("Forecast for %s: %d%s remain for %v: to last to the reset, at most %.4g %s/s",
			label, q.Remaining, of, q.Reset, float64(q.Remaining)/q.Reset.Seconds(), q.Unit)
		if refills {
			line += "; it refills as it goes (a token bucket), so how fast it is spent does not show"
		} else {
			line += "; " + spentSoFar(q, now)
		}
		lines = append(lines, line)
	}
	if len(lines) > 0 {
		lines = append(lines, "  (one response is one reading: a pace from it is the window's average so far, not the pace now;",
			"   a Transport's Stats measure its budgets' spend over the last ten minutes)")
	}
	return lines
}

// spentSoFar says what a quota's window spent since it began, and when at
// that pace the rest runs out, if the response says enough to tell.
func spentSoFar(q ratelimitheader.Quota, now time.Time) string {
	switch {
	case q.Window <= 0 || q.Limit <= 0:
		return "the response does not say when the window began, so not how fast it is spent"
	case q.Reset > q.Window:
		return fmt.Sprintf("its reset (%v) is longer than its window (%v): the window is not fixed, so how fast it is spent does not show", q.Reset, q.Window)
	}
	elapsed, used := q.Window-q.Reset, q.Limit-q.Remaining
	switch {
	case used <= 0:
		return "nothing was spent of this window yet"
	case elapsed <= 0:
		return fmt.Sprintf("%d were spent as the window began", used)
	}
	pace := float64(used) / elapsed.Seconds()
	lasts := time.Duration(float64(q.Remaining) / pace * float64(time.Second)).Round(time.Millisecond)
	s := fmt.Sprintf("if the window is fixed, %d were spent in the %v since it began, %.4g %s/s, at which pace the rest ", used, elapsed, pace, q.Unit)
	if lasts < q.Reset {
		return s + fmt.Sprintf("runs out in %v (at %s), %v before the reset", lasts, now.Add(lasts).UTC().Format(time.TimeOnly), q.Reset-lasts)
	}
	return s + fmt.Sprintf("lasts past the reset (%v of it)", lasts)
}
