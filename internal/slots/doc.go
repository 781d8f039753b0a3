// Package slots counts a scope's concurrency slots in flight by the second
// each was taken in (Ages), so that a slot held too long, most likely a
// response body never closed, can be seen without a timer per call.
//
// Contract:
//   - No I/O and no clock: every time is an epoch, a Unix second, that the
//     caller passes in (Epoch converts a time). The caller decides what a
//     slot held too long means for it (Check's alert) and tells whom.
//   - No pointer back to the Transport or its scopes: an Ages is a field
//     of the bucket whose slots it counts, and knows nothing else.
//   - Concurrency: an Ages is safe for concurrent use. Taking and giving
//     back a slot (TryAdd, Add, TryRemove, Remove) lock nothing in the
//     common case; Check, and a slot held longer than the ring is long,
//     take the Ages' own lock, never held across a call out.
//   - The zero Ages is ready: no slot counted.
//
// Costs: TryAdd and TryRemove are one load and one compare-and-swap, small
// enough to be inlined into the caller's fast path; Add and Remove are
// the whole of it, for when they report false. Check is O(ring) plus the
// seconds of the slots held longer than the ring.
package slots
