package main

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// want is what the test below sees printed.
const want = "budget: 1089 of 5000 spent, at 18.1 a second over the last 1m0s; at this rate it runs out at 00:04:35, in 3m36s: 55m24s before its hour is over\n" +
	"backlog: 8 calls waiting, costing 8, drain in 444ms at 18 a second\n" +
	"budget: 2169 of 5000 spent, at 18.1 a second over the last 2m0s; at this rate it runs out at 00:04:36, in 2m37s: 55m23s before its hour is over\n" +
	"backlog: 8 calls waiting, costing 8, drain in 444ms at 18 a second\n"

// Two minutes of the backfill, in virtual time from midnight. At 60.025 s
// the workers have spent 1,089 of the budget: the burst's one call, 1,080
// at the API's pace of 18 a second (its 20 less pacer's headroom), and
// the 8 calls waiting, which hold their share; 1089/60.025 is 18.14 a
// second, at which the 3,911 left last 215.6 s more, to 275.6 s (00:04:35),
// 3,324 s (55m24s) short of the hour. The eight calls waiting drain in
// 8/18 s.
func TestForecastDuringABackfill(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out strings.Builder
		// A little past each minute, so that no reading falls on the
		// instant a call is admitted.
		every := time.Minute + 25*time.Millisecond
		if err := run(&out, 2*every, every); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Errorf("the example printed\n%s\nwant\n%s", out.String(), want)
		}
	})
}
