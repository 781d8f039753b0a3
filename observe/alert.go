package observe

import (
	"fmt"
	"time"
)

// An Alert says that calls on a scope were throttled since the previous
// alert for that scope: refused by pacer because their wait could not be
// made (EventThrottled), or rejected by the provider with a 429, a 503 or
// a back-pressure status (EventRejected). Both mean that somebody's calls
// are failing or slowing for want of quota. Waits that end in admission
// are pacing doing its job, and are not counted. pacer.WithAlerts says
// when an Alert is sent.
type Alert struct {
	Scope string
	// Count is Throttled + Rejected: the calls counted since this process's
	// previous alert for the scope.
	Count     int64
	Throttled int64 // calls pacer refused
	Rejected  int64 // calls the provider rejected
	// First and Last are when the first and the last of them were counted,
	// by the Transport's clock.
	First, Last time.Time
	// Workload and Percent, when Percent is set, make the alert a budget's:
	// the workload's budget crossed Percent (50, 80 or 100) of its Limit
	// in its current period, sent once per period for the fleet (see
	// EventBudgetThreshold). Scope and the counts are then zero.
	Workload string
	Percent  int
	// RunsOut and PeriodEnd, when RunsOut is set, make the alert a
	// forecast's: at the rate the workload's budget was spent over the
	// last ten minutes, it runs out at RunsOut, more than its margin
	// before its period ends at PeriodEnd (see EventBudgetForecast); sent
	// once per period for the fleet. Scope, the counts and Percent are
	// then zero.
	RunsOut, PeriodEnd time.Time
}

func (a Alert) String() string {
	if !a.RunsOut.IsZero() {
		return fmt.Sprintf("pacer: workload %q's budget runs out at %s at its current rate, %v before its period ends at %s",
			a.Workload, a.RunsOut.Format(time.RFC3339), a.PeriodEnd.Sub(a.RunsOut).Round(time.Second), a.PeriodEnd.Format(time.RFC3339))
	}
	if a.Percent > 0 {
		return fmt.Sprintf("pacer: workload %q has spent %d%% of its budget (at %s)", a.Workload, a.Percent, a.First.Format(time.RFC3339))
	}
	return fmt.Sprintf("pacer: scope %q throttled %d times (%d refused here, %d rejected by the provider) from %s to %s",
		a.Scope, a.Count, a.Throttled, a.Rejected, a.First.Format(time.RFC3339), a.Last.Format(time.RFC3339))
}
