package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pacer-go/pacer/internal/fakeclock"
)

func TestMemoryStoreForgetsIdleBuckets(t *testing.T) {
	clk := newFakeClock()
	m := NewMemory()
	ctx := context.Background()
	// 300,000 distinct keys, one take each, a thousand every 10 ms: each
	// bucket refills (one token at 10 a second) within 100 ms.
	for i := range 300_000 {
		if i%1000 == 0 {
			clk.Advance(10 * time.Millisecond)
		}
		d := Demand{Scope: "per-user", Key: fmt.Sprint(i), Rate: 10, Burst: 1, Cost: 1}
		if dec, _ := m.Take(ctx, clk.Now(), []Demand{d}); !dec.OK {
			t.Fatalf("take %d refused", i)
		}
	}
	// What is held is about what refilled in the last 100 ms, not 300,000.
	if n := m.Len(); n > 30_000 {
		t.Errorf("the store holds %d buckets after 300,000 keys seen once; it must forget full ones", n)
	}
	t.Logf("holding %d buckets", m.Len())
}

func TestMemoryStoreKeepsBucketsThatAreNotFull(t *testing.T) {
	clk := newFakeClock()
	m := NewMemory()
	ctx := context.Background()
	spent := Demand{Scope: "s", Key: "spent", Rate: 1.0 / 3600, Burst: 1, Cost: 1}
	m.Take(ctx, clk.Now(), []Demand{spent})
	for i := range 10_000 { // plenty of sweeps
		m.Take(ctx, clk.Now(), []Demand{{Scope: "s", Key: fmt.Sprint(i), Rate: 1000, Burst: 1, Cost: 1}})
		clk.Advance(time.Millisecond)
	}
	if dec, _ := m.Take(ctx, clk.Now(), []Demand{spent}); dec.OK {
		t.Fatal("a spent bucket was forgotten and came back full")
	}
}

// A rate of one per 290 years is absurd, not impossible: the second take
// waits, saturated at LongestWait (TestAbsurdLimitWaitSaturates in pacer
// checks what a Transport makes of it).
func TestAbsurdWaitSaturates(t *testing.T) {
	m := NewMemory()
	now := newFakeClock().Now()
	d := Demand{Scope: "s", Rate: 1e-300, Burst: 1, Cost: 1}
	if dec, _ := m.Take(context.Background(), now, []Demand{d}); !dec.OK {
		t.Fatal("the first take of a full bucket was refused")
	}
	dec, _ := m.Take(context.Background(), now, []Demand{d})
	if dec.OK || dec.Wait != LongestWait {
		t.Errorf("decision = %+v, want a refusal for LongestWait", dec)
	}
}

func newFakeClock() *fakeclock.Clock {
	return fakeclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}
