package pacer

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// reorderAPI is a server that counts in a minute's window of limit calls,
// and says what is left after each, not its limit. While holding, it keeps
// each call it is sent until the test lets it answer (held): the first
// burst's calls are all in flight at once, and the test picks the order
// the server counted them in and the order their answers come back in.
// Not holding, it counts each call as it arrives, and answers it 100 ms
// later.
type reorderAPI struct {
	mu       sync.Mutex
	left     int
	holding  bool
	held     []chan int // by arrival; each gets the count the server made
	accepted int        // counted as they arrive, held or not
	refused  int
}

func (a *reorderAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	a.mu.Lock()
	if a.holding {
		ch := make(chan int, 1)
		a.held = append(a.held, ch)
		a.accepted++
		a.mu.Unlock()
		left := <-ch
		if left == lost {
			a.mu.Lock()
			a.accepted--
			a.mu.Unlock()
			return nil, errors.New("connection reset by peer")
		}
		return respondWith(req, left), nil
	}
	left := -1
	if a.left > 0 {
		a.left--
		left = a.left
		a.accepted++
	} else {
		a.refused++
	}
	a.mu.Unlock()
	time.Sleep(100 * time.Millisecond)
	return respondWith(req, left), nil
}

// lost, sent to a held call, fails it as a connection reset before the
// server counted it.
const lost = -2

// respondWith answers req with the count left, -1 meaning refused.
func respondWith(req *http.Request, left int) *http.Response {
	h := http.Header{}
	h.Set("X-RateLimit-Reset", "60")
	status := http.StatusOK
	if left < 0 {
		status, left = http.StatusTooManyRequests, 0
	}
	h.Set("X-RateLimit-Remaining", strconv.Itoa(left))
	return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: req}
}

// counts returns what the server accepted and refused so far.
func (a *reorderAPI) counts() (accepted, refused int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.accepted, a.refused
}

// firstBurst sends a first burst of n calls through a new Transport to
// api, which holds them, one call at a time so that api holds them in the
// order pacer admitted them. The Transport's configured limit is far above
// the server's, and its burst sends all n at once. The calls run on wg.
func firstBurst(t *testing.T, api *reorderAPI, n int) (http.RoundTripper, *sync.WaitGroup) {
	t.Helper()
	api.holding = true
	tr := New(api, WithLimit(Limit{Count: 1000, Per: time.Second, Burst: 1000}), WithoutRetry(), WithLogger(slogTo(io.Discard)))
	wg := new(sync.WaitGroup)
	for range n {
		wg.Go(func() { get(tr, context.Background(), "http://api.test/") })
		synctest.Wait()
	}
	if len(api.held) != n {
		t.Fatalf("%d calls in flight, want the first burst's %d", len(api.held), n)
	}
	return tr, wg
}

// release stops api holding, with left of its limit left after the calls
// it holds, and returns those calls, for the test to answer.
func (a *reorderAPI) release(left int) []chan int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.left, a.holding = left, false
	return a.held
}

// callAtOnce has n callers call through tr at once, with ctx, on wg.
func callAtOnce(ctx context.Context, tr http.RoundTripper, wg *sync.WaitGroup, n int) {
	for range n {
		wg.Go(func() { get(tr, ctx, "http://api.test/") })
	}
}

// A scope's first burst goes out at once, and the server counts its calls
// in whatever order they reach it: here the reverse of the order pacer
// admitted them in, so the last call admitted was counted first, and says
// nearly the whole limit is left. Its answer comes back first. The calls
// admitted after it are none: read net of those alone, the count freed the
// callers to spend what the calls still in flight had already taken, and
// the server refused them (a project's token limit did so, drafts on two
// models sent at once). Read net of the burst's calls not yet answered, it
// leaves what the server has left, and nothing is refused.
func TestAFirstBurstsCountIsNetOfTheCallsNotYetAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit, burst = 40, 32
		api := &reorderAPI{}
		tr, wg := firstBurst(t, api, burst)
		held := api.release(limit - burst)
		// The last to arrive was counted first: limit-1 left after it.
		held[burst-1] <- limit - 1
		synctest.Wait()

		// The callers call at once, as the one its answer freed does.
		ctx, cancel := context.WithCancel(context.Background())
		callAtOnce(ctx, tr, wg, burst)
		synctest.Wait() // every call that went out has reached the server
		accepted, refused := api.counts()
		for i := burst - 2; i >= 0; i-- {
			held[i] <- limit - burst + i // counted in reverse: the first admitted, last
		}
		cancel()
		wg.Wait()
		if refused > 0 {
			t.Errorf("%d calls refused after the first burst's first answer, want none: the calls still in flight had spent what it said was left", refused)
		}
		if accepted <= burst {
			t.Errorf("%d calls accepted, none after the first burst's %d: the count stalled the scope", accepted, burst)
		}
	})
}

// A first burst's calls that failed on the way, never counted, are
// answered all the same: they are no call the server may count later, and a
// count read after them is not net of them. Half of a burst of 32 lost to
// a connection reset, the server counted 16 of its 40; the answer of the
// last call admitted, counted last, says 24 are left, and they are spent.
func TestAFirstBurstsLostCallsAreNotTakenOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit, burst = 40, 32
		api := &reorderAPI{}
		tr, wg := firstBurst(t, api, burst)
		held := api.release(limit - burst/2)
		for i := range burst / 2 {
			held[i] <- lost
		}
		synctest.Wait()
		for i := burst / 2; i < burst; i++ {
			held[i] <- limit - i - 1 + burst/2 // counted, answered and read in order
			synctest.Wait()
		}
		ctx, cancel := context.WithCancel(context.Background())
		callAtOnce(ctx, tr, wg, burst)
		synctest.Wait()
		accepted, refused := api.counts()
		cancel()
		wg.Wait()
		if sent := accepted - burst/2; refused > 0 || sent < limit-burst/2-1 {
			t.Errorf("after the burst: %d accepted, %d refused; want the %d left spent, none refused", sent, refused, limit-burst/2)
		}
	})
}

// A first burst's answers read out of order clamp the bucket one after
// another, and the store brings the bucket up to date before each clamp
// at the pace of the demand it is handed. Handed the demand the call was
// admitted with, at the blind pace of a limit configured far above the
// server's, the bucket refilled between two clamps to more than the next
// count said was left, and the clamp set it there instead of lowering it:
// the answer of a call admitted early and counted early, read after the
// burst's last count, said 12 were left of the server's 8, and 12 went out
// at once. Refilled at the pace the counts set, the bucket holds what the
// counts said, and nothing is refused — so long as the floor below the
// margin lasts to the reset (pace.reading.lastsToReset): at half the blind
// pace, 450 a second, the callers went on past the server's 8 into 24
// refusals.
func TestAClampDoesNotRefillAtThePaceTheCallWasAdmittedAt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit, burst = 40, 32
		api := &reorderAPI{}
		tr, wg := firstBurst(t, api, burst)
		held := api.release(limit - burst)
		// The server counted the fifth call first, then the first four,
		// then the rest in order; the 28th, counted last, is read first.
		counted := make([]int, burst) // what was left after each call, by admission
		counted[4] = limit - 1
		for i := range 4 {
			counted[i] = limit - 2 - i
		}
		for i := 5; i < burst; i++ {
			counted[i] = limit - 1 - i
		}
		answer := func(i int) {
			held[i] <- counted[i]
			synctest.Wait()
			time.Sleep(50 * time.Millisecond)
		}
		answer(27) // 8 left, net of 27 calls unanswered: none
		for i := range 5 {
			answer(i) // the fifth: 39 left, net of 27 admitted after it: 12
		}
		ctx, cancel := context.WithCancel(context.Background())
		callAtOnce(ctx, tr, wg, burst)
		synctest.Wait()
		for i := 5; i < burst; i++ {
			if i != 27 {
				held[i] <- counted[i]
			}
		}
		cancel()
		wg.Wait()
		if _, refused := api.counts(); refused > 0 {
			t.Errorf("%d calls refused after the first burst's answers were read out of order, want none: a clamp refilled the bucket at the blind pace", refused)
		}
	})
}
