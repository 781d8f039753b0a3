// Package reconcile checks what pacer charged a workload's budget against
// what the provider billed for the same period, by the provider's own usage
// and cost reports, and optionally corrects the budget by the difference.
//
//	src := reconcile.OpenAI(os.Getenv("OPENAI_ADMIN_KEY"))
//	r, err := reconcile.New(reconcile.Config{
//		Source:     src,
//		Transports: []*pacer.Transport{tr},
//		Groups: []reconcile.Group{
//			{By: reconcile.ByProject, ID: "proj_abc", Workloads: []string{"chat", "backfill"}},
//		},
//		Every:     5 * time.Minute,
//		Observers: []observe.Observer{collector},
//	})
//	go r.Run(ctx)
//
// # What is compared
//
// A Group is what the provider reports on its own: a project (OpenAI's
// project_id, Anthropic's workspace_id), an API key (api_key_id) or a
// model; and the workloads whose calls go to it, which the provider cannot
// tell apart. Each poll reads, for the current period of the workloads'
// budget, what the provider billed the group (its cost report for a
// budget in money, its usage report in tokens for a budget in tokens) and
// what pacer charged the workloads: the fleet's charges, read from the
// budgets' ledger in the store (Transport.FleetSpent, one round trip a
// workload), so that a reconciler in one process of a fleet sees every
// process's calls; or, when the store cannot read a level
// (store.LevelReader), what the Transports given charged
// (WorkloadStats.Spent, summed), and GroupStats.Fleet and the event say
// so. Every store in this repository reads levels.
// The difference, billed less charged, is the group's drift: it is
// reported for the group, never split into guesses per workload.
//
// A drift beyond the Tolerance is an observe.EventBudgetDrift (Scope: the
// group's Name; Amount: the drift in the budget's unit; Percent: as a
// share of what was charged), a figure in Stats, and, with Correct, a
// correction of the budgets' ledgers: the drift is spread over the
// group's workloads in proportion to what each was charged, and charged
// (or given back) with Transport.CorrectBudget, through the shared store,
// so that every instance of a fleet sharing it spends what is left after
// the correction. The next poll sees the correction in what was charged,
// so a drift is corrected once. A report read as the period ended is
// reported, not corrected: its drift belongs to a period the ledger no
// longer counts.
//
// # Limits of the comparison
//
//   - The budget must follow the calendar (Budget.Period: period.Daily,
//     Weekly or Monthly) in UTC, starting at midnight: the providers report
//     in days snapped to midnight UTC. A budget with Per starts its window
//     with its first call, which no report matches; New refuses it.
//   - What was charged is read from the store of the first Transport
//     given, the others taken to share it. It counts every process's
//     calls and corrections, and each call in flight at its reservation,
//     except those of the Transports given, which count once settled, as
//     WorkloadStats.Spent counts them. A settlement still on its way to
//     the store (see Transport.Flush) counts at its reservation until it
//     arrives. A store that does not answer fails the poll of the group
//     (EventReconcileFailed): this process's own count would read the
//     rest of the fleet as drift. Behind a store that cannot read a level,
//     each process counts only its own spend: reconcile in one process
//     only if it carries all the group's calls, or the drift will count
//     the others' calls as pacer's misses. The correction itself is
//     fleet-wide either way.
//   - The providers' reports lag the calls by minutes; calls in flight are
//     charged at their reservation and not yet counted as spent. Set the
//     Tolerance above what that lag costs in a polling interval, or
//     correct only at the end of a period's day.
//   - A report counts every call made with the key or in the project,
//     also those that did not go through pacer: they are drift too.
//
// # Never in the way of a call
//
// A poll runs on the goroutine that calls Poll or Run, never on a call's;
// it reads Transport.Stats, which takes no lock across I/O, and the
// fleet's charges from the store, each read bounded by the store timeout,
// as a call's own round trip is; a correction never waits for the store. A report that fails, is slow
// (each poll is bounded by Config.Timeout) or answers garbage is an
// observe.EventReconcileFailed saying why, and a count in Stats; calls go
// on, and the budgets stay as they were.
package reconcile
