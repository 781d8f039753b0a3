//go:build !race

package pacer

import (
	"context"
	"testing"
)

// A permit on the hot path allocates once: the Permit handed to the caller.
func TestPermitAllocs(t *testing.T) {
	const never = 1 << 30
	tr := New(nil, WithLimit(PerSecond(never)), WithConcurrency(never))
	ctx := context.Background()
	got := testing.AllocsPerRun(1000, func() {
		p, err := tr.TryAcquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p.Accept()
	})
	if got > 1 {
		t.Errorf("TryAcquire+Accept: %v allocations, want at most 1", got)
	}
}
