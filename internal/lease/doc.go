// Package lease takes tokens from a shared store in leases and spends them
// locally (Store): a call spent from a lease costs no round trip, at the
// price of a bounded overshoot, the lease's size per process, when the
// fleet's processes each hold tokens the others cannot see. It is what
// store.Policy.Lease and AdaptiveLease turn on.
//
// Contract:
//   - No I/O of its own and no clock: the lease's only I/O is its Source's,
//     and every time is the now its caller passes, by which a lease's age
//     (Config.MaxAge) is told. Leased tokens older than that are dropped,
//     so a lease never lets a stale limit live on.
//   - No pointer back to the Transport: a Store knows its Source, the
//     store it takes from, and nothing else.
//   - A lease moves tokens, it does not make them: processes that lease
//     from one bucket are granted, together, exactly what it holds. Spend
//     budgets (a Demand with a Window) are never leased.
//   - Concurrency: a Store is safe for concurrent use. Its lock guards
//     the local leases only and is never held across a call to the Source.
package lease
