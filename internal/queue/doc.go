// Package queue holds the mechanisms behind a pacer call that waits: the
// line a scope serves its waiters in (Queue), the bound on a workload's
// waiting calls (Bounded), and the fair-queuing tags of its tenants (Fair).
//
// Contract:
//   - No I/O and no clock: a Waiter's arrival order (Seq) and the time it
//     began to wait (Since) are plain values the caller passes in.
//   - No pointer back to the Transport or its scopes. What the order
//     depends on outside the queue, whether a workload holds fewer slots
//     than it reserves, the caller passes as an Owns callback, asked under
//     the caller's lock and never kept.
//   - Concurrency: a Queue is not safe for concurrent use; every method
//     needs the lock of the scope that holds it, as does a queued Waiter's
//     Reason. Bounded and Fair lock themselves and are safe for concurrent
//     use. A Waiter's Signal, Wake and Shed are safe from any goroutine.
//   - The zero Queue, Bounded and Fair are ready: empty, unbounded, and
//     tagging nothing until a call names a tenant.
//
// Costs: queueing, leaving and finding the head are O(log n) in the calls
// waiting and O(workloads), so a scope can hold a hundred thousand waiters
// without its lock becoming the bottleneck. The hot path of a call admitted
// at once never touches this package.
package queue
