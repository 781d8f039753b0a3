package outputs

import (
	"fmt"
	"testing"
)

func TestSketchBuckets(t *testing.T) {
	prev := -1
	for n := int64(0); n <= sketchMax+1000; n += 1 + n/64 {
		i := sketchIndex(n)
		if i < prev || i >= sketchBuckets {
			t.Fatalf("sketchIndex(%d) = %d after %d: out of order or range", n, i, prev)
		}
		prev = i
		c := sketchCeil(i)
		if n <= sketchMax && (c < n || float64(c) > float64(n)*1.125+1) {
			t.Fatalf("sketchCeil(sketchIndex(%d)) = %d: below the output or more than 12.5 %% above it", n, c)
		}
		if i > 0 && sketchCeil(i-1) >= n && n <= sketchMax {
			t.Fatalf("%d fits bucket %d (ceil %d) but went to %d", n, i-1, sketchCeil(i-1), i)
		}
	}
	if sketchIndex(-5) != 0 || sketchCeil(sketchIndex(sketchMax*4)) != sketchMax {
		t.Errorf("outputs out of range are not clamped")
	}
}

func TestLearnerIsBounded(t *testing.T) {
	var l Learner
	for i := range maxModels + 10 {
		for range MinSamples {
			l.Observe(fmt.Sprint("model-", i), 7)
		}
	}
	if n := len(*l.models.Load()); n != maxModels {
		t.Errorf("%d models learned, want at most %d", n, maxModels)
	}
	if _, ok := l.Estimate(fmt.Sprint("model-", maxModels)); ok {
		t.Errorf("a model beyond the bound has an estimate; want its worst case")
	}
	if n, ok := l.Estimate("model-0"); !ok || n != 7 {
		t.Errorf("estimate = %d, %v; want 7", n, ok)
	}
	// Once a model is known, learning and reading cost no allocation.
	if n := testing.AllocsPerRun(100, func() {
		l.Observe("model-1", 9)
		l.Estimate("model-1")
	}); n != 0 {
		t.Errorf("%v allocations to learn and read a known model's estimate, want 0", n)
	}
	var none *Learner
	none.Observe("m", 1) // no meter: nothing learned, no panic
	if _, ok := none.Estimate("m"); ok {
		t.Error("a nil learner has an estimate")
	}
}

// The estimate is the nearest-rank 99th percentile of the last 256 to 512
// calls, from the MinSamples-th on: one long answer in a hundred is below
// it, two are not; a model whose answers grow is followed within a few
// calls, and one whose answers shrink within 512.
func TestLearnerPercentileAndWindow(t *testing.T) {
	var l Learner
	observe := func(n int64, times int) {
		for range times {
			l.Observe("m", n)
		}
	}
	observe(20, MinSamples-1)
	if n, ok := l.Estimate("m"); ok {
		t.Fatalf("an estimate of %d after %d calls, want none before %d", n, MinSamples-1, MinSamples)
	}
	observe(20, 1)
	if n, ok := l.Estimate("m"); !ok || n != 21 { // 20 is in the bucket [20, 21]
		t.Fatalf("after %d calls of 20: %d, %v; want 21", MinSamples, n, ok)
	}
	observe(20, 99-MinSamples)
	observe(1000, 1) // 1 of 100: the 99th is still a 20
	if n, _ := l.Estimate("m"); n != 21 {
		t.Errorf("one long answer in 100: estimate %d, want 21", n)
	}
	observe(1000, 1) // 2 of 101
	if n, _ := l.Estimate("m"); n != sketchCeil(sketchIndex(1000)) {
		t.Errorf("two long answers in 101: estimate %d, want %d", n, sketchCeil(sketchIndex(1000)))
	}
	observe(20, 2*halfWindow) // the long answers leave the window
	if n, _ := l.Estimate("m"); n != 21 {
		t.Errorf("after %d more calls of 20: estimate %d, want 21", 2*halfWindow, n)
	}
}

// BenchmarkLearner is what a metered call adds: a read of its model's
// estimate when it is planned, and a sample when it settles.
func BenchmarkLearner(b *testing.B) {
	var l Learner
	for i := range halfWindow * 2 {
		l.Observe("gpt-x", int64(i%700))
	}
	b.ReportAllocs()
	i := int64(0)
	for b.Loop() {
		l.Estimate("gpt-x")
		l.Observe("gpt-x", i%700)
		i++
	}
}
