package outputs

import (
	"maps"
	"math/bits"
	"sync"
	"sync/atomic"
)

const (
	percentile = 0.99
	// MinSamples settled calls of a model before its percentile is
	// used. The nearest-rank 99th percentile of fewer than 100 samples is
	// their largest, so the first estimates are the longest answer seen.
	MinSamples = 50
	// halfWindow: the estimate is over the last 256 to 512 settled
	// calls of the model. It follows a model whose answers grow within a
	// few calls (six long ones in 512 move the 99th percentile) and one
	// whose answers shrink within 512.
	halfWindow = 256
	// maxModels bounds the models learned per Learner; a model beyond
	// them has no estimate.
	maxModels = 256
)

// The sketch's buckets: an output below sketchExact tokens has a bucket of
// its own; above, each power of two is cut in 8, so a bucket's upper bound,
// which is what the estimate reports, is at most 12.5 % above any output in
// it. Outputs above sketchMax count as sketchMax.
const (
	sketchExact   = 16
	sketchSub     = 8 // buckets per power of two above sketchExact
	sketchMax     = 1<<24 - 1
	sketchBuckets = sketchExact + 20*sketchSub // 2^4 to 2^24
)

// sketchIndex returns the sketch bucket that counts an output of n tokens.
func sketchIndex(n int64) int {
	switch {
	case n <= 0:
		return 0
	case n < sketchExact:
		return int(n)
	case n > sketchMax:
		n = sketchMax
	}
	shift := bits.Len64(uint64(n)) - 4 // n>>shift is in [8, 16)
	return sketchExact + (shift-1)*sketchSub + int(n>>shift) - sketchSub
}

// sketchCeil returns the largest output sketch bucket i counts.
func sketchCeil(i int) int64 {
	if i < sketchExact {
		return int64(i)
	}
	shift := (i-sketchExact)/sketchSub + 1
	m := int64((i-sketchExact)%sketchSub + sketchSub)
	return (m+1)<<shift - 1
}

// A sketch holds the output of a model's last calls in fixed memory:
// two histograms of up to halfWindow calls, the older dropped when the
// newer fills.
type sketch struct {
	mu         sync.Mutex
	cur, prev  [sketchBuckets]uint16
	nCur, nPrv int
	// estimate is the percentile of both histograms, or -1 while they hold
	// fewer than MinSamples calls. Read without the lock.
	estimate atomic.Int64
}

func newSketch() *sketch {
	s := &sketch{}
	s.estimate.Store(-1)
	return s
}

func (s *sketch) observe(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nCur == halfWindow {
		s.prev, s.nPrv = s.cur, s.nCur
		s.cur, s.nCur = [sketchBuckets]uint16{}, 0
	}
	s.cur[sketchIndex(n)]++
	s.nCur++
	total := s.nCur + s.nPrv
	if total < MinSamples {
		return
	}
	// Nearest rank: the smallest bucket that holds at least p of the calls.
	rank := int(percentile*float64(total) + 0.999999)
	seen := 0
	for i := range s.cur {
		if seen += int(s.cur[i]) + int(s.prev[i]); seen >= rank {
			s.estimate.Store(sketchCeil(i))
			return
		}
	}
}

// A Learner holds the output sketches of one Transport's models.
type Learner struct {
	mu     sync.Mutex // serializes additions to models
	models atomic.Pointer[map[string]*sketch]
}

// Estimate returns the 99th percentile, rounded up by at most 12.5 %, of
// the output of model's recent calls, or false while there is none: fewer
// than MinSamples calls observed, or a model beyond the Learner's bound.
// It does not lock or allocate: the map of models is replaced, never
// changed.
func (l *Learner) Estimate(model string) (int64, bool) {
	if l == nil {
		return 0, false
	}
	m := l.models.Load()
	if m == nil {
		return 0, false
	}
	s := (*m)[model]
	if s == nil {
		return 0, false
	}
	n := s.estimate.Load()
	return n, n >= 0
}

// Observe records that a call to model produced n output tokens.
func (l *Learner) Observe(model string, n int64) {
	if l == nil {
		return
	}
	if m := l.models.Load(); m != nil {
		if s := (*m)[model]; s != nil {
			s.observe(n)
			return
		}
	}
	l.mu.Lock()
	var s *sketch
	old := l.models.Load()
	if old != nil {
		s = (*old)[model]
	}
	if s == nil {
		if old != nil && len(*old) >= maxModels {
			l.mu.Unlock()
			return
		}
		m := make(map[string]*sketch, 1+lenOf(old))
		if old != nil {
			maps.Copy(m, *old)
		}
		s = newSketch()
		m[model] = s
		l.models.Store(&m)
	}
	l.mu.Unlock()
	s.observe(n)
}

func lenOf(m *map[string]*sketch) int {
	if m == nil {
		return 0
	}
	return len(*m)
}
