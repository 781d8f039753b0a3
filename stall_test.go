package pacer

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// stalledRoute is a route of each one way, that holds whatever is on it
// from from until to: the calls on their way out (out), or the answers on
// their way back. A stalled connection or a proxy that buffers does so.
type stalledRoute struct {
	next     http.RoundTripper
	from, to time.Time
	out      bool
	each     time.Duration
}

func (w *stalledRoute) RoundTrip(req *http.Request) (*http.Response, error) {
	time.Sleep(w.each)
	w.hold(w.out)
	resp, err := w.next.RoundTrip(req)
	w.hold(!w.out)
	time.Sleep(w.each)
	return resp, err
}

func (w *stalledRoute) hold(this bool) {
	if now := time.Now(); this && now.After(w.from) && now.Before(w.to) {
		time.Sleep(w.to.Sub(now))
	}
}

// A route that stalls for three seconds and then lets go costs the scope
// only what the stall held: calls held on the way out reach the server
// together, and those beyond its window's limit are refused whatever the
// client does; answers held on the way back cost next to nothing. Nothing is
// refused after the release, and the scope is back at its pace within a
// few seconds. Windows of 40 a second, the limit known and told twice it,
// 64 callers over 50 ms each way.
//
// What the stall held says nothing of the route or of the margin: its
// round trips are no jitter (RoundTrips.Observe), the refusals of the
// calls it held widen no margin (Record.Refused), and their counts were
// made when the calls got through, not a round trip after they were sent
// (Record.flownBack). Before, in some runs under the race detector: the
// 30 refusals at the release widened a sliding window's margin to 27 of
// its 40 calls, given back one every ten seconds, and the scope spent 12 a
// second for the rest of the run; the spread went to three quarters of a
// second and the margin with it to 17; the held counts read 120 calls
// given back during the stall, and a fixed window's turns went astray for
// ten seconds (0.70 of the rate, and a refusal after the release).
//
// Accepted from 16 s on: 0.975 of what the server allowed in most runs;
// after a release on a sliding window with the limit known, in about one
// run in ten the scope waits out the count's hold at none left (two
// seconds, a whole-second reset's slack) before it hears that the window
// gave back, and gets 0.89 of it.
func TestAStalledRouteCostsOnlyWhatItHeld(t *testing.T) {
	const limit, callers = 40, 64
	for _, sliding := range []bool{false, true} {
		for _, out := range []bool{true, false} {
			for _, told := range []int{limit, 2 * limit} {
				name := fmt.Sprintf("sliding %v, held on the way out %v, told %d", sliding, out, told)
				t.Run(name, func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						toPresent()
						time.Sleep(370 * time.Millisecond)
						api := &windowAPI{limit: limit, window: time.Second, sliding: sliding}
						start := time.Now()
						at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }
						route := &stalledRoute{next: api, from: at(10), to: at(13), out: out, each: 50 * time.Millisecond}
						tr := New(route, WithLimit(PerSecond(told)), WithoutRetry(), WithLogger(slogTo(io.Discard)))
						hammer(tr, callers, at(40))
						_, before := api.counts("pacer", at(0), at(10))
						_, release := api.counts("pacer", at(10), at(14))
						_, after := api.counts("pacer", at(14), at(40))
						back, _ := api.counts("pacer", at(16), at(40))
						// The calls held beyond the window's limit; the
						// bucket's burst (a tenth of what it was told) sent
						// as the callers came back, and what the pace sends
						// in the round trip (a tenth of a second) before the
						// first answers say none is left.
						most := told/10 + told/10
						if out {
							most += callers - limit
						}
						t.Logf("refused before %d, at the release %d, after %d; accepted from 16 s %d of %d", before, release, after, back, 24*limit)
						if release > most || after > 0 {
							t.Errorf("refused %d at the release and %d after it; want at most %d, and none after", release, after, most)
						}
						if float64(back) < 0.88*24*limit {
							t.Errorf("accepted %d from 16 s to 40 s, want 0.88 of the %d the server allowed", back, 24*limit)
						}
					})
				})
			}
		}
	}
}
