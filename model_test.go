package pacer

import (
	"sync"
	"testing"

	"github.com/pacer-go/pacer/internal/pace"
)

// A bucket's model is replaced whole, without a lock: changes made at once
// by many goroutines are each kept, none lost to another's copy.
func TestAmendLosesNoChange(t *testing.T) {
	tr := New(nil)
	s := tr.defaultScope.shared
	const goroutines, each = 8, 500
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				s.amend(func(m pace.Model) (pace.Model, bool) {
					m.Live.Rate++
					m.Live.Until = 1
					return m, true
				})
			}
		}()
	}
	wg.Wait()
	if got := s.model.Load().Live.Rate; got != goroutines*each {
		t.Fatalf("%v changes kept of %d", got, goroutines*each)
	}
	// A model that says nothing is none: the hot path reads no clock.
	s.amend(func(pace.Model) (pace.Model, bool) { return pace.Model{}, true })
	if m := s.model.Load(); m != nil {
		t.Fatalf("an empty model kept as %+v, want none", m)
	}
}
