package bench

import (
	"testing"
	"testing/synctest"
	"time"
)

// A scope alone behind a window over the 200–400 ms route, the limit
// known, spends its first two seconds at its blind pace or near it, on
// every draw of delays: the first burst's answers, counted in another
// order than they were sent in, are no neighbour (pace.Record's alone).
// Read as one, the first window's count was spread over the whole second:
// three draws in eight of the sliding window and five of the fixed were
// accepted 113–122 calls in the first two seconds, the others 143–152.
func TestTheFirstSecondsOverTheRoute(t *testing.T) {
	const least = 130 // calls accepted in the first two seconds, of about 180 at the blind pace
	for _, c := range VCells(false, 20*time.Second) {
		if c.Net.Name != VRoundTrip.Name || c.Situation.Name != Situations[0].Name ||
			c.Family.Name != "sliding window" && c.Family.Name != "fixed window" {
			continue
		}
		for draw := range 8 {
			c.Draw = draw
			t.Run(c.Name(), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					r, err := runVirtual(c)
					if err != nil {
						t.Fatal(err)
					}
					if got := r.PerSecond[0] + r.PerSecond[1]; got < least {
						t.Errorf("draw %d: %d calls accepted in the first two seconds (%v a second), want %d or more", draw, got, r.PerSecond[:4], least)
					}
				})
			})
		}
	}
}
