package queue

import (
	"fmt"
	"math"
	"testing"
	"time"
)

var zeroTime time.Time

// A million tenants, each calling once, leave the workload remembering a
// bounded number of them.
func TestFairQueueMemoryBounded(t *testing.T) {
	var f Fair
	most := 0
	for i := range 1_000_000 {
		tag := f.Tag(fmt.Sprint(i), 1, 1)
		f.Served(tag)
		most = max(most, len(f.finish))
	}
	if most > 2*fairSweepFloor {
		t.Errorf("remembered up to %d tenants of a million, want at most %d", most, 2*fairSweepFloor)
	}
}

// After traffic that moved the virtual time a long way (a million calls of
// a million tokens at the lightest weight: weeks of a busy workload), tags
// still tell the lightest steps apart: a tenant of weight 1000 is served
// before one of weight 500 that queued first, and each tenant's calls
// stay in order.
func TestFairQueueExactAfterLongTraffic(t *testing.T) {
	var f Fair
	for range 1 << 20 {
		f.Served(f.Tag("bulk", 1.0/1000, 1e6))
	}
	mid := &Waiter{Seq: 1, Tag: f.Tag("mid", 500, 1)}
	light := &Waiter{Seq: 2, Tag: f.Tag("light", 1000, 1)}
	light2 := &Waiter{Seq: 3, Tag: f.Tag("light", 1000, 1)}
	light3 := &Waiter{Seq: 4, Tag: f.Tag("light", 1000, 1)}
	if !light.precedes(mid) {
		t.Error("a call of weight 1000 is not served before one of weight 500 of the same cost: the virtual time has lost the light steps")
	}
	if !light2.precedes(light3) || !mid.precedes(light3) {
		t.Error("tags after long traffic do not grow by each call's step")
	}
}

// Without a tenant named, nothing is tagged; a weight the caller failed to
// clamp still steps forward, never back or by garbage.
func TestFairTagEdges(t *testing.T) {
	var f Fair
	if tag := f.Tag("", 1, 1); !tag.isZero() {
		t.Errorf("a call without a tenant, before any named one, was tagged %v", tag)
	}
	a := f.Tag("a", 1, 1)
	for _, w := range []float64{0, -1, math.Inf(-1), math.NaN(), 1e300} {
		if b := f.Tag("a", w, 1); !a.before(b) || b != a.add(1) {
			t.Errorf("weight %v: tag %v after %v, want one unit later", w, b, a)
		} else {
			a = b
		}
	}
}
