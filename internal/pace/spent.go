package pace

// What the scope spent since a count was made: the calls admitted since
// its mark, less those the provider refused, which it never counts.

import "time"

// Refused notes that the provider refused, at now, a call of cost admitted
// at mark (Count.Mark) and sent at sent (UnixNano; 0 if unknown): it never
// counted it, and never will. It notes too whether the refusal came after
// the scope's first seconds (refusedSettled, Record.margin) and whether
// the call was one the counts paced, not one of the blind start
// (refusedPaced, reading.full); the refusal of such a call widens the
// margin (Record.widening), unless the call was held on its way.
func (o *Record) Refused(now time.Time, mark, cost, sent int64) {
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
		if o.refusedSettled && !(sent > 0 && o.rtt.held(now.UnixNano()-sent)) {
			o.widened, o.widenedAt = o.widening(now)+1, now.UnixNano()
		}
	}
}

// marginGiveBack is how long a call a refusal added to the margin takes to
// be given back (Record.widening).
const marginGiveBack = 10 * time.Second

// widening is the calls the margin holds at now beyond its reckoning, for
// the refusals of calls the counts paced once the first seconds were over
// (Refused): a call each, given back one every marginGiveBack without
// another.
//
// A refusal of a call the counts paced, beyond the blind start, says the
// margin did not hold the disorder the count is read through on this key:
// other clients' calls arriving in bunches, the route's reordering, a
// count's age. That disorder is the key's, and measured by the refusal,
// not by any figure the scope reckons the margin from; so the margin of
// a count that gives back as it goes grows by a call at each, and gives
// it back when none follows (Record.margin says where it does not). Beside
// an unpaced neighbour taking 40 of httprate's 100 a second over a
// 200–400 ms route, pacer met a refusal every few seconds at the margin
// the route's jitter set, and the neighbour did too (7.6 of its 788 calls
// a run, five runs); widened, 3.2. Beside one taking 8 of a sliding
// window's 20 a second, the neighbour was refused 5.4 % of its calls; 0.3 %
// widened, for 0.07 of the scope's share.
//
// Not a call held on its way far beyond the route's jitter
// (RoundTrips.held): a stalled route that let 64 calls go together into a
// sliding window of 40 a second had 25–30 of them refused for arriving at
// once, not for any disorder the margin is for; a call each, they widened
// the margin to 27 of the window's 40, and the scope spent 12 a second for
// the minutes it took to give them back.
func (o *Record) widening(now time.Time) float64 {
	if o.widened == 0 {
		return 0
	}
	return max(0, o.widened-float64(now.UnixNano()-o.widenedAt)/float64(marginGiveBack))
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
