package storetest

import (
	"testing"
	"time"

	"github.com/pacer-go/pacer/store"
)

// testGroups checks that demands with a Group (store.Demand.Group), as a
// pool gives each member's own buckets, behave exactly as the same demands
// without one, each bucket always given the same Group as the contract
// asks: a Take over several members' buckets and a shared one, interleaved,
// is all or nothing, blames the longest wait and reports the first
// demand's total; a refund, a settlement, a clamp and a level reach the
// buckets the take took from. A store that shards keeps a Group's buckets
// together; one that does not ignores the Group; both must pass.
func testGroups(t *testing.T, h *harness, totals, levels bool) {
	scope := Scope(t)
	member := func(name string) (keyed, own store.Demand) {
		keyed = store.Demand{Scope: scope + "/keyed", Key: name, Group: name, Rate: 1, Burst: 5, Cost: 1}
		own = store.Demand{Scope: scope + "/own-" + name, Group: name, Rate: 1, Burst: 10, Cost: 1}
		return keyed, own
	}
	a1, a2 := member("a")
	b1, b2 := member("b")
	shared := store.Demand{Scope: scope + "/shared", Rate: 1, Burst: 8, Cost: 1}
	total := func(dec store.Decision, want float64) {
		t.Helper()
		if !totals {
			want = 0
		}
		if dec.Taken != want {
			t.Fatalf("a granted take reported a total of %v taken from its first bucket, want %v", dec.Taken, want)
		}
	}
	// holds asserts that d's bucket holds n: n can be taken, n+1 cannot.
	holds := func(d store.Demand, n float64, what string) {
		t.Helper()
		d.Cost, d.Floor = n, 0
		if dec := h.take(at(0), d); !dec.OK {
			t.Fatalf("%s holds less than %v: %+v", what, n, dec)
		}
		if err := h.s.Refund(h.ctx, at(0), []store.Demand{d}); err != nil {
			t.Fatalf("Refund: %v", err)
		}
		d.Cost = n + 1
		if dec := h.take(at(0), d); dec.OK {
			t.Fatalf("%s holds more than %v", what, n)
		}
	}

	// A member's buckets and the shared one, at once.
	dec := h.take(at(0), a1, a2, shared)
	if !dec.OK {
		t.Fatalf("a take over a member's buckets and a shared one = %+v, want granted", dec)
	}
	total(dec, 1) // a1 holds 4, a2 9, shared 7
	// All or nothing, whichever bucket refuses: one of the member's...
	a2.Cost = 10
	h.denied(at(0), 1, time.Second, a1, a2, shared)
	// ...or the shared one.
	a2.Cost, shared.Cost = 1, 8
	h.denied(at(0), 2, time.Second, a1, a2, shared)

	// Two members' buckets interleaved with shared ones. (The first is new:
	// a store may count in its total what it took and gave back when a
	// take above was refused.)
	first := store.Demand{Scope: scope + "/first", Rate: 1, Burst: 8, Cost: 2}
	all := func() []store.Demand { return []store.Demand{first, b1, a1, shared, b2, a2} }
	shared.Cost = 2
	dec = h.take(at(0), all()...)
	if !dec.OK {
		t.Fatalf("a take over two members' buckets, interleaved, = %+v, want granted", dec)
	}
	total(dec, 2) // first holds 6, b1 4, a1 3, shared 5, b2 9, a2 8
	if err := h.s.Refund(h.ctx, at(0), all()); err != nil {
		t.Fatalf("Refund: %v", err)
	}
	// first holds 8, b1 5, a1 4, shared 7, b2 10, a2 9. The longest wait
	// blames, wherever its member's buckets are listed, the first of
	// equal waits.
	first.Cost, shared.Cost, a1.Cost, a2.Cost = 1, 1, 5, 10
	h.denied(at(0), 2, time.Second, all()...)
	a1.Cost = 1
	h.denied(at(0), 5, time.Second, all()...)
	b1.Cost = 6 // more than its burst
	h.denied(at(0), 1, store.Never, all()...)
	b1.Cost = 1

	// A settlement of a member's buckets, one of them unchanged, and a
	// shared one; then a clamp of one of the member's.
	a1.Cost, a2.Cost, shared.Cost = 2, -5, 0
	h.adjust(at(0), a1, shared, a2) // a1 holds 2, a2 10
	if err := h.s.Clamp(h.ctx, at(0), a2, 3); err != nil {
		t.Fatalf("Clamp: %v", err)
	}
	if levels {
		h.levelIs(at(0), a1, 2, "a member's keyed bucket, settled")
		h.levelIs(at(0), a2, 3, "a member's own bucket, clamped")
	}
	holds(a1, 2, "a member's keyed bucket, settled")
	holds(a2, 3, "a member's own bucket, clamped")
	holds(shared, 7, "the shared bucket")
	holds(first, 8, "another shared bucket")
	holds(b1, 5, "another member's keyed bucket")
	holds(b2, 10, "another member's own bucket")
}
