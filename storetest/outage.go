package storetest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/store"
)

// Outage runs, in wall time, one Transport per store.Policy.OnFailure (fail
// open, fail closed, fall back to a quarter of the limit), each on its own
// store from newStore, all sending to one counting server on loopback. Mid
// run it calls stop, which must stop the stores' server, and later start,
// which must start it again and return once it serves (a cluster's nodes
// agree). It checks that no request outlives its context,
// that each policy holds while the server is down, and that the stores are
// used again once it is back.
//
// It takes about three seconds.
func Outage(t *testing.T, newStore func(t *testing.T) store.Store, stop, start func()) {
	const (
		rate       = 100 // a second, burst 10
		instances  = 4
		senders    = 4
		offerEvery = 5 * time.Millisecond // each sender's offered load: 200/s
		reqTimeout = time.Second
		storeLimit = 200 * time.Millisecond
		before     = 300 * time.Millisecond
		down       = 800 * time.Millisecond
		// Longer than the longest wait before a failed store is asked
		// again (2 s), so the store is surely back for the last 300 ms.
		after = 2500 * time.Millisecond
	)
	var mu sync.Mutex
	arrivals := map[string][]time.Time{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrivals[r.URL.Path] = append(arrivals[r.URL.Path], time.Now())
		mu.Unlock()
	}))
	defer srv.Close()

	policies := []struct {
		path   string
		policy store.Policy
	}{
		{"/open", store.Policy{OnFailure: store.FailOpen, Timeout: storeLimit}},
		{"/closed", store.Policy{OnFailure: store.FailClosed, Timeout: storeLimit}},
		{"/local", store.Policy{Instances: instances, Timeout: storeLimit}},
	}
	type result struct {
		path       string
		start, end time.Time
		err        error
	}
	// Every result is kept: a store that fails fast for seconds (a cluster
	// that is not writable until its nodes agree again) produces thousands,
	// and the last ones, after it is back, are the ones that matter.
	var rmu sync.Mutex
	var results []result
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, p := range policies {
		tr := pacer.New(srv.Client().Transport,
			pacer.WithLimit(pacer.Limit{Count: rate, Per: time.Second, Burst: rate / 10}), pacer.WithHeadroom(1),
			pacer.WithStore(newStore(t), p.policy))
		if err := tr.Err(); err != nil {
			t.Fatal(err)
		}
		for range senders {
			wg.Go(func() {
				tick := time.NewTicker(offerEvery)
				defer tick.Stop()
				for {
					select {
					case <-ctx.Done():
						return
					case <-tick.C:
					}
					rctx, rcancel := context.WithTimeout(ctx, reqTimeout)
					req, _ := http.NewRequestWithContext(rctx, "GET", srv.URL+p.path, nil)
					r := result{path: p.path, start: time.Now()}
					resp, err := tr.RoundTrip(req)
					r.end, r.err = time.Now(), err
					if err == nil {
						resp.Body.Close()
					}
					rcancel()
					rmu.Lock()
					results = append(results, r)
					rmu.Unlock()
				}
			})
		}
	}

	time.Sleep(before) // wall time is the point: the server's outage is real
	stop()
	stopped := time.Now()
	time.Sleep(down)
	restarting := time.Now()
	start()
	time.Sleep(after)
	cancel()
	wg.Wait()

	// Requests admitted just before the stop may land just after it.
	downFrom, downTo := stopped.Add(20*time.Millisecond), restarting
	downFor := downTo.Sub(downFrom).Seconds()
	settled := time.Now().Add(-300 * time.Millisecond) // the store is surely back
	var longest time.Duration
	type tally struct{ unavailable, lateUnavailable, lateOK, openFailedDown int }
	stats := map[string]*tally{}
	for _, p := range policies {
		stats[p.path] = &tally{}
	}
	for _, r := range results {
		if d := r.end.Sub(r.start); d > longest {
			longest = d
		}
		s := stats[r.path]
		if errors.Is(r.err, store.ErrUnavailable) {
			s.unavailable++
			if r.start.After(settled) {
				s.lateUnavailable++
			}
		}
		if r.err == nil && r.start.After(settled) {
			s.lateOK++
		}
		if r.err != nil && r.path != "/closed" && !errors.Is(r.err, context.Canceled) && !errors.Is(r.err, context.DeadlineExceeded) {
			t.Errorf("%s: unexpected error %v", r.path, r.err)
		}
		if r.err != nil && r.path == "/open" && r.start.After(downFrom) && r.end.Before(downTo) {
			s.openFailedDown++
		}
	}
	if longest > reqTimeout+200*time.Millisecond {
		t.Errorf("a request took %v; its context ended after %v", longest, reqTimeout)
	}
	count := func(path string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, at := range arrivals[path] {
			if at.After(downFrom) && at.Before(downTo) {
				n++
			}
		}
		return n
	}
	open, closed, local := count("/open"), count("/closed"), count("/local")
	t.Logf("while the store was down for %.2fs: fail open sent %d, fail closed %d (refused %d), fallback at 1/%d sent %d; longest request %v",
		downFor, open, closed, stats["/closed"].unavailable, instances, local, longest)
	// Fail open sends everything it is offered, which is far more than the
	// fallback's share.
	if s := stats["/open"]; s.openFailedDown != 0 {
		t.Errorf("fail open failed %d requests while the store was down", s.openFailedDown)
	}
	if share := rate/instances*downFor + rate/10/instances + 3; float64(open) <= 2*share {
		t.Errorf("fail open sent %d while the store was down, hardly more than a paced share (%.0f)", open, share)
	}
	if closed != 0 || stats["/closed"].unavailable == 0 {
		t.Errorf("fail closed sent %d and refused %d while the store was down; want 0 sent, some refused", closed, stats["/closed"].unavailable)
	}
	if share := rate/instances*downFor + rate/10/instances + 3; float64(local) > share {
		t.Errorf("the local fallback sent %d while the store was down, more than its share of %.1f", local, share)
	}
	if local == 0 {
		t.Error("the local fallback sent nothing while the store was down")
	}
	if s := stats["/closed"]; s.lateUnavailable != 0 || s.lateOK == 0 {
		t.Errorf("after the store came back, fail closed still refused %d and sent %d", s.lateUnavailable, s.lateOK)
	}
}
