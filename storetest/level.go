package storetest

import (
	"math"
	"testing"
	"time"

	"github.com/pacer-go/pacer/store"
)

// level reads d's level at now from the store, which must be a
// store.LevelReader.
func (h *harness) level(now time.Time, d store.Demand) float64 {
	h.t.Helper()
	l, err := h.s.(store.LevelReader).Level(h.ctx, now, d)
	if err != nil {
		h.t.Fatalf("Level: %v", err)
	}
	return l
}

// levelIs asserts that d's level at now is want, to a billionth of a unit
// (the remote stores' clocks are in microseconds).
func (h *harness) levelIs(now time.Time, d store.Demand, want float64, what string) {
	h.t.Helper()
	if got := h.level(now, d); math.Abs(got-want) > 1e-9*max(1, math.Abs(want)) {
		h.t.Fatalf("%s: Level at %v = %v, want %v", what, now.Sub(Start), got, want)
	}
}

func testLevel(t *testing.T, h *harness, reads bool) {
	if _, ok := h.s.(store.LevelReader); !ok || !reads {
		if ok {
			t.Fatalf("%T is a store.LevelReader, but the suite was told WithoutLevel", h.s)
		}
		if reads {
			t.Fatalf("%T is not a store.LevelReader: a Transport behind it cannot read a budget's level for the fleet; "+
				"implement Level, or run the suite WithoutLevel", h.s)
		}
		return
	}
	// A bucket the store does not hold reads as full, and reading it
	// neither creates nor changes it: all of its burst can still be taken.
	d := bucket(t, 1, 5)
	h.levelIs(at(0), d, 5, "a bucket never taken from")
	h.levelIs(at(0), d, 5, "read twice")
	if n := h.takeAll(at(0), d); n != 5 {
		t.Fatalf("after two reads of a new bucket of 5, granted %d takes of 1, want 5", n)
	}

	// The level is the refill applied at now, as a take would apply it,
	// whatever the demand's cost and floor, and capped at the burst.
	r := bucket(t, 1, 10)
	r.Cost = 3
	h.granted(at(0), r)
	h.levelIs(at(0), r, 7, "after a take of 3 of 10")
	r.Cost, r.Floor = 9, 9
	h.levelIs(at(500), r, 7.5, "half a second later at 1/s, read with a cost and a floor")
	h.levelIs(at(500), r, 7.5, "read again")
	r.Cost, r.Floor = 1, 0
	if n := h.takeAll(at(500), r); n != 7 {
		t.Fatalf("after reads of a bucket at 7.5, granted %d takes of 1, want 7", n)
	}
	h.levelIs(at(60_000), r, 10, "a minute later, refilled to its burst")
	low := r
	low.Burst = 4
	h.levelIs(at(60_000), low, 4, "read with a lowered burst")

	// A window bucket holds what is left of its window, and is full again
	// once the window has passed.
	w := store.Demand{Scope: Scope(t), Burst: 10, Window: time.Hour, Cost: 4}
	h.granted(at(0), w)
	h.levelIs(at(1000), w, 6, "a window bucket after a take of 4 of 10")
	h.levelIs(at(3_600_000), w, 10, "once its window has passed")

	// An overdraft reads below zero.
	o := bucket(t, 1, 5)
	o.Cost = 5
	h.granted(at(0), o)
	o.Cost = 2
	h.adjust(at(0), o)
	h.levelIs(at(0), o, -2, "after a charge of 2 beyond the bucket's 5")

	// A budget in micro-dollars near what every store counts exactly
	// (2^53) reads to the unit.
	big := store.Demand{Scope: Scope(t), Burst: 1 << 53, Window: 24 * time.Hour, Cost: 1}
	h.granted(at(0), big)
	if got := h.level(at(0), big); got != 1<<53-1 {
		t.Fatalf("a window of 2^53 after a take of 1 reads %v, want 2^53-1 exactly", got)
	}
}
