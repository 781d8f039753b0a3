package pacer

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/pacer-go/pacer/internal/queue"
)

// DefaultWorkload is the workload of a request whose context names none.
// Configure it like any other, with WithWorkload(DefaultWorkload, …).
// A context naming a workload the Transport does not declare is an error,
// unless a workload TakesUndeclared.
const DefaultWorkload = "default"

// A Workload is a class of traffic that shares the Transport's scopes with
// others: interactive requests and a nightly backfill, say.
//
// While several workloads wait on a scope, the one with the larger Reserve
// is served first; within a workload, calls are served in arrival order.
// The scheduler is work-conserving: a workload without a Max may use the
// whole rate and every slot of each scope while the others are idle; one
// with a Max, at most that share of each scope it is charged to. A call
// charged to several scopes is held to the tightest: with the Stripe preset,
// whose per-endpoint scope paces every endpoint at 25/s of a 100/s account
// (in live mode), a Max of 0.7 lets a backfill that calls one endpoint
// 25 × 0.9 × 0.7 ≈ 15.8/s (after the 0.9 headroom), not the 63/s that 0.7
// of the account's rate suggests; spread over four endpoints or more, it
// reaches the 63/s. What a workload reserves is kept for it in two ways:
//
//   - The reserved part of a scope's burst is never spent by others, so it
//     is there the instant its workload comes back. On a slow scope (a
//     day's count, say) it is at most what the scope refills in the
//     maximum wait (WithMaxWait): once a refusal has emptied the bucket,
//     the others wait no longer than that for the reserve to refill.
//   - Reserved concurrency slots are lent: others may take them while the
//     workload has no call waiting on the scope. A lent slot comes back when
//     the borrower's call ends (no call is cut short): a workload holding
//     fewer slots than it reserves is first in line for the next slot freed,
//     before every other workload whatever its Reserve, and while it waits
//     no other workload takes a slot it reserved.
type Workload struct {
	// Reserve is the share (0 to 1) of every scope's burst and concurrency
	// kept for this workload (see above), and its priority in queues. The
	// workload itself may use everything. Reserves of all workloads add up
	// to at most 1.
	//
	// On a scope of n slots, a reserve holds Reserve × n slots rounded down,
	// so reserves never add up to more slots than there are: of 10 slots a
	// Reserve of 0.25 holds 2 and 0.3 holds 3; of 2 slots, 0.3 holds none
	// and 0.5 holds one; of 1 slot, two reserves of 0.5 hold none. A reserve
	// that holds no slot still serves its workload first. When a 429 lowers
	// a scope's cap (Scope.Concurrency), the reserved slots shrink alike.
	Reserve float64
	// Max is the largest share (0 to 1) of every scope's rate, burst and
	// concurrency this workload may use; of n slots, Max × n rounded down,
	// and at least one. It applies to each scope on its own, so on a
	// per-endpoint scope it is a share of one endpoint's rate (see above).
	// Zero means no cap beyond what others reserve.
	Max float64
	// Budget is a hard spend cap, charged per attempt sent (see Budget).
	// Past it, an attempt is not sent: a call fails at once with an error
	// matching ErrBudgetExhausted. The zero Budget means no cap.
	Budget Budget
	// MaxWaiting bounds the workload's calls waiting for admission, on
	// every scope together; zero means no bound. A call that would wait
	// beyond it is refused, or makes room by shedding another, as
	// ShedLowest says; either way the call refused gets a *ThrottledError whose Reason
	// is observe.ReasonQueueFull. A call that is admitted at once never counts.
	// SetWorkload may change it while calls wait, to or from zero too: it
	// refuses or sheds none of them, and they count against the new bound
	// whenever they began waiting.
	MaxWaiting int
	// ShedLowest says what a full queue (MaxWaiting) does with a call that
	// would wait. False, the default, refuses that call (Bottleneck's
	// OVERFLOW): the calls already waiting keep their places. True drops
	// the waiting call of the lowest priority (Call.Priority), the oldest
	// among equals, to make room (Bottleneck's LEAK); a newcomer whose
	// priority is below every waiter's is the one refused. Without
	// MaxWaiting nothing is full, and it has no effect.
	ShedLowest bool
	// TakesUndeclared makes this workload take the calls whose context
	// names a workload the Transport does not declare, as if they were its
	// own; Stats.Undeclared counts them by name, and the log says each name
	// once. Without it, such a call fails at once, nothing sent, with an
	// error naming the workload and the declared ones: a typo in a name
	// must not escape its workload's budget. Set it on one workload at
	// most, for a context that flows through Transports declaring different
	// workloads; DefaultWorkload is the usual choice.
	TakesUndeclared bool
	// SpreadLongWindows says the workload's calls can wait: on a scope
	// whose provider reports a window of an hour or more (a count such as
	// GitHub's hourly one, Anthropic's 5-hour and weekly unified windows),
	// they are admitted at the pace that makes what is left of the window
	// last to its reset, instead of spending it at the scope's pace and
	// meeting the wall (longwindow.go). The workloads that spread are paced
	// together; the others keep the scope's pace, and what they spend is
	// taken off what is left. Its zero value, false, spends at the scope's
	// pace. It cannot change at runtime (SetWorkload).
	SpreadLongWindows bool
}

func (w Workload) validate(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("WithWorkload: the name must not be empty")
	case !(w.Reserve >= 0 && w.Reserve <= 1): // NaN too
		return fmt.Errorf("workload %q: Reserve %v must be a number between 0 and 1", name, w.Reserve)
	case !(w.Max >= 0 && w.Max <= 1):
		return fmt.Errorf("workload %q: Max %v must be a number between 0 and 1 (0 means no cap)", name, w.Max)
	case w.Max > 0 && w.Max < w.Reserve:
		return fmt.Errorf("workload %q: Max %v is below its Reserve %v", name, w.Max, w.Reserve)
	case w.MaxWaiting < 0:
		return fmt.Errorf("workload %q: MaxWaiting %d must not be negative (0 means no bound)", name, w.MaxWaiting)
	}
	return w.Budget.validate(name)
}

// workloadState is a configured workload as the Transport uses it.
type workloadState struct {
	Workload
	name        string
	index       int
	budgetState               // budget.go
	waiting     queue.Bounded // its waiting calls, when MaxWaiting bounds them
	fair        queue.Fair    // its tenants' fair-queuing tags
	// implicit: New made it, as DefaultWorkload, for no WithWorkload
	// declared it; Stats lists it only once something was charged to it.
	implicit bool
	counts   workloadCounts // what its calls met, for Stats (stats.go)
}

// maxUnknownWorkloads bounds the names a Transport remembers having said are
// undeclared, however many a caller makes up.
const maxUnknownWorkloads = 64

// undeclaredOthers is the key of Stats.Undeclared that counts the calls of
// undeclared names beyond the first 64.
const undeclaredOthers = "(others)"

// unknownWorkload returns the workload that takes a call whose context named
// a workload no WithWorkload declared, or nil if none does (the call is then
// refused, with undeclaredError). It counts the call by name either way, for
// Stats, and says each name taken once in the log. It is off the hot path:
// only a call whose workload is missing reaches it.
func (t *Transport) unknownWorkload(name string) *workloadState {
	if n, ok := t.unknownWorkloads.Load(name); ok {
		n.(*atomic.Int64).Add(1)
		return t.undeclared
	}
	if t.unknownCount.Load() >= maxUnknownWorkloads {
		t.unknownOthers.Add(1)
		return t.undeclared
	}
	n, said := t.unknownWorkloads.LoadOrStore(name, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	if said {
		return t.undeclared
	}
	count := t.unknownCount.Add(1)
	if t.undeclared == nil {
		return nil // the call's error says it
	}
	msg := fmt.Sprintf("pacer: workload %q is not declared on this Transport, so its calls count as %q, which TakesUndeclared; declared: %s. "+
		"Declare it with WithWorkload, even as Workload{}, if the name is right (said once per name)", name, t.undeclared.name, t.declaredWorkloads())
	if count == maxUnknownWorkloads {
		msg += fmt.Sprintf("; after %d names, further ones are not said, and Stats counts them as %q", maxUnknownWorkloads, undeclaredOthers)
	}
	t.log.Warn(msg)
	return t.undeclared
}

// undeclaredError is the error of a call whose context named a workload the
// Transport does not declare, when no workload TakesUndeclared.
func (t *Transport) undeclaredError(name string) error {
	return fmt.Errorf("pacer: the context names workload %q, which this Transport does not declare; nothing was sent. Declared: %s. "+
		"Declare it with WithWorkload, even as Workload{}, if the name is right, or set TakesUndeclared on the workload that should take undeclared names",
		name, t.declaredWorkloads())
}

// declaredWorkloads lists the declared workloads' names, quoted, in order.
func (t *Transport) declaredWorkloads() string {
	declared := make([]string, 0, len(t.workloads))
	for w := range t.workloads {
		declared = append(declared, strconv.Quote(w))
	}
	slices.Sort(declared)
	return strings.Join(declared, ", ")
}

// undeclaredCounts returns the calls of undeclared workloads, by name, or
// nil when there were none.
func (t *Transport) undeclaredCounts() map[string]int64 {
	var out map[string]int64
	t.unknownWorkloads.Range(func(k, v any) bool {
		if out == nil {
			out = map[string]int64{}
		}
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	if n := t.unknownOthers.Load(); n > 0 {
		if out == nil {
			out = map[string]int64{}
		}
		out[undeclaredOthers] = n
	}
	return out
}
