package pacer

import (
	"sync"
	"sync/atomic"

	"github.com/pacer-go/pacer/internal/pace"
	"github.com/pacer-go/pacer/internal/queue"
	"github.com/pacer-go/pacer/internal/slots"
)

// bucket is what this process knows of one bucket of a scope beyond its
// tokens, which the store keeps: the calls waiting on it and the calls in
// flight. It is the one place where a bucket's parts meet; each part's
// methods live with the step that uses them:
//
//   - the line of waiting calls: waitqueue.go, over internal/queue
//     (admission, step 4);
//   - the concurrency slots and their ages: slots.go, over internal/slots
//     (step 4);
//   - what the provider's answers taught it, feedback: the Learn step
//     (step 6), which paces it;
//   - the debts its settlements left: settle.go (step 8).
//
// A scope has one shared bucket, or one per key (configuredScope.bucketFor).
type bucket struct {
	feedback
	scope   *configuredScope
	key     string
	holders atomic.Int32 // calls that hold this bucket (keyed buckets only)
	waiting atomic.Int32 // len(queue), readable without the lock

	inFlight   atomic.Int32
	inFlightBy []atomic.Int32 // by workload index

	mu    sync.Mutex
	queue queue.Queue

	ages slots.Ages // the slots in flight by when they were taken

	// A pause the provider asked for beyond the maximum wait (farreset.go).
	farReset atomic.Pointer[farReset]
	// Long windows and the pace that lasts to their reset (longwindow.go).
	long atomic.Pointer[longState]
}

// feedback is what a bucket has learned from the provider (learn.go,
// remaining.go, recovery.go). Every atomic field is read on the hot path
// without a lock. It is declared here, beside the bucket that embeds it.
type feedback struct {
	model     atomic.Pointer[pace.Model] // the provider's capacity as learned (model.go); nil: the configured limit alone
	believed  atomic.Int64               // UnixNano until which the published limit holds unless published again
	recovered atomic.Bool                // a climb has just ended, not yet reported
	admitted  atomic.Int64               // calls admitted, to tell which 429s are news
	spent     atomic.Int64               // units admitted, to tell what was sent since a response
	taken     atomic.Int64               // the fleet's units taken from a shared bucket, as a take last said (store.Decision.Taken); 0 if none
	cooldown  atomic.Int64               // UnixNano until which nothing may be sent; 0 if none
	pauseWhy  atomic.Pointer[string]     // what asked for the latest pause, for Stats
	debtRate  atomic.Uint64              // Float64bits of the pace the pause's debt was set at; 0 if none
	owedUntil atomic.Int64               // UnixNano by which the debts this process's settlements left are repaid (settle.go)
	accepted  atomic.Int64               // calls the provider accepted, for a cut to measure (recovery.go)

	// burstUntil is the scope's spent units when its first burst ended (a
	// call had to wait, or the first count came back), 0 before: the calls
	// admitted within it went out together, and reach the server in any
	// order. burstAnswered is the units of those whose answer has been
	// read (firstburst.go).
	burstUntil, burstAnswered atomic.Int64

	// The latest pause, UnixNano from and to: what a measure of the
	// accepted rate leaves out of its span (recovery.go).
	pausedFrom, pausedTo atomic.Int64
	// costlyUntil is UnixNano until which a refusal that paused the scope
	// for longer than pace.BriefRetryAfter is remembered (pace.CostlyFor,
	// pace.Scope.CostlyRefusals); 0 if none was.
	costlyUntil atomic.Int64

	// Under the bucket's mu:
	cuts    pace.Cuts   // what the provider accepted and refused, and the cuts it made
	reports pace.Record // what the provider's counts have shown
}

// newBucket returns c's bucket for key, with no call waiting or in flight.
func newBucket(c *configuredScope, key string) *bucket {
	return &bucket{scope: c, key: key, inFlightBy: make([]atomic.Int32, len(c.shares.Load().reserve))}
}

// release lets go of a bucket taken with configuredScope.bucketFor.
func (s *bucket) release() {
	if s.key != "" {
		s.holders.Add(-1)
	}
}
