package pacer

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pacer-go/pacer/internal/retryrule"
	"github.com/pacer-go/pacer/internal/storeguard"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/store"
)

// ErrThrottled matches every *ThrottledError: pacer did not send the request
// because the scope's limits did not allow it in time.
var ErrThrottled = errors.New("pacer: throttled")

// ErrBudgetExhausted matches every *BudgetError: the workload has spent its
// budget for the period, and the attempt it refused was not sent. When the
// budget stops a call between retries, the *BudgetError comes wrapped in a
// *retry.Error that says how many attempts were sent.
var ErrBudgetExhausted = retryrule.ErrBudgetExhausted

// ErrExceedsCapacity is the cause of a *ThrottledError for a request that
// costs more than its scope's bucket can ever hold: no wait would admit it.
var ErrExceedsCapacity = errors.New("pacer: request costs more than the scope's bucket can hold")

// A ThrottledError says that a request was not sent because a scope's limits
// did not admit it in time. It matches ErrThrottled with errors.Is, and also
// its cause: context.DeadlineExceeded when the wait could not have ended
// before the context's deadline (pacer returns at once, not at the
// deadline), context.Canceled when the caller gave up, ErrExceedsCapacity
// when no wait would do.
type ThrottledError struct {
	Scope  string         // the scope that held the request back
	Reason observe.Reason // why: one of the observe.Reason constants
	// RetryAfter is the shortest wait after which the request might be
	// admitted; zero when it depends on a call in flight finishing.
	RetryAfter time.Duration
	// Reset is when the provider says the scope's quota returns, for a
	// request held back (observe.ReasonCooldown) by a pause the provider asked
	// for beyond the Transport's maximum wait (WithMaxWait): such a
	// request is refused at once, not parked, and after RetryAfter the
	// scope sends again to check the claim. Zero otherwise.
	Reset time.Time
	Err   error // the cause; nil when the scope fails fast
}

func (e *ThrottledError) Error() string {
	msg := fmt.Sprintf("pacer: throttled on scope %q (%s)", e.Scope, e.Reason)
	if e.RetryAfter > 0 && e.RetryAfter != store.Never {
		msg += fmt.Sprintf("; retry after %v", e.RetryAfter)
	}
	if !e.Reset.IsZero() && e.Err == nil {
		msg += "; the provider says its quota returns at " + e.Reset.UTC().Format(time.RFC3339)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is reports whether target is ErrThrottled.
func (e *ThrottledError) Is(target error) bool { return target == ErrThrottled }

// Unwrap returns the cause.
func (e *ThrottledError) Unwrap() error { return e.Err }

// A BudgetError says that a workload's spend budget is exhausted. It matches
// ErrBudgetExhausted with errors.Is. The attempt it refused was not sent:
// returned on its own, it refused the call's first attempt and nothing was
// sent; it refused a retry when it comes wrapped in a *retry.Error, whose
// Attempts were sent and spent the budget.
type BudgetError struct {
	Workload string
	Budget   Budget
	// ResetIn is how long until the budget's period ends and it is full again.
	ResetIn time.Duration
	// Unsettled: calls of this process are in flight whose reservations
	// will be settled on usage; as they settle for less than they reserved,
	// spending may resume before ResetIn.
	Unsettled bool
}

func (e *BudgetError) Error() string {
	msg := fmt.Sprintf("pacer: workload %q has spent its budget of %v; it resets in %v",
		e.Workload, e.Budget, e.ResetIn.Round(time.Second))
	if e.Unsettled {
		msg += ", or sooner as calls in flight settle for less than they reserved"
	}
	return msg
}

// Is reports whether target is ErrBudgetExhausted.
func (e *BudgetError) Is(target error) bool { return target == ErrBudgetExhausted }

// A QuotaError says the provider refused a call because a spend cap or
// quota is exhausted — a state waiting will not end, or not within the
// Transport's maximum wait (WithMaxWait): a refusal whose Retry-After, or
// whose quota's reset, lies beyond it. It matches ErrBudgetExhausted with
// errors.Is: to the caller, the provider's budget and pacer's are the same
// kind of stop. It is never retried. Its zero value is not meaningful.
type QuotaError struct {
	Status  int    // the provider's status
	Message string // what the provider said, as its classifier put it (classify.Verdict.Quota), or what its wait was
	// Reset is when the provider says the quota returns, for a refusal
	// that asked to wait beyond the maximum wait; zero when it did not say
	// (a spent quota that a classifier recognized). The scope's pause is
	// the maximum wait, no longer: its calls are refused at once until
	// then (a *ThrottledError with the same Reset), then it sends again to
	// check the claim.
	Reset time.Time
}

func (e *QuotaError) Error() string {
	if !e.Reset.IsZero() {
		return fmt.Sprintf("pacer: the provider refused the call with status %d until %s: %s",
			e.Status, e.Reset.UTC().Format(time.RFC3339), e.Message)
	}
	return fmt.Sprintf("pacer: the provider refused the call with status %d for a spent quota, which waiting will not restore: %s", e.Status, e.Message)
}

// Is reports whether target is ErrBudgetExhausted.
func (e *QuotaError) Is(target error) bool {
	return target == ErrBudgetExhausted || target == retryrule.ErrSpentQuota
}

// A FlushError is what Flush could not write to the shared store.
type FlushError struct {
	// Pending is how many writes were still queued when Flush's context
	// ended; they are still sent, unless the process exits.
	Pending int
	// Lost is how many writes did not reach the store since the last Flush.
	Lost int

	byKind [2][3]int // pending, lost; by storeguard.WriteKind
	errs   []error   // the last store error, ctx's error
}

func (e *FlushError) Error() string {
	var b strings.Builder
	b.WriteString("pacer: writes to the shared store did not all reach it:")
	for i, what := range [2]string{"still queued", "lost"} {
		n := e.byKind[i]
		if sum(n) == 0 {
			continue
		}
		fmt.Fprintf(&b, " %d %s (%d settlements, %d refunds, %d clamps);", sum(n), what, n[storeguard.AdjustWrite], n[storeguard.RefundWrite], n[storeguard.ClampWrite])
	}
	for _, err := range e.errs {
		fmt.Fprintf(&b, " %v;", err)
	}
	return strings.TrimSuffix(b.String(), ";") + ". The shared counts miss them: a call whose settlement is missing counts at its reservation, one whose refund is missing as spent"
}

// Unwrap returns the store's last error and the context's, so that the
// error matches store.ErrUnavailable or context.DeadlineExceeded.
func (e *FlushError) Unwrap() []error { return e.errs }
