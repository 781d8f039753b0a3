package observe

// A Reason says why pacer held a call back or refused it: one of the
// Reason constants. A *pacer.ThrottledError carries one, and Stats counts
// the calls waiting and refused by it. It prints as a word fit for a log
// line or a metric label. The zero Reason, "", says that nothing holds a
// call back.
type Reason string

// Why a call was held back or refused.
const (
	ReasonRate        Reason = "rate"        // the scope's tokens were spent
	ReasonConcurrency Reason = "concurrency" // every slot of the scope was in flight
	ReasonCapacity    Reason = "capacity"    // the call costs more than the bucket holds
	ReasonCooldown    Reason = "cooldown"    // the provider asked for a pause
	ReasonRetry       Reason = "retry"       // a retry's wait would outlast the deadline
	// ReasonReserve: the tokens or slots the call needs are there, but
	// another workload's Reserve keeps them.
	ReasonReserve Reason = "reserve"
	// ReasonBudget: the workload's spend budget refused the call. No
	// ThrottledError says it (a *pacer.BudgetError does); Stats does, in
	// WorkloadStats.LastRefusedReason.
	ReasonBudget Reason = "budget"
	// ReasonQueueFull: the call was refused, or shed, because its
	// workload's queue held Workload.MaxWaiting calls.
	ReasonQueueFull Reason = "queue"
)
