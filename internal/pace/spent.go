package pace

// What the scope spent since a count was made: the calls admitted since
// its mark, less those the provider refused, which it never counts.

import "time"

// Refused notes that the provider refused, at now, a call of cost admitted
// at mark (Count.Mark): it never counted it, and never will. It notes too
// whether the refusal came after the scope's first seconds
// (refusedSettled, Record.margin) and whether the call was one the counts
// paced, not one of the blind start (refusedPaced, reading.full).
func (o *Record) Refused(now time.Time, mark, cost int64) {
	o.refusals[o.nrefusals%len(o.refusals)] = refusedCall{mark, cost}
	o.nrefusals++
	o.refusedLast = now.UnixNano()
	if o.first != 0 && now.UnixNano()-o.first > int64(TrustAfter) {
		o.refusedSettled = true
	}
	// A fleet's marks are not the scope's own spent: each refusal is
	// taken as paced.
	if o.fleet || o.first != 0 && mark >= o.blindSpent {
		o.refusedPaced = now.UnixNano()
	}
}

// quiet reports whether the provider refused none of the scope's calls
// for TrustAfter before now.
func (o *Record) quiet(now time.Time) bool {
	return now.UnixNano()-o.refusedLast > int64(TrustAfter)
}

// spentSince is what was spent since mark, spent being what is spent now
// (spentSince), less what the provider has refused since mark as far as
// the answers in hand say: a refused call was never counted, and never
// will be. Taken off again, the calls refused in a burst sent together
// read as spent, and an empty bucket stalled the scope for seconds. The
// fleet's refusals are not all this process's to know.
func (o *Record) spentSince(mark, spent int64, fleet bool) int64 {
	n := SpentSince(mark, spent, fleet)
	if fleet {
		return n
	}
	for _, r := range o.refusals[:min(o.nrefusals, len(o.refusals))] {
		if r.mark > mark {
			n -= r.cost
		}
	}
	return max(0, n)
}

// SpentSince is what was spent since mark, a call's spent units at its
// admission, with spent spent now: the scope's own, or, when fleet is set,
// what the whole fleet took from the shared bucket as the latest take
// said, which may be a few calls behind a call answered out of order:
// never below nothing.
func SpentSince(mark, spent int64, fleet bool) int64 {
	if fleet {
		return max(0, spent-mark)
	}
	return spent - mark
}

// A refusedCall is a refused call's mark and cost (Refused).
type refusedCall struct{ mark, cost int64 }

// A spentSample is what the scope had spent at a count.
type spentSample struct{ at, spent int64 }

// spentBy returns what the scope had spent by t, as the latest count at or
// before it saw; ok is false when no count that old is kept.
func (o *Record) spentBy(t time.Time) (spent int64, ok bool) {
	at := t.UnixNano()
	n := min(o.nsends, len(o.sends))
	for i := range n {
		smp := o.sends[(o.nsends-1-i)%len(o.sends)]
		if smp.at <= at {
			return smp.spent, true
		}
	}
	return 0, false
}
