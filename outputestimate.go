package pacer

import (
	"maps"
	"math/bits"
	"sync"
	"sync/atomic"
)

// How a Transport learns what a model's calls produce, so that a budget
// reserves what a call will likely cost instead of its worst case.
//
// A call's worst case is its max_tokens of output: a ceiling the caller
// sets for safety, often ten times what the model writes. Reserving it
// makes a fleet's calls in flight hold far more of a budget than they will
// spend, and refuse calls the budget could pay for. So each metered call
// reserves min(its worst case, the 99th percentile of the output of the
// model's recent calls), once the model has outputMinSamples settled calls;
// before that, its worst case. Settlement charges whatever the call cost
// beyond its reservation, and the admission still requires the call's worst
// case to fit what the budget has left (see Budget), so the learned figure
// changes how much calls in flight hold, not what one call may spend.
//
// The 99th percentile, not the 95th: a call that produces more than its
// reservation is settled up after the fact, and the calls in flight when a
// budget runs out may each overshoot by that much; at p99 one call in a
// hundred does, at p95 one in twenty, and the two percentiles of an LLM's
// answer lengths are close beside the gap to max_tokens.
const (
	outputPercentile = 0.99
	// outputMinSamples settled calls of a model before its percentile is
	// used. The nearest-rank 99th percentile of fewer than 100 samples is
	// their largest, so the first estimates are the longest answer seen.
	outputMinSamples = 50
	// outputHalfWindow: the estimate is over the last 256 to 512 settled
	// calls of the model. It follows a model whose answers grow within a
	// few calls (six long ones in 512 move the 99th percentile) and one
	// whose answers shrink within 512.
	outputHalfWindow = 256
	// outputMaxModels bounds the models learned per Transport; a model
	// beyond them reserves its worst case.
	outputMaxModels = 256
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

// An outputSketch holds the output of a model's last calls in fixed memory:
// two histograms of up to outputHalfWindow calls, the older dropped when
// the newer fills.
type outputSketch struct {
	mu         sync.Mutex
	cur, prev  [sketchBuckets]uint16
	nCur, nPrv int
	// estimate is the percentile of both histograms, or -1 while they hold
	// fewer than outputMinSamples calls. Read without the lock.
	estimate atomic.Int64
}

func newOutputSketch() *outputSketch {
	s := &outputSketch{}
	s.estimate.Store(-1)
	return s
}

func (s *outputSketch) observe(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nCur == outputHalfWindow {
		s.prev, s.nPrv = s.cur, s.nCur
		s.cur, s.nCur = [sketchBuckets]uint16{}, 0
	}
	s.cur[sketchIndex(n)]++
	s.nCur++
	total := s.nCur + s.nPrv
	if total < outputMinSamples {
		return
	}
	// Nearest rank: the smallest bucket that holds at least p of the calls.
	rank := int(outputPercentile*float64(total) + 0.999999)
	seen := 0
	for i := range s.cur {
		if seen += int(s.cur[i]) + int(s.prev[i]); seen >= rank {
			s.estimate.Store(sketchCeil(i))
			return
		}
	}
}

// outputLearner holds the sketches of a Transport's models.
type outputLearner struct {
	mu     sync.Mutex // serializes additions to models
	models atomic.Pointer[map[string]*outputSketch]
}

// estimate returns the learned output estimate of model's calls, or false
// while there is none. It does not lock or allocate: the map of models is
// replaced, never changed.
func (l *outputLearner) estimate(model string) (int64, bool) {
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

// observe records that a call to model produced n output tokens.
func (l *outputLearner) observe(model string, n int64) {
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
	var s *outputSketch
	old := l.models.Load()
	if old != nil {
		s = (*old)[model]
	}
	if s == nil {
		if old != nil && len(*old) >= outputMaxModels {
			l.mu.Unlock()
			return
		}
		m := make(map[string]*outputSketch, 1+lenOf(old))
		if old != nil {
			maps.Copy(m, *old)
		}
		s = newOutputSketch()
		m[model] = s
		l.models.Store(&m)
	}
	l.mu.Unlock()
	s.observe(n)
}

func lenOf(m *map[string]*outputSketch) int {
	if m == nil {
		return 0
	}
	return len(*m)
}
