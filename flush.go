package pacer

import (
	"context"
	"errors"
)

// Flush waits until the writes this Transport sends its shared store in the
// background have been sent, or ctx ends, and reports those that did not
// reach the store. Call it before the process exits, after its last call:
// the settlements of calls (what each cost beyond or below its
// reservation), refunds of calls not sent, and clamps learned from
// responses go to the store in the background, so that no caller waits for
// them, and a process that exits without flushing loses those still
// queued — the fleet's budgets then count those calls at their
// reservations, not at what they cost.
//
//	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
//	defer cancel()
//	if err := tr.Flush(ctx); err != nil {
//		log.Print(err) // a *FlushError: what the fleet's counts miss
//	}
//
// Flush returns nil when every write reached the store (and at once on a
// Transport without a shared store); otherwise a *FlushError, which counts
// the writes still queued when ctx ended and those lost since the last
// Flush: refused or unanswered by the store, dropped from a full queue, or
// not sent because the store was down. It matches store.ErrUnavailable when
// the store failed, and ctx's error when ctx ended first. While calls keep
// coming, new writes keep being queued: Flush returns once the queue is
// empty, which it may be only between them. A nil ctx is an error, not a
// wait without end.
func (t *Transport) Flush(ctx context.Context) error {
	if ctx == nil {
		return errors.New("pacer: Flush needs a context; pass one with a deadline, such as context.WithTimeout(context.Background(), 5*time.Second)")
	}
	g := t.guard
	if g == nil {
		return nil
	}
	var ctxErr error
	select {
	case <-g.Drained():
	case <-ctx.Done():
		ctxErr = ctx.Err()
	}
	pending, lost, lastErr := g.Writes()
	e := &FlushError{Pending: sum(pending), Lost: sum(lost)}
	if e.Pending == 0 && e.Lost == 0 {
		return nil
	}
	e.byKind = [2][3]int{pending, lost}
	if e.Lost > 0 {
		e.errs = append(e.errs, lastErr)
	}
	if e.Pending > 0 {
		e.errs = append(e.errs, ctxErr)
	}
	return e
}

func sum(n [3]int) int { return n[0] + n[1] + n[2] }
