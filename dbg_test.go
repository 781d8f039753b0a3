package pacer

import (
	"fmt"
	"io"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/observe"
)

func TestDbg(t *testing.T) {
	if os.Getenv("DBG") == "" {
		t.Skip()
	}
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		time.Sleep(348 * time.Millisecond)
		api := &bucketAPI{rate: 100, burst: 10}
		start := time.Now()
		obs := observe.Func(func(e observe.Event) {
			if e.Kind == observe.EventPaceChanged || e.Kind == observe.EventCooldownStarted {
				fmt.Printf("%8.3f %v rate=%.1f why=%s wait=%v\n", time.Since(start).Seconds(), e.Kind, e.Rate, e.Why, e.Wait)
			}
		})
		n := onLoopback
		if os.Getenv("DBG") == "rtt" {
			n = overTheInternet
		}
		tr := New(n.wrap(api), WithLogger(slogTo(io.Discard)), WithoutRetry(), WithLimit(PerSecond(200)), WithObserver(obs))
		s := tr.defaultScope.shared
		end := start.Add(5 * time.Second)
		go func() {
			for time.Now().Before(end) {
				time.Sleep(100 * time.Millisecond)
				r, b := s.pace()
				a, rj := api.counts("pacer", time.Now().Add(-100*time.Millisecond), time.Now())
				s.mu.Lock()
				sup := s.reports.supply
				s.mu.Unlock()
				tp := s.told.Load()
				tr := 0.0
				if tp != nil {
					tr = tp.rate
				}
				s.mu.Lock()
				rf, re := s.reports.refillAt, s.reports.refillEvery
				s.mu.Unlock()
				fmt.Printf("refill %v every %v  ", time.Unix(0, rf).Sub(start), re)
				fmt.Printf("%8.3f pace=%.1f burst=%.1f told=%.1f supply=%.1f learned=%v acc=%d rej=%d\n", time.Since(start).Seconds(), r, b, tr, sup, s.learned.Load() != nil, a*10, rj*10)
			}
		}()
		hammer(tr, n.callers, end)
	})
}
