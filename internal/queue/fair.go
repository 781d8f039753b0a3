package queue

import (
	"math/bits"
	"sync"
)

// Fair tags a workload's waiting calls for self-clocked fair queuing
// (Golestani's SCFQ): a call's tag is its virtual finish, cost/weight after
// the later of the workload's virtual time and its tenant's previous
// finish; the line serves the smallest tag first, and serving a call moves
// the virtual time to its tag. A tenant whose last finish is not after the
// virtual time is forgotten: its next call starts at the virtual time
// anyway. So what is remembered is the tenants with calls waiting, or
// served ahead of the others, whatever the number of tenants.
//
// Virtual times are exact (Tag): however long the process runs, two tags
// differ by what the calls between them cost. The zero Fair tags nothing
// until a call names a tenant. It is safe for concurrent use.
type Fair struct {
	mu     sync.Mutex
	active bool // a call named a tenant
	v      Tag  // the virtual time; starts at 1 so that 0 means untagged
	finish map[string]Tag
	looks  int
}

const (
	fairSweepFloor = 1024 // tenants remembered without sweeping
	fairSweepEvery = 16
	fairSweepBatch = 64
)

// A Tag is a virtual time of fair queuing: a count of tagUnit, in 128
// bits. Its sums neither round nor overflow: a float64 virtual time stops
// telling a light call's finish from the time it starts at once it has
// grown a few billion times larger than that call, which a long-running
// process's traffic reaches, while a Tag adding the largest step
// (tagStep) a billion times a second lasts a thousand years. The zero Tag
// is a call without a tenant's.
type Tag struct{ hi, lo uint64 }

// tagUnit is the resolution of a Tag, in units of cost at weight 1: the
// lightest step, one unit at weight 1000, is about a thousand of them, so
// that weights are told apart to a thousandth.
const tagUnit = 1.0 / (1 << 20)

// tagStep returns the virtual duration of a call of the cost at the
// weight: at least one unit, and at most 2^63 units (a cost of about 8.8
// billion at weight 1/1000; costs beyond it tie). A weight not positive,
// or so large that the step rounds to nothing, steps one unit.
func tagStep(cost, weight float64) uint64 {
	d := max(cost, 1) / weight / tagUnit
	switch {
	case !(weight > 0) || d < 1: // a weight the caller failed to clamp
		return 1
	case !(d < 1<<63): // NaN too, from a NaN cost
		return 1 << 63
	}
	return uint64(d)
}

func (a Tag) add(d uint64) Tag {
	lo, carry := bits.Add64(a.lo, d, 0)
	return Tag{a.hi + carry, lo}
}

func (a Tag) before(b Tag) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }

func (a Tag) isZero() bool { return a == Tag{} }

func laterOf(a, b Tag) Tag {
	if a.before(b) {
		return b
	}
	return a
}

// Tag returns the tag of a call of the tenant ("" for none) at the weight,
// which the caller clamps to its range, and the cost; the zero Tag while
// the workload has seen no tenant.
func (f *Fair) Tag(tenant string, weight, cost float64) Tag {
	named := tenant != ""
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.active {
		if !named {
			return Tag{}
		}
		f.active, f.v, f.finish = true, Tag{lo: 1}, make(map[string]Tag)
	}
	end := laterOf(f.v, f.finish[tenant]).add(tagStep(cost, weight))
	f.finish[tenant] = end
	if f.looks++; f.looks >= fairSweepEvery && len(f.finish) > fairSweepFloor {
		f.looks = 0
		looked := 0
		for k, end := range f.finish {
			if !f.v.before(end) {
				delete(f.finish, k)
			}
			if looked++; looked == fairSweepBatch {
				break
			}
		}
	}
	return end
}

// Served moves the virtual time to the tag of a call admitted from the
// queue.
func (f *Fair) Served(tag Tag) {
	if tag.isZero() {
		return
	}
	f.mu.Lock()
	f.v = laterOf(f.v, tag)
	f.mu.Unlock()
}
