package pacer

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// bare is a server that publishes nothing of its limit: its answers carry
// no count, no limit and no Retry-After, only the status — nginx's
// limit_req answers so, and so does a token bucket behind a gateway that
// strips the headers.
type bare struct{ counter }

func (b bare) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.counter.RoundTrip(req)
	if err == nil {
		resp.Header = http.Header{}
	}
	return resp, err
}

// A blind start at 90 a second runs into a neighbour's 40 of a token
// bucket's 100 a second that says nothing but 429, over a 200–400 ms
// route. With room for 30 calls, the bucket refuses the scope late enough
// for the first refusal to be measured, and it is the window's only one:
// it measures the scope's own pace. Cut to 0.9 of it, the scope was sent
// into refusals for a whole measuring window while the calls in flight at
// the cut came back refused a third of the time: 1.68 % of its calls,
// and 2 % of the neighbour's. They check the cut (pace.Cuts.tooShallow):
// the scope halves at their news, and is refused at most one call in a
// hundred, its neighbour too. With room for 20 calls the first refusal
// comes too early to measure, and the cut halves at once.
func TestTheCallsInFlightCheckABlindStartsCut(t *testing.T) {
	for _, burst := range []int{20, 30} {
		synctest.Test(t, func(t *testing.T) {
			toPresent()
			api := &bucketAPI{rate: 100, burst: burst}
			start := time.Now()
			end := start.Add(20 * time.Second)
			go neighbour(api, 40, end)
			tr := New(overTheInternet.wrap(bare{api}), WithLimit(PerSecond(100)), WithoutRetry(), WithLogger(slogTo(io.Discard)))
			hammer(tr, overTheInternet.callers, end)
			a, r := api.counts("pacer", start, end)
			check(t, fmt.Sprintf("burst %d: pacer", burst), a, r, 60*20, 0.9)
			na, nr := api.counts("neighbour", start, end)
			check(t, fmt.Sprintf("burst %d: neighbour", burst), na, nr, 40*20, 0.98)
		})
	}
}
