package pacer

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestMemoryStoreForgetsIdleBuckets(t *testing.T) {
	clk := newFakeClock()
	m := NewMemoryStore()
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
	m := NewMemoryStore()
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

// A limit of one per 290 years is absurd, not impossible: the second
// request waits, saturated at LongestWait, and is refused as a wait that
// does not fit its deadline, not as a request too big for its bucket
// (ErrExceedsCapacity), which would tell the caller to make it smaller.
func TestAbsurdWaitSaturates(t *testing.T) {
	m := NewMemoryStore()
	now := newFakeClock().Now()
	d := Demand{Scope: "s", Rate: 1e-300, Burst: 1, Cost: 1}
	if dec, _ := m.Take(context.Background(), now, []Demand{d}); !dec.OK {
		t.Fatal("the first take of a full bucket was refused")
	}
	dec, _ := m.Take(context.Background(), now, []Demand{d})
	if dec.OK || dec.Wait != LongestWait {
		t.Errorf("decision = %+v, want a refusal for LongestWait", dec)
	}

	tr := New(&stubAPI{clock: SystemClock}, WithLimit(Limit{Count: 1, Per: 290 * 365 * 24 * time.Hour}), WithoutRetry())
	mustNotErr(t, tr.Err())
	mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	err := get(tr, ctx, "http://api.test/")
	var te *ThrottledError
	if !errors.As(err, &te) || errors.Is(err, ErrExceedsCapacity) || te.Reason != ReasonRate || te.RetryAfter != LongestWait {
		t.Fatalf("the second call of one per 290 years returned %v; want a ThrottledError for the rate, RetryAfter LongestWait", err)
	}
}
