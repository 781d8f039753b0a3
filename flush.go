package pacer

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pacer-go/pacer/internal/storeguard"
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
// not sent because the store was down. It matches ErrStoreUnavailable when
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
// error matches ErrStoreUnavailable or context.DeadlineExceeded.
func (e *FlushError) Unwrap() []error { return e.errs }

func sum(n [3]int) int { return n[0] + n[1] + n[2] }
