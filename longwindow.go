package pacer

// Long windows paced to their end. A limit whose window is an hour, a day
// or a week (GitHub's hourly count, Anthropic's 5-hour and weekly unified
// windows) is met at the scope's short-window pace long before its reset:
// a batch spends the window in minutes and then waits out the rest. For
// the workloads that say their calls can wait (Workload.SpreadLongWindows)
// the window is spread instead, so that the work lasts to the reset.
//
// The rule is lastingPace: what is left, over the time to the reset. It
// relies on one property of the server, which the window's own reset
// states: what is spent in the window does not come back before its reset
// (a fixed window, as GitHub's and Anthropic's reopen whole at the time
// they give). On a window that gives back sooner (a sliding one) the
// spread is only slower than it might be, never a refusal.
//
// What is left is read from the headers: a count's remaining, less what
// the scope sent since it was counted; for a window reported only as a
// share used (Anthropic's unified windows), the share left times the
// window's size in the scope's units, measured as the units the scope
// spent while the share used grew (at least minShareStep of it). Spend by
// other clients of the same window grows the share too, so the size is
// underestimated and the spread errs slow, never fast.
//
// The workloads that spread are paced together on each bucket by a
// theoretical arrival time (GCRA, no burst): one atomic word, read before
// admission and moved on after it; the others go at the scope's pace, and
// their spend shrinks what is left for the patient ones.

import (
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacer-go/pacer/ratelimitheader"
)

const (
	// longWindowMin is the shortest window paced to its end: shorter ones
	// are the remaining-driven pace's (remaining.go).
	longWindowMin = time.Hour
	// minShareStep is the least growth of a share used that a window's
	// size is measured over: Anthropic's shares come with two decimals in
	// some captures, and a step of one hundredth is half rounding.
	minShareStep = 0.02
	// longMargin is the share of a window left unspent: the rounding of
	// the share, and the calls in flight when the pace was set.
	longMargin = 0.02
)

// lastingPace is the pace, in units a second, that spends remaining units
// by resetAt, starting at now: the one rule of long windows. 0 when the
// window has reopened (nothing to spread: the scope paces alone) or
// nothing is left (the caller keeps its floor: one call within the maximum
// wait, so that no report holds the workload longer).
func lastingPace(remaining float64, resetAt, now time.Time) float64 {
	left := resetAt.Sub(now)
	if left <= 0 || remaining <= 0 {
		return 0
	}
	return remaining / left.Seconds()
}

// longWindow is what a bucket knows of one long window. Under longState.mu.
type longWindow struct {
	w       ratelimitheader.Window // as last reported
	at      int64                  // UnixNano of that report
	resetAt int64                  // UnixNano it reopens; 0 if not said
	spentAt int64                  // the scope's spent units when the report's call was admitted
	// For a window reported as a share: the first report of this window,
	// and the window's size in the scope's units once measured.
	baseUsed  float64
	baseSpent int64
	size      float64
}

// longPace is the pace the spreading workloads are admitted at on a
// bucket, until the window that binds reopens. Immutable.
type longPace struct {
	rate  float64 // units a second
	until int64   // UnixNano
}

// longState is a bucket's long windows, made the first time a response
// reports one.
type longState struct {
	mu      sync.Mutex
	windows []longWindow
	pace    atomic.Pointer[longPace]
	tat     atomic.Int64 // UnixNano before which no spreading call is admitted (GCRA)
}

// learnLongWindows records the long windows a response reports on the
// scopes they concern: Anthropic's unified windows on every scope of the
// call (they are the account's), a count whose window is an hour or more
// on the scope it is charged to (chargeFor). Cheap on a response with
// neither: a pass over its header keys, no allocation.
func (c *call) learnLongWindows(h http.Header, now time.Time, quotas []ratelimitheader.Quota) {
	if u, ok := ratelimitheader.ParseUnified(h, now); ok && len(u.Windows) > 0 {
		for i := range c.charges {
			for _, w := range u.Windows {
				if w.Used >= 0 {
					c.charges[i].bucket.noteLongWindow(now, w, c.charges[i].spentAt, c.t.maxWait)
				}
			}
		}
	}
	for _, q := range quotas {
		if q.Limit <= 0 || q.Remaining < 0 || !q.HasReset {
			continue
		}
		i := c.chargeFor(q)
		if i < 0 {
			continue
		}
		s := c.charges[i].bucket
		period := q.Window
		if cfg := s.scope.configured.Load(); period == 0 && q.Limit == int64(cfg.limit.Count) {
			period = cfg.limit.Per // GitHub's hourly count, published without its window
		}
		if period < longWindowMin {
			continue
		}
		name := q.Name
		if name == "" {
			name = q.Unit
		}
		used := 1 - min(1, float64(q.Remaining)/float64(q.Limit))
		s.noteLongWindow(now, ratelimitheader.Window{Name: name, Period: period, Used: used, Limit: q.Limit,
			Remaining: q.Remaining, Reset: q.Reset, HasReset: true, Threshold: -1}, c.charges[i].spentAt, c.t.maxWait)
	}
}

// noteLongWindow takes a report of w, answering a call admitted when the
// scope had spent spentAt units, and sets the bucket's lasting pace.
func (s *bucket) noteLongWindow(now time.Time, w ratelimitheader.Window, spentAt int64, maxWait time.Duration) {
	l := s.long.Load()
	if l == nil {
		s.long.CompareAndSwap(nil, &longState{})
		l = s.long.Load()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var lw *longWindow
	for i := range l.windows {
		if l.windows[i].w.Name == w.Name {
			lw = &l.windows[i]
		}
	}
	if lw == nil {
		if len(l.windows) >= 8 {
			return
		}
		l.windows = append(l.windows, longWindow{baseUsed: w.Used, baseSpent: spentAt})
		lw = &l.windows[len(l.windows)-1]
	} else if spentAt < lw.spentAt {
		return // an answer overtaken by a later one
	}
	var resetAt int64
	if w.HasReset {
		resetAt = now.Add(w.Reset).UnixNano()
	}
	if w.Used < lw.w.Used-minShareStep || lw.resetAt != 0 && resetAt > lw.resetAt+int64(time.Minute) {
		// The window reopened: measure afresh from here, keeping its size.
		lw.baseUsed, lw.baseSpent = w.Used, spentAt
	}
	lw.w, lw.at, lw.resetAt, lw.spentAt = w, now.UnixNano(), resetAt, spentAt
	if w.Remaining < 0 && w.Used-lw.baseUsed >= minShareStep && spentAt > lw.baseSpent {
		lw.size = float64(spentAt-lw.baseSpent) / (w.Used - lw.baseUsed)
	}
	s.setLastingPace(now, l, maxWait)
}

// setLastingPace sets l's pace: the slowest lastingPace of its windows
// that have a reset ahead and a known size, and at least the floor that
// sends a call within maxWait (floorRate): a window said to be spent holds
// the spreading workloads no longer than a pause would. Under l.mu.
func (s *bucket) setLastingPace(now time.Time, l *longState, maxWait time.Duration) {
	var best *longPace
	spent := s.spent.Load()
	for i := range l.windows {
		lw := &l.windows[i]
		if lw.resetAt <= now.UnixNano() {
			continue
		}
		var left float64
		switch {
		case lw.w.Remaining >= 0:
			left = float64(lw.w.Remaining) - longMargin*float64(lw.w.Limit)
		case lw.size > 0:
			left = (1 - longMargin - lw.w.Used) * lw.size
		default:
			continue // a share whose size is not measured yet
		}
		left -= float64(spent - lw.spentAt) // sent since the count
		rate := max(lastingPace(left, time.Unix(0, lw.resetAt), now), s.floorRate(maxWait))
		if best == nil || rate < best.rate {
			best = &longPace{rate: rate, until: lw.resetAt}
		}
	}
	l.pace.Store(best)
}

// lastingWait returns how long a call of a spreading workload waits on s
// before admission, and false when it need not.
func (s *bucket) lastingWait(now time.Time) (time.Duration, bool) {
	l := s.long.Load()
	if l == nil {
		return 0, false
	}
	if p := l.pace.Load(); p == nil || p.rate <= 0 || now.UnixNano() >= p.until {
		return 0, false
	}
	if tat := l.tat.Load(); tat > now.UnixNano() {
		return time.Duration(tat - now.UnixNano()), true
	}
	return 0, false
}

// spreadAdmitted moves s's theoretical arrival time on by cost at the
// lasting pace, for a spreading call just admitted.
func (s *bucket) spreadAdmitted(now time.Time, cost float64) {
	l := s.long.Load()
	if l == nil {
		return
	}
	p := l.pace.Load()
	if p == nil || p.rate <= 0 || now.UnixNano() >= p.until {
		return
	}
	step := int64(cost / p.rate * 1e9)
	for {
		old := l.tat.Load()
		next := max(old, now.UnixNano()) + step
		if l.tat.CompareAndSwap(old, next) {
			return
		}
	}
}

// addLongStats adds s's long windows to sc as Stats shows them, their
// resets from now: a window another of the scope's buckets (keys) reported
// too is the latest report of the two (Anthropic's unified windows are the
// account's, whatever the key). LastingPace is the slowest in force among
// the buckets. reported holds when each of sc.Windows was reported.
func (s *bucket) addLongStats(sc *ScopeStats, reported *[]int64, now time.Time) {
	l := s.long.Load()
	if l == nil {
		return
	}
	l.mu.Lock()
	for _, lw := range l.windows {
		w := lw.w
		if lw.resetAt != 0 {
			w.Reset = max(0, time.Duration(lw.resetAt-now.UnixNano()))
		}
		i := slices.IndexFunc(sc.Windows, func(o ratelimitheader.Window) bool { return o.Name == w.Name })
		switch {
		case i < 0:
			sc.Windows, *reported = append(sc.Windows, w), append(*reported, lw.at)
		case lw.at > (*reported)[i]:
			sc.Windows[i], (*reported)[i] = w, lw.at
		}
	}
	l.mu.Unlock()
	if p := l.pace.Load(); p != nil && now.UnixNano() < p.until && p.rate > 0 && (sc.LastingPace == 0 || p.rate < sc.LastingPace) {
		sc.LastingPace = p.rate
	}
}
