package simulate

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// at returns the instant s seconds into the run.
func at(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// allowedAt offers one request at each time to l and returns those allowed.
func allowedAt(l Limiter, times ...time.Duration) []time.Duration {
	var got []time.Duration
	for _, t := range times {
		if l.Allow(t) {
			got = append(got, t)
		}
	}
	return got
}

// tenthsOfSeconds returns the instants from, from+0.1 s, … up to but
// excluding to.
func tenthsOfSeconds(from, to float64) []time.Duration {
	var out []time.Duration
	for t := at(from); t < at(to); t += 100 * time.Millisecond {
		out = append(out, t)
	}
	return out
}

func TestTokenBucketAllowsItsCapacityThenItsRefill(t *testing.T) {
	// A bucket of 5 refilled at 1/s, offered 10 requests a second (at
	// s.0, s.1, …, s.9) for 5 s. It starts full, so the first five go at
	// once; by then it has refilled 0.4 of a token, and the next whole token
	// is there at 1.0 s: so one a second after that, at each whole second.
	b := NewTokenBucket(5, 1)
	got := allowedAt(b, tenthsOfSeconds(0, 5)...)
	want := []time.Duration{at(0), at(0.1), at(0.2), at(0.3), at(0.4), at(1), at(2), at(3), at(4)}
	if !slices.Equal(got, want) {
		t.Errorf("allowed at %v, want %v", got, want)
	}
}

func TestTokenBucketLevel(t *testing.T) {
	b := NewTokenBucket(5, 2)
	if got := b.Level(0); got != 5 {
		t.Errorf("a new bucket holds %v tokens, want 5 (it starts full)", got)
	}
	for range 5 {
		b.Allow(0)
	}
	if b.Allow(0) {
		t.Error("allowed a sixth request at once from a bucket of 5")
	}
	if got := b.Level(at(1.25)); got != 2.5 {
		t.Errorf("level after 1.25 s at 2/s = %v, want 2.5", got)
	}
	if got := b.Level(at(100)); got != 5 {
		t.Errorf("level after 100 s = %v, want the capacity 5: it never overfills", got)
	}
}

func TestTokenBucketKeepsExactRatesDespiteFloatingPoint(t *testing.T) {
	// 40 requests a second, 25 ms apart, into an empty bucket refilled at
	// 40/s: each gap makes exactly one token, so every request goes, even
	// though 0.025 × 40 is not exactly 1 in floating point.
	b := NewTokenBucket(1, 40)
	for i := range 4000 {
		if now := time.Duration(i) * 25 * time.Millisecond; !b.Allow(now) {
			t.Fatalf("rejected the request at %v", now)
		}
	}
}

func TestFixedWindowCountsPerAlignedWindow(t *testing.T) {
	// 10 per 10 s, offered 3 a second evenly for 30 s: each window allows
	// its first 10 requests (the 10th arrives 3 s in) and rejects the
	// other 20.
	f := NewFixedWindow(10, 10*time.Second)
	var times []time.Duration
	for s := 0; s < 30; s++ {
		for k := range 3 {
			times = append(times, time.Duration(s)*time.Second+time.Duration(k)*time.Second/3)
		}
	}
	got := allowedAt(f, times...)
	var want []time.Duration
	for w := range 3 {
		want = append(want, times[w*30:w*30+10]...)
	}
	if !slices.Equal(got, want) {
		t.Errorf("allowed at %v, want %v", got, want)
	}
}

func TestFixedWindowAllowsTwiceItsAllowanceAcrossABoundary(t *testing.T) {
	// The weakness that makes people reach for sliding windows: 10 at the
	// end of one window and 10 at the start of the next all go, 20 in one
	// second.
	f := NewFixedWindow(10, 10*time.Second)
	got := allowedAt(f, tenthsOfSeconds(9, 11)...)
	if len(got) != 20 {
		t.Errorf("allowed %d of the 20 requests from 9 s to 11 s, want all 20", len(got))
	}
	if got := f.Level(at(10.95)); got != 10 {
		t.Errorf("level at 10.95 s = %v, want the 10 counted in [10 s, 20 s)", got)
	}
	if got := f.Level(at(20)); got != 0 {
		t.Errorf("level at 20 s = %v, want 0: a new window", got)
	}
}

func TestSlidingWindowBoundary(t *testing.T) {
	s := NewSlidingWindow(10, 10*time.Second)
	if got := allowedAt(s, tenthsOfSeconds(9, 10)...); len(got) != 10 {
		t.Fatalf("allowed %d of 10 requests from 9 s, want 10", len(got))
	}
	// Unlike the fixed window, crossing 10 s frees nothing: the requests
	// from 9 s are still in the last 10 s.
	if s.Allow(at(10)) {
		t.Error("allowed a request at 10 s, with 10 in the window (0 s, 10 s]")
	}
	if s.Allow(at(18.999)) {
		t.Error("allowed a request at 18.999 s, with the one of 9 s still in the window")
	}
	if got := s.Level(at(18.999)); got != 10 {
		t.Errorf("level at 18.999 s = %v, want 10", got)
	}
	// A request allowed at t counts until t + window and no longer.
	if !s.Allow(at(19)) {
		t.Error("rejected a request at 19 s, when the one of 9 s has just left the window")
	}
	if s.Allow(at(19.05)) {
		t.Error("allowed a request at 19.05 s: the one of 9.1 s leaves only at 19.1 s")
	}
	if got := s.Level(at(30)); got != 0 {
		t.Errorf("level at 30 s = %v, want 0", got)
	}
}

func TestSlidingWindowNeverExceedsItsAllowanceInAnyWindow(t *testing.T) {
	// Random bursty traffic; count by brute force, for every allowed
	// request, how many were allowed in the window starting there.
	const allowance, window = 7, 2 * time.Second
	rng := rand.New(rand.NewPCG(3, 4))
	var times []time.Duration
	for now := time.Duration(0); now < 60*time.Second; now += time.Duration(rng.ExpFloat64() * float64(100*time.Millisecond)) {
		times = append(times, now)
	}
	got := allowedAt(NewSlidingWindow(allowance, window), times...)
	for i := range got {
		n := 0
		for j := i; j < len(got) && got[j]-got[i] < window; j++ {
			n++
		}
		if n > allowance {
			t.Fatalf("%d allowed in the window from %v; the allowance is %d", n, got[i], allowance)
		}
	}
	// And it is not merely strict: a request is rejected only when the
	// window ending at it is full.
	allowed := map[time.Duration]bool{}
	for _, a := range got {
		allowed[a] = true
	}
	for _, r := range times {
		if allowed[r] {
			continue
		}
		n := 0
		for _, a := range got {
			if a <= r && r-a < window {
				n++
			}
		}
		if n != allowance {
			t.Fatalf("rejected the request at %v with %d in its window, want it rejected only at %d", r, n, allowance)
		}
	}
}
