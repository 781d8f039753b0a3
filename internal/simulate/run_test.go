package simulate

import (
	"slices"
	"testing"
	"time"
)

// tinyConfig is a run small enough to work out by hand: 4 s of 4 requests
// a second, 8 in second 1, evenly spread; a bucket of 2 refilled at 2/s;
// windows of 4 per 2 s; pacer told of 2 per second at 50%, so it paces at
// 1 a second with a burst of 1.
func tinyConfig() Config {
	c := smallConfig()
	c.Capacity, c.Refill, c.Window = 2, 2, 2*time.Second
	c.PacerPer, c.Headroom = time.Second, 0.5
	return c
}

func TestRunByHand(t *testing.T) {
	// Arrivals: 0, .25, .5, .75 | 1, 1.125, …, 1.875 | 2, 2.25, 2.5, 2.75 | 3, 3.25, 3.5, 3.75.
	want := map[string]struct {
		perSecond []int
		rejected  int
	}{
		// Full at 0: 0, .25 and .5 go (the half token refilled by .25 makes
		// the third); then a token each half second, at 1, 1.5, 2, 2.5, …
		"token-bucket": {[]int{3, 2, 2, 2}, 11},
		// [0, 2) allows the first 4 (all of second 0); [2, 4) the same.
		"fixed-window": {[]int{4, 0, 4, 0}, 12},
		// Second 0 fills the window; at 2 s the request of 0 s leaves it,
		// at 2.25 the one of .25, and so on, so second 2 goes; second 3
		// finds second 2's four still in the window.
		"sliding-window": {[]int{4, 0, 4, 0}, 12},
		// One at 0, then one a second from the queue: .25 at 1, .5 at 2,
		// .75 at 3.
		"pacer": {[]int{1, 1, 1, 1}, 0},
	}
	r, err := Run(tinyConfig())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, res := range r.Results {
		names = append(names, res.Name)
		w := want[res.Name]
		allowed := 0
		for _, n := range w.perSecond {
			allowed += n
		}
		if res.Offered != 20 || res.Allowed != allowed || res.Rejected != w.rejected || res.BusiestSecond != slices.Max(w.perSecond) {
			t.Errorf("%s: offered %d, allowed %d, rejected %d, busiest %d; want 20, %d, %d, %d",
				res.Name, res.Offered, res.Allowed, res.Rejected, res.BusiestSecond, allowed, w.rejected, slices.Max(w.perSecond))
		}
		if !slices.Equal(res.AllowedPerSecond, w.perSecond) {
			t.Errorf("%s: allowed per second %v, want %v", res.Name, res.AllowedPerSecond, w.perSecond)
		}
		if !slices.Equal(res.OfferedPerSecond, []int{4, 8, 4, 4}) {
			t.Errorf("%s: offered per second %v, want [4 8 4 4]", res.Name, res.OfferedPerSecond)
		}
	}
	if !slices.Equal(names, []string{"token-bucket", "fixed-window", "sliding-window", "pacer"}) {
		t.Errorf("limiters %v", names)
	}
	q := r.Results[3].Queue
	// Delays of the four sent: 0, .75, 1.5, 2.25 s; 16 still waiting.
	if q == nil || q.QueuedAtEnd != 16 || q.DelayP50 != 750*time.Millisecond || q.DelayP99 != 2250*time.Millisecond || q.DelayMax != 2250*time.Millisecond {
		t.Errorf("pacer's queue %+v, want p50 750ms, p99 and max 2.25s, 16 queued at the end", q)
	}
}

func TestLevelSamples(t *testing.T) {
	r, err := Run(tinyConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range r.Results {
		l := res.Level
		if l.Step != 100*time.Millisecond || len(l.Values) != 41 || l.Label == "" {
			t.Fatalf("%s: level %q every %v, %d samples; want a label and 41 samples 100 ms apart over 4 s", res.Name, l.Label, l.Step, len(l.Values))
		}
	}
	bucket, fixed, pacer := r.Results[0].Level, r.Results[1].Level, r.Results[3].Level
	// Just before the first request the bucket is full; just before the
	// one at 1 s, it has refilled to exactly one token.
	if bucket.Values[0] != 2 || bucket.Values[10] != 1 || bucket.Limit != 2 {
		t.Errorf("bucket level at 0 s, 1 s = %v, %v (limit %v); want 2, 1 (limit 2)", bucket.Values[0], bucket.Values[10], bucket.Limit)
	}
	// The fixed window has counted 4 by 1 s and starts again at 2 s.
	if fixed.Values[10] != 4 || fixed.Values[20] != 0 || fixed.Limit != 4 {
		t.Errorf("fixed window level at 1 s, 2 s = %v, %v (limit %v); want 4, 0 (limit 4)", fixed.Values[10], fixed.Values[20], fixed.Limit)
	}
	// Pacer's queue: just before 1 s, .25, .5 and .75 wait.
	if pacer.Values[10] != 3 {
		t.Errorf("pacer's queue at 1 s = %v, want 3", pacer.Values[10])
	}
}

func TestSharedLimitSplitsByClient(t *testing.T) {
	c := tinyConfig()
	c.Clients = 2
	r, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range r.Results {
		var sum ClientResult
		for _, cl := range res.Clients {
			sum.Offered += cl.Offered
			sum.Allowed += cl.Allowed
			sum.Rejected += cl.Rejected
			sum.Queued += cl.Queued
		}
		queued := 0
		if res.Queue != nil {
			queued = res.Queue.QueuedAtEnd
		}
		if len(res.Clients) != 2 || sum != (ClientResult{res.Offered, res.Allowed, res.Rejected, queued}) {
			t.Errorf("%s: clients %+v do not add up to the total %d/%d/%d/%d", res.Name, res.Clients, res.Offered, res.Allowed, res.Rejected, queued)
		}
		if res.Offered != 40 || res.Clients[0].Offered != 20 {
			t.Errorf("%s: offered %d (client 0: %d), want 40 (20)", res.Name, res.Offered, res.Clients[0].Offered)
		}
	}
	// The clients take turns, client 0 at 0, client 1 at 0.125 s, …: the
	// fixed window of 4 per 2 s allows the first four of each window, two
	// of each client's.
	if fixed := r.Results[1]; fixed.Clients[0].Allowed != 4 || fixed.Clients[1].Allowed != 4 {
		t.Errorf("fixed window per client %+v, want 4 allowed each", fixed.Clients)
	}
}
