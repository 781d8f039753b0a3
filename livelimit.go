package pacer

import (
	"fmt"
	"math"
	"strings"

	"github.com/pacer-go/pacer/internal/pace"
	"github.com/pacer-go/pacer/observe"
)

// configuredLimit is a scope's configured Limit and its pace after headroom.
type configuredLimit struct {
	limit Limit
	// The pace it sets (Rate and Burst, 0 without a rate), as the scope's
	// pace.Model takes it.
	pace.Configured
}

// setLimit makes l the scope's configured limit and returns the one it
// replaces.
func (c *configuredScope) setLimit(l Limit, headroom float64) *configuredLimit {
	rate, burst := l.shape(headroom)
	cl := &configuredLimit{limit: l, Configured: pace.Configured{Capacity: pace.Capacity{Rate: rate, Burst: burst}, Provisional: c.Provisional}}
	if rate > 0 {
		cl.Raw = float64(l.Count) / l.Per.Seconds()
		cl.EdgeBurst = pace.EdgeBurst(c.countsRequests, float64(l.Count), burst)
	}
	return c.configured.Swap(cl)
}

// configuredPace returns the pace of the scope's configured Limit.
func (c *configuredScope) configuredPace() (rate, burst float64) {
	p := c.configured.Load()
	return p.Rate, p.Burst
}

// SetLimit changes the Limit of the named scope while the Transport runs,
// for every bucket of the scope, at once: the next call is paced at the
// new limit, and so is a call already waiting, which re-reads the pace
// when it next tries. Nothing is lost: the tokens in hand stay (down to the
// new burst, if it is smaller), waiting calls keep their places, calls in
// flight keep their slots. Tokens refilled since a bucket's last take are
// counted at the new rate.
//
// The new limit is the configured one from now on, and a limit the
// provider publishes combines with it as with one given to New: a published
// limit below it wins, one above it wins only if the scope is Provisional.
// A limit learned before the change is forgotten, so the change applies at
// once; the provider's next report teaches it again.
//
// Concurrency is not changed. With store.Policy.LimitSync, the change is
// published in the shared store and every instance applies it within the
// interval; without it, it is this process's alone. An
// observe.EventLimitChanged says who changed what: observe.OriginSetLimit
// here, observe.OriginStore on the other instances. A scope that is not
// declared, or an invalid Limit, is an error, and nothing changes.
func (t *Transport) SetLimit(scope string, l Limit) error {
	cs := t.scopes[scope]
	if cs == nil {
		return fmt.Errorf("pacer: SetLimit: scope %q is not declared; declare it with WithScope", scope)
	}
	if err := l.validate(); err != nil {
		return fmt.Errorf("pacer: SetLimit: scope %q: %w", scope, err)
	}
	if err := t.publishLimit(scope, l); err != nil {
		return err
	}
	t.applyLimit(cs, l, observe.OriginSetLimit)
	return nil
}

// applyLimit makes l the scope's configured limit, as SetLimit says.
func (t *Transport) applyLimit(cs *configuredScope, l Limit, origin string) {
	old := cs.setLimit(l, t.headroom)
	cs.eachBucket(func(s *bucket) {
		s.forgetPublished(nil)
		// The head's timer was set at the old pace: wake it to re-read.
		if s.waiting.Load() > 0 {
			s.headOf().Signal()
		}
	})
	t.emit(observe.Event{Kind: observe.EventLimitChanged, Scope: cs.Name, Limit: observe.Limit(l), Previous: observe.Limit(old.limit), Origin: origin})
}

// eachBucket calls f on every bucket the scope holds, outside the
// scope's lock, so that f may take a bucket's own.
func (c *configuredScope) eachBucket(f func(*bucket)) {
	f(c.shared)
	c.mu.Lock()
	states := make([]*bucket, 0, len(c.keyed))
	for _, s := range c.keyed {
		states = append(states, s)
	}
	c.mu.Unlock()
	for _, s := range states {
		f(s)
	}
}

// workloadShares is what the workloads reserve and may use of one scope,
// by workload index. It is replaced whole, never changed, so the hot path
// reads a consistent one with a single load.
type workloadShares struct {
	sharesSlots bool      // some workload reserves or caps slots
	reserve     []float64 // each workload's Reserve: its rank in queues
	max         []float64 // each workload's Max; 0 when uncapped
	// The share of the burst the other workloads reserve; the slots the
	// workload reserves; the most slots it may hold; and the name of the
	// bucket that caps its share of the rate ("" when uncapped).
	othersReserve []float64
	reservedSlots []int
	maxSlots      []int
	maxScope      []string
}

// newShares works out the scope's shares for the workloads, in index order.
func (c *configuredScope) newShares(workloads []namedWorkload) *workloadShares {
	n := len(workloads)
	sh := &workloadShares{
		reserve: make([]float64, n), max: make([]float64, n), othersReserve: make([]float64, n),
		reservedSlots: make([]int, n), maxSlots: make([]int, n), maxScope: make([]string, n),
	}
	var totalReserve float64
	for _, w := range workloads {
		totalReserve += w.Reserve
	}
	for i, w := range workloads {
		sh.sharesSlots = sh.sharesSlots || w.Reserve > 0 || w.Max > 0
		sh.reserve[i], sh.max[i] = w.Reserve, w.Max
		sh.othersReserve[i] = totalReserve - w.Reserve
		sh.reservedSlots[i] = reservedSlots(w.Reserve, c.Concurrency)
		if w.Max > 0 {
			sh.maxSlots[i] = max(1, int(math.Floor(w.Max*float64(c.Concurrency)+1e-9)))
			sh.maxScope[i] = reservedPrefix + "max:" + w.name + ":" + c.Name
		}
	}
	return sh
}

// SetWorkload changes a declared workload while the Transport runs: its
// Reserve, Max, MaxWaiting and ShedLowest, on every scope at once (not its
// Budget, TakesUndeclared or SpreadLongWindows). Calls in
// flight keep their slots and calls waiting keep their places (a waiter
// is ranked by the Reserve it queued with, and counts against the new
// MaxWaiting, whatever the bound was when it began to wait); the next
// decisions use the new figures. The Budget cannot change at runtime yet: a Workload whose
// Budget differs from the one configured is an error, as are an
// undeclared name, an invalid Workload, and reserves that would add up to
// more than 1; on an error nothing changes. An observe.EventWorkloadChanged says
// which workload changed.
func (t *Transport) SetWorkload(name string, w Workload) error {
	t.setMu.Lock()
	defer t.setMu.Unlock()
	ws := t.workloads[name]
	if ws == nil {
		return fmt.Errorf("pacer: SetWorkload: workload %q is not declared; declare it with WithWorkload at New", name)
	}
	if err := w.validate(name); err != nil {
		return fmt.Errorf("pacer: SetWorkload: %w", err)
	}
	if strings.EqualFold(w.Budget.Unit, ws.Budget.Unit) {
		w.Budget.Unit = ws.Budget.Unit // as New matched it
	}
	if w.Budget != ws.Budget {
		return fmt.Errorf("pacer: SetWorkload: workload %q: its Budget cannot change at runtime; keep %+v", name, ws.Budget)
	}
	if w.TakesUndeclared != ws.TakesUndeclared {
		return fmt.Errorf("pacer: SetWorkload: workload %q: TakesUndeclared cannot change at runtime; keep %v", name, ws.TakesUndeclared)
	}
	if w.SpreadLongWindows != ws.SpreadLongWindows {
		return fmt.Errorf("pacer: SetWorkload: workload %q: SpreadLongWindows cannot change at runtime; keep %v", name, ws.SpreadLongWindows)
	}
	list := t.workloadList()
	list[ws.index].Workload = w
	var reserves float64
	for _, v := range list {
		reserves += v.Reserve
	}
	if reserves > 1+1e-9 {
		return fmt.Errorf("pacer: SetWorkload: workload %q: the workloads' reserves would add up to %v; they must add up to at most 1", name, reserves)
	}
	for _, cs := range t.scopes {
		cs.shares.Store(cs.newShares(list))
		// A raised Max or a changed reserve may admit a waiting call now,
		// with no slot released: wake each queue's head to look again.
		cs.eachBucket(func(s *bucket) {
			if s.waiting.Load() > 0 {
				s.headOf().Signal()
			}
		})
	}
	ws.waiting.Set(w.MaxWaiting, w.ShedLowest)
	t.current[ws.index] = w
	t.emit(observe.Event{Kind: observe.EventWorkloadChanged, Workload: name, Origin: observe.OriginSetWorkload})
	return nil
}

// workloadList returns the workloads as they are now, by index. t.setMu
// must be held.
func (t *Transport) workloadList() []namedWorkload {
	list := make([]namedWorkload, len(t.workloads))
	for name, ws := range t.workloads {
		list[ws.index] = namedWorkload{name, t.current[ws.index]}
	}
	return list
}
