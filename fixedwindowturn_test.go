package pacer

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/internal/pace"
	"github.com/pacer-go/pacer/internal/queue"
)

// fixedWindow feeds s the reports of a fixed window of 100 a second that
// refills on each second, one call of the scope's every 10 ms, for n
// windows, the last cut short after its first calls: each call counted,
// and a neighbour's with every neighbourEvery-th of them (0: none).
func fixedWindow(s *bucket, windows, neighbourEvery, last int) {
	for w := range windows {
		remaining := int64(100)
		for i := range 100 {
			if w == windows-1 && i == last {
				return
			}
			if w > 0 || i > 0 {
				time.Sleep(10 * time.Millisecond)
			}
			if remaining <= 1 {
				continue // the window is spent: the scope waits for it to turn
			}
			remaining--
			if neighbourEvery > 0 && i%neighbourEvery == 0 {
				remaining--
			}
			s.reportRemaining(time.Now(), pace.Count{Remaining: remaining, Reset: time.Second, Limit: 100, Mark: s.spent.Add(1), Local: true}, defaultMaxWait)
		}
	}
}

// A fixed window is full again when it turns, and the count at the end of
// the one before says nothing of it: a count of one left, at the margin,
// set a crawl of one call in twenty seconds, and the calls waiting on it
// slept past the refill with nothing in flight to bring its news (the
// matrix's fixed window over a round trip lost a fifth of its windows).
// The pace calls for a call by the refill seen coming.
func TestAFixedWindowsTurnIsCalledFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(http.DefaultTransport, WithLimit(PerSecond(100)))
		s := tr.defaultScope.shared
		// A neighbour takes a call for each of the scope's: the count is
		// down to one half way through the fourth window.
		fixedWindow(s, 4, 1, 50)
		v, _ := s.reportRemaining(time.Now(), pace.Count{Remaining: 1, Reset: time.Second, Limit: 100, Mark: s.spent.Add(1), Local: true}, defaultMaxWait)
		s.mu.Lock()
		next := s.reports.Refill(time.Now(), time.Second)
		s.mu.Unlock()
		if next < 400*time.Millisecond || next > 600*time.Millisecond {
			t.Fatalf("the refills say the window turns in %v, want half a second", next)
		}
		if v.Rate < 1/next.Seconds() {
			t.Errorf("pace %.2f a second with the window turning in %v: the first call of the next window is due %v after it", v.Rate, next, time.Duration(float64(time.Second)/v.Rate)-next)
		}
	})
}

// A fixed window gives nothing back before it turns: a count that falls
// faster than the scope spends is a neighbour's, which goes on spending
// until the turn. Spending what is left over the window regardless, the
// scope took the window's count in its first seven tenths, and the
// neighbour was refused for the rest.
func TestANeighbourOnAFixedWindowKeepsItsShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(http.DefaultTransport, WithLimit(PerSecond(100)))
		s := tr.defaultScope.shared
		// A neighbour takes a call for every two of the scope's, 50 a
		// second while both spend: half way through the fourth window,
		// 40 are left.
		fixedWindow(s, 4, 2, 50)
		s.reportRemaining(time.Now(), pace.Count{Remaining: 40, Reset: time.Second, Limit: 100, Mark: s.spent.Add(1), Local: true}, defaultMaxWait)
		// Alone, 39 in half a second is 78 a second; the neighbour takes 25
		// of them.
		if rate, _ := s.pace(); rate > 60 {
			t.Errorf("pace %.0f a second with 40 left for half a second of a window a neighbour spends 50 a second of: want at most 78 − 25", rate)
		}
	})
}

// A call waiting on a scope sleeps for the wait the store gave it at the
// pace of its last try: a report that raises the pace wakes the head of
// the queue to try again, or it sleeps on at the old pace while the scope
// has quota to spend.
func TestARisenPaceWakesTheWaitingCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(http.DefaultTransport, WithLimit(PerSecond(100)))
		s := tr.defaultScope.shared
		fixedWindow(s, 3, 0, 98)
		w := queue.NewWaiter(0, 0, 1, 0, time.Now())
		s.enqueue(w)
		defer s.leave(w)
		time.Sleep(5 * time.Millisecond)
		s.reportRemaining(time.Now(), pace.Count{Remaining: 1, Reset: time.Second, Limit: 100, Mark: s.spent.Add(1), Local: true}, defaultMaxWait)
		select {
		case <-w.Wake(): // a wake from the report before, if any
		default:
		}
		time.Sleep(30 * time.Millisecond)
		// The window turned: 99 left.
		s.reportRemaining(time.Now(), pace.Count{Remaining: 99, Reset: time.Second, Limit: 100, Mark: s.spent.Add(1), Local: true}, defaultMaxWait)
		select {
		case <-w.Wake():
		default:
			t.Error("a report that raised the pace from a crawl to the window's full count left the waiting call asleep")
		}
	})
}

// A fixed window counts a call when it arrives. Over a round trip of 300
// ms, the calls sent in the last 150 ms before a turn arrive after it and
// spend the next window, and so does every call sent from a round trip
// before it on: a count near the window's end, less the 30 calls in
// flight, read as nothing left, emptied the bucket at every window's end,
// and each window began late. The scope reads what the next window has
// left instead: its count less the calls already on their way to it.
func TestTheCallsInFlightAtAFixedWindowsTurnSpendTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(http.DefaultTransport, WithLimit(PerSecond(100)))
		s := tr.defaultScope.shared
		const way = 150 * time.Millisecond
		start := time.Now()
		type answer struct {
			due             time.Time
			sent, mark, rem int64
		}
		var (
			inFlight []answer
			window   = -1
			counted  int64
			left     float64
			atEnd    []float64 // left as the last 100 ms before each turn read it
			paces    []float64 // the pace then
			whys     []string  // and what Stats said set it
		)
		for tick := range 500 { // 5 s, a call every 10 ms
			if tick > 0 {
				time.Sleep(10 * time.Millisecond)
			}
			now := time.Now()
			// The server counts the call when it arrives, in the window of
			// its arrival.
			if w := int(now.Add(way).Sub(start) / time.Second); w != window {
				window, counted = w, 0
			}
			counted++
			inFlight = append(inFlight, answer{due: now.Add(2 * way), sent: now.UnixNano(), mark: s.spent.Add(1), rem: max(0, 100-counted)})
			for len(inFlight) > 0 && !inFlight[0].due.After(now) {
				a := inFlight[0]
				inFlight = inFlight[1:]
				v, _ := s.reportRemaining(now, pace.Count{Remaining: a.rem, Reset: time.Second, Limit: 100, Mark: a.mark, Sent: a.sent, Local: true}, defaultMaxWait)
				left = v.Left
			}
			if e := now.Sub(start); e > 2*time.Second && e%time.Second > 900*time.Millisecond {
				atEnd = append(atEnd, left)
				rate, _ := s.pace()
				paces = append(paces, rate)
				whys = append(whys, tr.Stats().Scopes[0].Why)
			}
		}
		if len(atEnd) == 0 {
			t.Fatal("no report in the last tenth of a window")
		}
		low := slices.Min(atEnd)
		// 100 a window, of which the 15 to 25 calls sent since a round
		// trip before the turn are on their way to the next.
		if low < 50 {
			t.Errorf("in the last tenth of a window, with the calls sent since go to the next, the scope read %.0f left (least of %d reports), want the next window's, about 75", low, len(atEnd))
		}
		next := 0
		for _, why := range whys {
			if strings.Contains(why, "next window") {
				next++
			}
		}
		if next < len(whys)/2 {
			t.Errorf("in the last tenth of a window, Stats said the next window's count set the pace %d times of %d (%q)", next, len(whys), whys[0])
		}
		if p := slices.Min(paces); p < 80 {
			t.Errorf("pace %.0f a second in the last tenth of a window, want the next window's, at least 80", p)
		}
	})
}
