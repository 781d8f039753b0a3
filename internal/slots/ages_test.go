package slots

import (
	"sync"
	"testing"
	"time"
)

// t0 is the epoch the tests start at: a Unix second well past 2^32, so
// that the tag's lost high bits must be restored.
const t0 = int64(1<<32 + 1_000)

func sum(overdue []Overdue) int {
	n := 0
	for _, o := range overdue {
		n += o.N
	}
	return n
}

// An Ages keeps its count through slots older than its ring: taken and
// given back in any order, across seconds, the count ends at zero.
func TestAgesCountAcrossTheRing(t *testing.T) {
	var a Ages
	var epochs []int64
	for e := t0; e < t0+3*ageRing; e++ {
		for range 3 {
			a.Add(e)
			epochs = append(epochs, e)
		}
	}
	oldest, held, overdue := a.Check(t0+3*ageRing, 5*time.Second)
	if !held || oldest != t0 {
		t.Errorf("oldest %d (%v), want %d", oldest, held, t0)
	}
	if n, want := sum(overdue), 3*(3*ageRing-5); n != want {
		t.Errorf("%d slots overdue, want %d", n, want)
	}
	for i := len(epochs) - 1; i >= 0; i -= 2 {
		a.Remove(epochs[i])
	}
	for i := len(epochs) - 2; i >= 0; i -= 2 {
		a.Remove(epochs[i])
	}
	if _, held, _ := a.Check(t0+1_000, time.Second); held {
		t.Errorf("slots still counted after every one was given back: old %v", a.old)
	}
}

// Each slot held too long is overdue once, at the first Check past its
// alert, and the oldest is the epoch of the slot taken first that is
// still held.
func TestAgesOverdueOnce(t *testing.T) {
	const alert = 10 * time.Second
	var a Ages
	a.Add(t0)
	a.Add(t0)
	a.Add(t0 + 3)
	if _, _, overdue := a.Check(t0+9, alert); len(overdue) != 0 {
		t.Fatalf("held 9 s with an alert of 10 s: overdue %v", overdue)
	}
	oldest, held, overdue := a.Check(t0+11, alert)
	if !held || oldest != t0 || len(overdue) != 1 || overdue[0] != (Overdue{t0, 2}) {
		t.Fatalf("at t0+11: oldest %d (%v), overdue %v; want t0 and the 2 slots of t0", oldest-t0, held, overdue)
	}
	if _, _, overdue := a.Check(t0+12, alert); len(overdue) != 0 {
		t.Fatalf("the slots of t0 were overdue again: %v", overdue)
	}
	a.Remove(t0)
	a.Remove(t0)
	oldest, held, overdue = a.Check(t0+14, alert)
	if !held || oldest != t0+3 || len(overdue) != 1 || overdue[0] != (Overdue{t0 + 3, 1}) {
		t.Fatalf("at t0+14: oldest t0+%d (%v), overdue %v; want t0+3 and its slot", oldest-t0, held, overdue)
	}
	a.Remove(t0 + 3)
	if _, held, _ := a.Check(t0+15, alert); held {
		t.Error("a slot still held after every one was given back")
	}
	if a.CheckedAt() != t0+15 {
		t.Errorf("CheckedAt = t0+%d, want t0+15", a.CheckedAt()-t0)
	}
}

// The fast path counts a slot only in a word already tagged with its
// second, and gives one back only where it is counted: what it refuses,
// Add and Remove do.
func TestAgesFastPath(t *testing.T) {
	var a Ages
	if a.TryAdd(t0) {
		t.Fatal("TryAdd counted a slot in an untagged word")
	}
	a.Add(t0)
	if !a.TryAdd(t0) {
		t.Fatal("TryAdd refused a slot of its word's second")
	}
	if a.TryAdd(t0 + ageRing) {
		t.Fatal("TryAdd counted a slot in the word of another second")
	}
	a.Add(t0 + ageRing) // moves t0's slots out of the ring
	if a.TryRemove(t0) {
		t.Fatal("TryRemove gave back a slot moved out of the ring")
	}
	a.Remove(t0)
	a.Remove(t0)
	if !a.TryRemove(t0 + ageRing) {
		t.Fatal("TryRemove refused the slot its word counts")
	}
	if a.TryRemove(t0 + ageRing) {
		t.Fatal("TryRemove gave back a slot of a word that counts none")
	}
	a.Remove(t0 + 1) // never added: ignored
	if _, held, _ := a.Check(t0+ageRing, time.Second); held {
		t.Errorf("slots counted after all were given back: old %v", a.old)
	}
}

// A word keeps only the low 32 bits of its second: the epoch is restored
// from the Check's, on either side of a 2^32 boundary.
func TestFullEpoch(t *testing.T) {
	for _, c := range []struct{ epoch, near int64 }{
		{t0, t0}, {t0, t0 + 1_000}, {1<<32 - 1, 1 << 32}, {1 << 32, 1<<32 - 1}, {5, 5 + 1<<30},
	} {
		if got := fullEpoch(ageTag(c.epoch)|1, c.near); got != c.epoch {
			t.Errorf("fullEpoch(tag of %d, near %d) = %d", c.epoch, c.near, got)
		}
	}
}

// Slots taken and given back from many goroutines, across seconds, end
// at zero: the compare-and-swaps and the folds under the lock agree.
func TestAgesConcurrent(t *testing.T) {
	var a Ages
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2_000 {
				e := t0 + int64((g+i)%(3*ageRing))
				a.Add(e)
				if i%7 == 0 {
					a.Check(e, time.Second)
				}
				if !a.TryRemove(e) {
					a.Remove(e)
				}
			}
		})
	}
	wg.Wait()
	if _, held, _ := a.Check(t0+3*ageRing, time.Second); held {
		t.Errorf("slots counted after all were given back: old %v", a.old)
	}
}

// BenchmarkAges measures what counting slots by age adds to a call that
// takes and gives back a slot: one compare-and-swap each way, on one word
// that every core shares in the parallel case.
func BenchmarkAges(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		var a Ages
		a.Add(t0)
		for b.Loop() {
			if !a.TryAdd(t0) {
				a.Add(t0)
			}
			if !a.TryRemove(t0) {
				a.Remove(t0)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		var a Ages
		a.Add(t0)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if !a.TryAdd(t0) {
					a.Add(t0)
				}
				if !a.TryRemove(t0) {
					a.Remove(t0)
				}
			}
		})
	})
}
