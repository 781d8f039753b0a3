package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pacer-go/pacer/store"
)

// oddNames are scope and key names a request can carry (a header, a JSON
// field, a URL) that a store must take as they are: bytes a database text
// type refuses, lengths an index refuses, and names built to collide with
// whatever a store does about them.
func oddNames() []string {
	long := strings.Repeat("k", 8<<10)
	digest := sha256.Sum256([]byte(long))
	return []string{
		"nul\x00byte",
		"\x00",
		"\xff\xfe not UTF-8",
		long,
		long[:len(long)-1] + "j", // differs from long in its last byte only
		strings.Repeat("\xff", 4<<10),
		"sha256:" + hex.EncodeToString(digest[:]), // looks like a digest of long
		"ünïcødé ✓",
		"a:b",
		"",
	}
}

// testOddKeys checks that every name, as a key and as a scope, is a bucket
// of its own that works like any other: no error, no two names sharing a
// bucket.
func testOddKeys(t *testing.T, h *harness) {
	base := Scope(t)
	var demands []store.Demand
	for _, n := range oddNames() {
		demands = append(demands,
			store.Demand{Scope: base, Key: n, Rate: 1, Burst: 2, Cost: 1},
			store.Demand{Scope: base + "/" + n, Key: "k", Rate: 1, Burst: 2, Cost: 1})
	}
	// Where the scope ends and the key begins is part of the name.
	demands = append(demands,
		store.Demand{Scope: base + "a", Key: "b:c", Rate: 1, Burst: 2, Cost: 1},
		store.Demand{Scope: base + "a:b", Key: "c", Rate: 1, Burst: 2, Cost: 1})
	for i, d := range demands {
		if n := h.takeAll(at(0), d); n != 2 {
			t.Fatalf("demand %d (scope of %d bytes, key %.40q of %d bytes) granted %d of a new bucket of 2; want 2, its own bucket",
				i, len(d.Scope), d.Key, len(d.Key), n)
		}
	}
	// Refund, clamp and a take of several buckets at once work on them too.
	a, b := demands[0], demands[len(demands)-3] // NUL key, empty-named scope
	if err := h.s.Refund(h.ctx, at(0), []store.Demand{a, b}); err != nil {
		t.Fatalf("Refund of odd keys: %v", err)
	}
	h.granted(at(0), a, b)
	h.denied(at(0), 0, time.Second, a, b)
	if err := h.s.Clamp(h.ctx, at(1500), a, 0); err != nil {
		t.Fatalf("Clamp of an odd key: %v", err)
	}
	h.denied(at(1500), 0, time.Second, a)
}

// Long waits, from the limits' arithmetic.
const (
	year = 365 * 24 * time.Hour
	// pow31 is 2^31 seconds, about 68 years: a wait every store can state
	// exactly, below LongestWait.
	pow31 = time.Duration(1<<31) * time.Second
)

// testAbsurdWaits checks that a wait too long to matter saturates to
// store.LongestWait in every store: no overflow, no error, no Never for a
// demand that waiting grants.
func testAbsurdWaits(t *testing.T, h *harness) {
	rate := func(r float64) store.Demand {
		return store.Demand{Scope: Scope(t), Rate: r, Burst: 1, Cost: 1}
	}
	cases := []struct {
		name string
		d    store.Demand
		want time.Duration
	}{
		// Limit{Count: 1, Per: 290 years} at a headroom of 0.9.
		{"one per 290 years", rate(0.9 / (290 * year).Seconds()), store.LongestWait},
		{"the smallest rate", rate(math.SmallestNonzeroFloat64), store.LongestWait},
		{"one per 2^31 s", rate(1 / pow31.Seconds()), pow31},
		{"a 290-year window", store.Demand{Scope: Scope(t), Window: 290 * year, Burst: 1, Cost: 1}, store.LongestWait},
		{"a 100-year window", store.Demand{Scope: Scope(t), Window: 100 * year, Burst: 1, Cost: 1}, 100 * year},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &harness{t: t, s: h.s, ctx: h.ctx}
			h.granted(at(0), c.d)
			h.denied(at(0), 0, c.want, c.d)
			// Writing such a bucket back works too.
			if err := h.s.Clamp(h.ctx, at(0), c.d, 0); err != nil {
				t.Fatalf("Clamp: %v", err)
			}
			if err := h.s.Refund(h.ctx, at(0), []store.Demand{c.d}); err != nil {
				t.Fatalf("Refund: %v", err)
			}
			h.granted(at(0), c.d)
		})
	}
}
