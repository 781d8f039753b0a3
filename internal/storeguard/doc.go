// Package storeguard stands between a pacer Transport and a shared store
// (store/redisstore, store/pgstore, any store.Store that is not the
// in-memory one): it applies a store.Policy's failure mode, bounds every
// call to the store, sends the writes nobody waits for in the background,
// and keeps this process's own count of each spend budget.
//
// It holds three mechanisms, each behind the one Guard:
//   - The guard (guard.go): every call goes to the store bounded by the
//     policy's Timeout and the caller's context; a call the store does not
//     answer marks it down, and while it is down the policy answers
//     instead (FallBackLocal: a local bucket at 1/Instances of every limit;
//     FailOpen: granted; FailClosed: ErrUnavailable). A failed store is
//     left alone for 100 ms, then asked again by one call at a time, the
//     wait doubling up to 2 s while it stays down; its first answer ends
//     the outage. A caller that gives up while nobody has heard from the
//     store starts one check in the background, so that a silent store is
//     found out within about Timeout whatever the callers' deadlines.
//   - The write queue (writes.go): clamps, refunds and settlements go to
//     the store from one goroutine, started by the first write and gone
//     when the queue is empty, coalesced by bucket and bounded at
//     MaxPendingWrites buckets; Drained and Writes are what Flush reads.
//   - The budget ledger (ledger.go): this process's own count of each
//     budget's spend, which no store's answer overrules, so that a budget
//     holds across an outage and a store that forgets.
//
// Contract:
//   - I/O only through the store it is handed, and the goroutines that
//     call it: each store call is bounded by the policy's Timeout; a store
//     that does not honour its context (store.ContextStore) is called on a
//     goroutine of its own, abandoned if the bound passes first.
//   - Time: every method that decides by the time takes now as an
//     argument, the time the caller's decision is made at. The Now hook is
//     read only where no caller is there to pass it: a background check,
//     and whether a context's deadline has passed on the caller's clock
//     after a store call returns.
//   - No pointer back to the Transport: what the guard tells its owner, a
//     failure the policy covered and a background write that was lost, it
//     tells through the Hooks given to New, called on whatever goroutine
//     found it out and never under the guard's lock.
//   - Concurrency: a Guard is safe for concurrent use. The demands a
//     caller passes are read before the method returns and never kept.
//
// The in-memory store (store.Memory) needs none of this: a Transport on it
// holds no Guard, and its hot path never touches this package.
package storeguard
