// Package storetest is the conformance suite that every store.Store must
// pass: the in-memory store, the Redis store and the Postgres store run the
// same cases, so a fleet behaves the same whichever store it shares.
//
// The suite runs in virtual time: every call passes an explicit now, starting
// at a fixed instant and moving in whole milliseconds. A store that keeps
// time on its server (Redis's TIME, Postgres's now()) must be configured to
// use the caller's clock for the suite; each such store tests separately that
// its default really reads the server's clock.
//
// Times and waits are compared to the microsecond, the resolution of the
// remote stores' clocks; token counts are checked by what can be taken, with
// amounts chosen away from rounding edges.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pacer-go/pacer/store"
)

// Start is the virtual instant at which every case begins.
var Start = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// An Option configures Run.
type Option func(*config)

type config struct {
	held        func(t *testing.T, s store.Store, d store.Demand, took, now time.Time) bool
	concurrency int
	noTotal     bool
	noLevel     bool
}

// WithoutLevel says the store does not read levels (store.LevelReader):
// the level case checks that it does not claim to. A Transport behind
// such a store reports its own process's spend where it would report the
// fleet's.
func WithoutLevel() Option {
	return func(c *config) { c.noLevel = true }
}

// WithoutTotal says the store keeps no running total of what is taken
// (store.Decision.Taken): the total case checks that it reports none,
// rather than the total. A fleet behind such a store cannot tell its own
// spending from a neighbour's.
func WithoutTotal() Option {
	return func(c *config) { c.noTotal = true }
}

// WithEviction enables the eviction case. held reports whether s still holds
// d's bucket at virtual time now, its last write having been at took, after
// giving the store whatever chance it has to forget buckets that are full by
// now (a sweep, a TTL). The case checks that a bucket is held while it is
// below capacity and forgotten once it would be full again.
func WithEviction(held func(t *testing.T, s store.Store, d store.Demand, took, now time.Time) bool) Option {
	return func(c *config) { c.held = held }
}

// WithConcurrency sets how many goroutines the concurrent case runs; 32
// unless set.
func WithConcurrency(n int) Option {
	return func(c *config) { c.concurrency = n }
}

// Run runs the suite. newStore returns the store a case runs against; it may
// return the same store to every case, since each case uses scopes of its
// own.
func Run(t *testing.T, newStore func(t *testing.T) store.Store, opts ...Option) {
	cfg := config{concurrency: 32}
	for _, o := range opts {
		o(&cfg)
	}
	cases := []struct {
		name string
		run  func(t *testing.T, h *harness)
	}{
		{"NewBucketStartsFull", testNewBucketStartsFull},
		{"Refill", testRefill},
		{"BurstCap", testBurstCap},
		{"LoweredBurst", testLoweredBurst},
		{"CostUnits", testCostUnits},
		{"ZeroCost", testZeroCost},
		{"Never", testNever},
		{"FixedWindow", testFixedWindow},
		{"MultiScopeAllOrNothing", testMultiScopeAllOrNothing},
		{"BlockedIsLongestWait", testBlockedIsLongestWait},
		{"RefundCancelledWait", testRefund},
		{"AdjustSettlesACall", testAdjust},
		{"LevelReadsWithoutChanging", func(t *testing.T, h *harness) { testLevel(t, h, !cfg.noLevel) }},
		{"WorkloadFloor", testFloor},
		{"Clamp", testClamp},
		{"OddKeys", testOddKeys},
		{"AbsurdWaits", testAbsurdWaits},
		{"ConcurrentTakersNeverOverGranted", func(t *testing.T, h *harness) { testConcurrent(t, h, cfg.concurrency, !cfg.noTotal) }},
		{"TakenTotal", func(t *testing.T, h *harness) { testTaken(t, h, !cfg.noTotal) }},
		{"GroupsChangeNoDecision", func(t *testing.T, h *harness) { testGroups(t, h, !cfg.noTotal, !cfg.noLevel) }},
		{"Eviction", func(t *testing.T, h *harness) { testEviction(t, h, cfg.held) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, &harness{t: t, s: newStore(t), ctx: context.Background()})
		})
	}
}

// harness wraps a store with assertions.
type harness struct {
	t   *testing.T
	s   store.Store
	ctx context.Context
}

// Scope returns a scope name no other test uses, so that tests sharing a
// server never share a bucket.
func Scope(t testing.TB) string {
	var b [6]byte
	rand.Read(b[:])
	return t.Name() + "/" + hex.EncodeToString(b[:])
}

func at(ms int) time.Time { return Start.Add(time.Duration(ms) * time.Millisecond) }

func (h *harness) take(now time.Time, ds ...store.Demand) store.Decision {
	h.t.Helper()
	d, err := h.s.Take(h.ctx, now, ds)
	if err != nil {
		h.t.Fatalf("Take: %v", err)
	}
	return d
}

// granted asserts that the take at now is granted.
func (h *harness) granted(now time.Time, ds ...store.Demand) {
	h.t.Helper()
	if d := h.take(now, ds...); !d.OK {
		h.t.Fatalf("Take at %v = %+v, want granted", now.Sub(Start), d)
	}
}

// denied asserts that the take at now is denied, blocked on demand blocked
// with about the given wait.
func (h *harness) denied(now time.Time, blocked int, wait time.Duration, ds ...store.Demand) {
	h.t.Helper()
	d := h.take(now, ds...)
	if d.OK {
		h.t.Fatalf("Take at %v granted, want denied with wait %v", now.Sub(Start), wait)
	}
	if d.Blocked != blocked || !closeTo(d.Wait, wait) {
		h.t.Fatalf("Take at %v = {Blocked:%d Wait:%v}, want {Blocked:%d Wait:%v}", now.Sub(Start), d.Blocked, d.Wait, blocked, wait)
	}
}

// takeAll takes d until denied and returns how many takes were granted.
func (h *harness) takeAll(now time.Time, d store.Demand) int {
	h.t.Helper()
	for n := 0; n < 10000; n++ {
		if !h.take(now, d).OK {
			return n
		}
	}
	h.t.Fatal("takeAll: more than 10000 grants")
	return 0
}

// closeTo compares waits to the microsecond: the remote stores keep time in
// microseconds, and their floating point may round the last nanosecond the
// other way.
func closeTo(got, want time.Duration) bool {
	if got == store.Never || want == store.Never {
		return got == want
	}
	diff := got - want
	return diff >= -time.Microsecond && diff <= time.Microsecond
}

func bucket(t *testing.T, rate, burst float64) store.Demand {
	return store.Demand{Scope: Scope(t), Rate: rate, Burst: burst, Cost: 1}
}

func testNewBucketStartsFull(t *testing.T, h *harness) {
	d := bucket(t, 1, 5)
	if n := h.takeAll(at(0), d); n != 5 {
		t.Fatalf("a new bucket of burst 5 granted %d takes of 1, want 5", n)
	}
	h.denied(at(0), 0, time.Second, d)
	// Keys are separate buckets within a scope.
	other := d
	other.Key = "other"
	if n := h.takeAll(at(0), other); n != 5 {
		t.Fatalf("another key of the scope granted %d, want its own 5", n)
	}
}

func testRefill(t *testing.T, h *harness) {
	d := bucket(t, 10, 10) // 10 a second: one every 100 ms
	if n := h.takeAll(at(0), d); n != 10 {
		t.Fatalf("granted %d, want 10", n)
	}
	h.denied(at(40), 0, 60*time.Millisecond, d)
	h.granted(at(100), d)
	h.denied(at(100), 0, 100*time.Millisecond, d)
	// 550 ms later: 5.5 tokens, so 5 takes.
	if n := h.takeAll(at(650), d); n != 5 {
		t.Fatalf("after 550 ms at 10/s granted %d, want 5", n)
	}
	h.denied(at(650), 0, 50*time.Millisecond, d)
}

func testBurstCap(t *testing.T, h *harness) {
	d := bucket(t, 100, 5)
	h.granted(at(0), d)
	// An hour idle refills to the burst, not beyond.
	if n := h.takeAll(at(3_600_000), d); n != 5 {
		t.Fatalf("after an hour granted %d, want the burst, 5", n)
	}
}

func testLoweredBurst(t *testing.T, h *harness) {
	d := bucket(t, 1, 10)
	h.granted(at(0), d) // 9 left
	d.Burst = 3         // a learned, lower limit applies at once
	if n := h.takeAll(at(0), d); n != 3 {
		t.Fatalf("after lowering the burst to 3 granted %d, want 3", n)
	}
	d.Burst = 10 // raising it does not add tokens
	h.denied(at(0), 0, time.Second, d)
}

func testCostUnits(t *testing.T, h *harness) {
	d := bucket(t, 2, 10)
	d.Cost = 3
	if n := h.takeAll(at(0), d); n != 3 {
		t.Fatalf("cost 3 from burst 10 granted %d, want 3", n)
	}
	// 1 left; 2 more at 2/s is one second.
	h.denied(at(0), 0, time.Second, d)
	d.Cost = 1
	h.granted(at(0), d) // a cheaper take still fits
	d.Cost = 0.5        // fractional units
	h.denied(at(0), 0, 250*time.Millisecond, d)
	h.granted(at(250), d)
}

func testZeroCost(t *testing.T, h *harness) {
	d := bucket(t, 1, 2)
	h.takeAll(at(0), d)
	d.Cost = 0
	h.granted(at(0), d)
	d.Cost = -3 // takes nothing, and gives nothing
	h.granted(at(0), d)
	d.Cost = 1
	h.denied(at(0), 0, time.Second, d)
}

func testNever(t *testing.T, h *harness) {
	d := bucket(t, 1, 5)
	d.Cost = 6
	h.denied(at(0), 0, store.Never, d)
	d.Cost, d.Floor = 3, 3 // cost plus floor above the burst
	h.denied(at(0), 0, store.Never, d)

	frozen := bucket(t, 0, 2) // no refill: spent is spent
	h.granted(at(0), frozen)
	h.granted(at(0), frozen)
	h.denied(at(1000), 0, store.Never, frozen)
}

func testFixedWindow(t *testing.T, h *harness) {
	d := store.Demand{Scope: Scope(t), Burst: 3, Window: 10 * time.Second, Cost: 1}
	if n := h.takeAll(at(0), d); n != 3 {
		t.Fatalf("a window of 3 granted %d, want 3", n)
	}
	h.denied(at(4000), 0, 6*time.Second, d)
	// No refill within the window, whatever Rate says.
	d.Rate = 1000
	h.denied(at(9999), 0, time.Millisecond, d)
	// The window ends: full again, and the next one starts now.
	if n := h.takeAll(at(10_000), d); n != 3 {
		t.Fatalf("the next window granted %d, want 3", n)
	}
	h.denied(at(12_500), 0, 7500*time.Millisecond, d)
	// A window that started long ago starts again at the next take.
	h.granted(at(100_000), d)
	h.granted(at(100_000), d)
	h.granted(at(100_000), d)
	h.denied(at(101_000), 0, 9*time.Second, d)
}

func testMultiScopeAllOrNothing(t *testing.T, h *harness) {
	a, b := bucket(t, 1, 5), bucket(t, 1, 2)
	h.granted(at(0), b) // b has 1 left
	a.Cost, b.Cost = 2, 2
	// b cannot give 2: neither is taken.
	h.denied(at(0), 1, time.Second, a, b)
	a.Cost = 5
	h.granted(at(0), a) // a still had all 5
	b.Cost = 1
	h.granted(at(0), b) // and b its 1

	// Both can give: both are taken.
	c, d := bucket(t, 1, 3), bucket(t, 1, 3)
	h.granted(at(0), c, d)
	c.Cost = 3
	h.denied(at(0), 0, time.Second, c)
	d.Cost = 3
	h.denied(at(0), 0, time.Second, d)
}

func testBlockedIsLongestWait(t *testing.T, h *harness) {
	a, b, c := bucket(t, 1, 2), bucket(t, 1, 2), bucket(t, 1, 2)
	h.takeAll(at(0), a)
	h.takeAll(at(0), c)
	a.Cost, c.Cost = 1, 2
	// a waits 1 s, b not at all, c 2 s: c blocks.
	h.denied(at(0), 2, 2*time.Second, a, b, c)
	// A demand that can never be granted blocks whatever else waits.
	b.Cost = 3
	h.denied(at(0), 1, store.Never, a, b, c)
	b.Cost = 1
	h.granted(at(0), b) // nothing was taken from b by the denied takes
}

func testRefund(t *testing.T, h *harness) {
	d := bucket(t, 1, 5)
	d.Cost = 3
	h.granted(at(0), d)
	// The request waited on another scope, and its context was cancelled:
	// the tokens go back.
	if err := h.s.Refund(h.ctx, at(0), []store.Demand{d}); err != nil {
		t.Fatal(err)
	}
	d.Cost = 5
	h.granted(at(0), d)

	// A refund never fills a bucket beyond its burst.
	e := bucket(t, 1, 4)
	e.Cost = 2
	h.granted(at(0), e)
	if err := h.s.Refund(h.ctx, at(10_000), []store.Demand{e}); err != nil {
		t.Fatal(err)
	}
	e.Cost = 1
	if n := h.takeAll(at(10_000), e); n != 4 {
		t.Fatalf("after a refund to a full bucket granted %d, want the burst, 4", n)
	}

	// A multi-demand refund gives back to every bucket.
	f, g := bucket(t, 1, 2), bucket(t, 1, 2)
	f.Cost, g.Cost = 2, 2
	h.granted(at(0), f, g)
	if err := h.s.Refund(h.ctx, at(0), []store.Demand{f, g}); err != nil {
		t.Fatal(err)
	}
	h.granted(at(0), f, g)
}

// adjust settles ds on the store, which must be a store.Adjuster.
func (h *harness) adjust(now time.Time, ds ...store.Demand) {
	h.t.Helper()
	a, ok := h.s.(store.Adjuster)
	if !ok {
		h.t.Fatalf("%T is not a store.Adjuster: a Transport cannot charge a call that cost more than it reserved", h.s)
	}
	if err := a.Adjust(h.ctx, now, ds); err != nil {
		h.t.Fatalf("Adjust: %v", err)
	}
}

func testAdjust(t *testing.T, h *harness) {
	// A call reserved 4 of 10 and cost 7: 3 more are taken.
	d := bucket(t, 1, 10)
	d.Cost = 4
	h.granted(at(0), d)
	d.Cost = 3
	h.adjust(at(0), d)
	h.granted(at(0), d)
	d.Cost = 1
	h.denied(at(0), 0, time.Second, d)

	// A charge is owed whatever the bucket holds and whatever the floor:
	// it overdraws, and the debt is waited out at the bucket's rate.
	e := bucket(t, 1, 5)
	e.Cost = 5
	h.granted(at(0), e)
	e.Cost, e.Floor = 2, 3
	h.adjust(at(0), e)
	e.Cost, e.Floor = 1, 0
	h.denied(at(0), 0, 3*time.Second, e)
	h.granted(at(3000), e)

	// A call that cost less gets the rest back, never beyond the burst.
	f := bucket(t, 1, 4)
	f.Cost = 2
	h.granted(at(0), f)
	f.Cost = -10
	h.adjust(at(0), f)
	f.Cost = 1
	if n := h.takeAll(at(0), f); n != 4 {
		t.Fatalf("after giving back more than was taken, granted %d, want the burst, 4", n)
	}

	// A bucket never taken from owes a charge too.
	g := bucket(t, 1, 4)
	g.Cost = 3
	h.adjust(at(0), g)
	g.Cost = 2
	h.denied(at(0), 0, time.Second, g)

	// A window bucket in debt stays shut until its window ends, then is
	// full again: the debt went with the window.
	w := store.Demand{Scope: Scope(t), Burst: 10, Window: time.Hour, Cost: 10}
	h.granted(at(0), w)
	w.Cost = 5
	h.adjust(at(1000), w)
	w.Cost = 1
	h.denied(at(2000), 0, time.Hour-2*time.Second, w)
	w.Cost = 10
	h.granted(at(3_600_000), w)

	// A settlement of several buckets settles each; a zero cost is no-op.
	a, b := bucket(t, 1, 2), bucket(t, 1, 2)
	a.Cost, b.Cost = 2, 2
	h.granted(at(0), a, b)
	a.Cost, b.Cost = -2, 0
	h.adjust(at(0), a, b)
	a.Cost, b.Cost = 2, 1
	h.granted(at(0), a)
	h.denied(at(0), 0, time.Second, b)
}

func testFloor(t *testing.T, h *harness) {
	// A workload that must leave 4 of 10 for the others.
	batch := bucket(t, 1, 10)
	batch.Floor = 4
	if n := h.takeAll(at(0), batch); n != 6 {
		t.Fatalf("with floor 4 of 10 granted %d, want 6", n)
	}
	// It waits until the level is cost + floor: 1 more token.
	h.denied(at(0), 0, time.Second, batch)
	// The workload the floor protects still has its reserve.
	interactive := batch
	interactive.Floor = 0
	if n := h.takeAll(at(0), interactive); n != 4 {
		t.Fatalf("without a floor granted %d of the reserve, want 4", n)
	}
	h.denied(at(0), 0, 5*time.Second, batch) // needs 5 now: from 0
}

func testClamp(t *testing.T, h *harness) {
	d := bucket(t, 1, 10)
	h.granted(at(0), d) // 9
	if err := h.s.Clamp(h.ctx, at(0), d, 2); err != nil {
		t.Fatal(err)
	}
	if n := h.takeAll(at(0), d); n != 2 {
		t.Fatalf("after a clamp to 2 granted %d, want 2", n)
	}
	// A clamp never raises the level.
	if err := h.s.Clamp(h.ctx, at(0), d, 50); err != nil {
		t.Fatal(err)
	}
	h.denied(at(0), 0, time.Second, d)
	// It refills from the clamped level.
	if n := h.takeAll(at(3000), d); n != 3 {
		t.Fatalf("3 s after the clamp granted %d, want 3", n)
	}

	// A clamp on a bucket never seen lowers a full one.
	e := bucket(t, 1, 10)
	if err := h.s.Clamp(h.ctx, at(0), e, 1); err != nil {
		t.Fatal(err)
	}
	if n := h.takeAll(at(0), e); n != 1 {
		t.Fatalf("after a clamp of a new bucket to 1 granted %d, want 1", n)
	}
}

func testConcurrent(t *testing.T, h *harness, workers int, totals bool) {
	const burst, perWorker = 100, 10
	a, b := bucket(t, 1, burst), bucket(t, 1, 2*burst)
	single, pair := a, []store.Demand{b, a}
	pair[0].Cost = 2
	single.Key, pair[1].Key = "single", "pair"
	// Every taker uses the same now, so nothing refills: exactly the burst
	// is granted, however the takes interleave.
	var singles, pairs atomic.Int64
	// Each granted take of the single bucket reports the total it left:
	// 1 to the burst, each once, however the takes interleave.
	var seenMu sync.Mutex
	seen := map[float64]int{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for range perWorker {
				d, err := h.s.Take(h.ctx, at(0), []store.Demand{single})
				if err != nil {
					errs <- err
					return
				}
				if d.OK {
					singles.Add(1)
					seenMu.Lock()
					seen[d.Taken]++
					seenMu.Unlock()
				}
				if w%2 == 0 {
					d, err = h.s.Take(h.ctx, at(0), pair)
					if err != nil {
						errs <- err
						return
					}
					if d.OK {
						pairs.Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := min(int64(workers*perWorker), burst)
	if got := singles.Load(); got != want {
		t.Errorf("%d concurrent takers were granted %d, want exactly %d", workers, got, want)
	}
	wantPairs := min(int64((workers+1)/2*perWorker), burst)
	if got := pairs.Load(); got != wantPairs {
		t.Errorf("concurrent two-bucket takes were granted %d, want exactly %d", got, wantPairs)
	}
	if !totals {
		return
	}
	for n := 1; n <= int(singles.Load()); n++ {
		if seen[float64(n)] != 1 {
			t.Errorf("concurrent takes reported a total of %d units taken %d times, want once each from 1 to %d (all reported: %v)", n, seen[float64(n)], singles.Load(), seen)
			return
		}
	}
}

// testTaken checks the running total a granted take reports
// (store.Decision.Taken): what was taken from the first demand's bucket,
// ever, the take included; a refund, a clamp and a negative adjustment do
// not lower it, a positive adjustment raises it. A store without a total
// (WithoutTotal) reports zero.
func testTaken(t *testing.T, h *harness, totals bool) {
	d, e := bucket(t, 1, 10), bucket(t, 1, 10)
	e.Key = "other"
	total := func(now time.Time, want float64, ds ...store.Demand) {
		t.Helper()
		dec := h.take(now, ds...)
		if !dec.OK {
			t.Fatalf("take of %v at %v refused", ds, now)
		}
		if !totals {
			want = 0
		}
		if dec.Taken != want {
			t.Fatalf("a take of %v units reported a total of %v taken, want %v", ds[0].Cost, dec.Taken, want)
		}
	}
	d.Cost = 2
	total(at(0), 2, d)
	d.Cost = 3
	total(at(0), 5, d)
	// Given back: the bucket holds it again, the total stays.
	if err := h.s.Refund(h.ctx, at(0), []store.Demand{d}); err != nil {
		t.Fatalf("Refund: %v", err)
	}
	d.Cost = 1
	total(at(0), 6, d)
	// The first demand's bucket is the one reported.
	total(at(0), 1, e, d)
	total(at(0), 8, d, e)
	// A bucket lowered by a clamp keeps its total, and grows it once it refills.
	if err := h.s.Clamp(h.ctx, at(0), d, 0); err != nil {
		t.Fatalf("Clamp: %v", err)
	}
	total(at(1000), 9, d)
	// A settlement that charges more adds to it; one that gives back does not lower it.
	d.Cost = 2
	h.adjust(at(1000), d)
	d.Cost = -4
	h.adjust(at(1000), d)
	d.Cost = 1
	total(at(1000), 12, d)
	// A refused take leaves it.
	d.Cost = 20
	if dec := h.take(at(1000), d); dec.OK {
		t.Fatalf("a take of 20 from a bucket of 10 granted")
	}
	d.Cost = 1
	total(at(1000), 13, d)
	// Fractional costs add up exactly enough to be read back.
	d.Cost = 0.5
	total(at(2000), 13.5, d)
}

func testEviction(t *testing.T, h *harness, held func(t *testing.T, s store.Store, d store.Demand, took, now time.Time) bool) {
	if held == nil {
		t.Skip("the store gives no way to tell whether it holds a bucket (storetest.WithEviction)")
	}
	d := bucket(t, 1, 10)
	d.Cost = 5
	h.granted(at(0), d) // full again 5 s later
	if !held(t, h.s, d, at(0), at(4000)) {
		t.Fatal("the bucket was forgotten 4 s into a 5 s refill")
	}
	if held(t, h.s, d, at(0), at(6000)) {
		t.Fatal("the bucket is still held 1 s after it was full again")
	}
	// Forgetting it changed nothing: it is full.
	d.Cost = 1
	if n := h.takeAll(at(6000), d); n != 10 {
		t.Fatalf("after eviction granted %d, want the burst, 10", n)
	}

	// Later, when the first bucket is full again too: a store that counts
	// its buckets sees only this one.
	w := store.Demand{Scope: Scope(t), Burst: 2, Window: 5 * time.Second, Cost: 1}
	h.granted(at(20_000), w)
	if !held(t, h.s, w, at(20_000), at(24_000)) {
		t.Fatal("a window bucket was forgotten before its window ended")
	}
	if held(t, h.s, w, at(20_000), at(26_000)) {
		t.Fatal("a window bucket is still held 1 s after its window ended")
	}
}

// Count runs workers goroutines that each call f each times, and returns how
// many calls reported true: the grants, counted, not estimated. The first
// error fails the test.
func Count(t testing.TB, workers, each int, f func() (bool, error)) int64 {
	t.Helper()
	var n atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range each {
				ok, err := f()
				if err != nil {
					errs <- err
					return
				}
				if ok {
					n.Add(1)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return n.Load()
}
