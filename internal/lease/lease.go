package lease

import (
	"context"
	"sync"
	"time"

	"github.com/pacer-go/pacer/store"
)

// Config configures New.
type Config struct {
	// Size is the lease, in units beyond a request's cost: fixed, or the
	// largest an adaptive lease grows to.
	Size int
	// Adaptive starts each bucket's lease at one unit, doubles it when a
	// lease is spent in time and halves it when one expires unspent.
	Adaptive bool
	// MaxAge is how long leased tokens may be spent; DefaultMaxAge if zero.
	MaxAge time.Duration
}

// DefaultMaxAge is how long leased tokens may be spent unless configured.
const DefaultMaxAge = time.Second

// A Source is the store a lease takes from. It settles a call's cost after
// the fact (store.Adjuster), as every store of pacer's does.
type Source interface {
	store.Store
	store.Adjuster
}

// Store is a store.Store and store.Adjuster that takes tokens from its
// Source in leases and spends them locally. It is safe for concurrent use.
type Store struct {
	src Source
	cfg Config

	mu     sync.Mutex
	leases map[key]*lease
}

// Leases are kept per bucket and per floor: tokens taken while leaving one
// workload's reserve must not be spent by a workload that has to leave more.
type key struct {
	scope, key string
	floor      float64
}

type lease struct {
	tokens float64
	taken  time.Time // when the tokens were leased
	size   float64   // units to lease beyond the cost next time
}

// New returns a Store that takes from s in leases as cfg says.
func New(s Source, cfg Config) *Store {
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultMaxAge
	}
	return &Store{src: s, cfg: cfg, leases: make(map[key]*lease)}
}

func keyOf(d *store.Demand) key { return key{d.Scope, d.Key, d.Floor} }

// Take implements store.Store: from the local leases if they hold every
// demand's cost, else from the Source, with a new lease on top where there
// is room.
//
// It reports no running total (store.Decision.Taken): the Source counts
// what the fleet leased, not what it spent, and a call spent from a lease
// asks nothing of it. A fleet that leases paces by remaining counts as one
// whose store keeps no total.
func (l *Store) Take(ctx context.Context, now time.Time, demands []store.Demand) (store.Decision, error) {
	dec, err := l.take(ctx, now, demands)
	dec.Taken = 0
	return dec, err
}

func (l *Store) take(ctx context.Context, now time.Time, demands []store.Demand) (store.Decision, error) {
	for i := range demands {
		if demands[i].Window > 0 && demands[i].Cost > 0 {
			return l.src.Take(ctx, now, demands)
		}
	}
	if l.takeLocal(now, demands) {
		return store.Decision{OK: true}, nil
	}
	extra := l.extras(now, demands)
	if extra != nil {
		asked := make([]store.Demand, len(demands))
		for i, d := range demands {
			d.Cost += extra[i]
			asked[i] = d
		}
		dec, err := l.src.Take(ctx, now, asked)
		if err != nil {
			return dec, err
		}
		if dec.OK {
			l.addLeases(now, demands, extra)
			return dec, nil
		}
	}
	// No room for a lease: take just the cost, and learn the wait.
	return l.src.Take(ctx, now, demands)
}

// takeLocal spends every demand's cost from fresh leases, if they all hold it.
func (l *Store) takeLocal(now time.Time, demands []store.Demand) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range demands {
		d := &demands[i]
		if d.Cost <= 0 {
			continue
		}
		le := l.leases[keyOf(d)]
		if le == nil || le.tokens < d.Cost || now.Sub(le.taken) >= l.cfg.MaxAge {
			return false
		}
	}
	for i := range demands {
		if d := &demands[i]; d.Cost > 0 {
			l.leases[keyOf(d)].tokens -= d.Cost
		}
	}
	return true
}

// extras returns how much to lease on top of each demand's cost, adapting
// the sizes to how the last leases went; nil if nothing.
func (l *Store) extras(now time.Time, demands []store.Demand) []float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var extra []float64
	for i := range demands {
		d := &demands[i]
		if d.Cost <= 0 {
			continue
		}
		k := keyOf(d)
		le := l.leases[k]
		if le == nil {
			le = &lease{size: float64(l.cfg.Size)}
			if l.cfg.Adaptive {
				le.size = 1
			}
			l.leases[k] = le
		} else if l.cfg.Adaptive && !le.taken.IsZero() {
			if now.Sub(le.taken) >= l.cfg.MaxAge && le.tokens >= 1 {
				le.size = max(1, le.size/2) // expired unspent: lease less
			} else if le.tokens < d.Cost {
				le.size = min(float64(l.cfg.Size), 2*le.size) // spent in time: lease more
			}
		}
		// Never more than the bucket can give beyond the cost and floor.
		e := min(le.size, d.Burst-d.Cost-d.Floor)
		if e >= 1 {
			if extra == nil {
				extra = make([]float64, len(demands))
			}
			extra[i] = e
		}
	}
	return extra
}

// addLeases records the leased extras; what is left of an expired lease is
// dropped.
func (l *Store) addLeases(now time.Time, demands []store.Demand, extra []float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range demands {
		if extra[i] <= 0 {
			continue
		}
		le := l.leases[keyOf(&demands[i])]
		if now.Sub(le.taken) >= l.cfg.MaxAge {
			le.tokens = 0
		}
		le.tokens += extra[i]
		le.taken = now
	}
	l.sweep(now)
}

// sweep forgets expired leases once the map has grown, so that keys seen
// once do not stay.
func (l *Store) sweep(now time.Time) {
	if len(l.leases) < 1024 {
		return
	}
	for k, le := range l.leases {
		if now.Sub(le.taken) >= l.cfg.MaxAge {
			delete(l.leases, k)
		}
	}
}

// Refund implements store.Store. Tokens go back to a fresh lease of their
// bucket, to be spent here, or else to the Source.
func (l *Store) Refund(ctx context.Context, now time.Time, demands []store.Demand) error {
	var rest []store.Demand
	l.mu.Lock()
	for i := range demands {
		d := &demands[i]
		if d.Cost <= 0 {
			continue
		}
		if le := l.leases[keyOf(d)]; le != nil && d.Window <= 0 && now.Sub(le.taken) < l.cfg.MaxAge {
			le.tokens += d.Cost
			continue
		}
		rest = append(rest, *d)
	}
	l.mu.Unlock()
	if len(rest) == 0 {
		return nil
	}
	return l.src.Refund(ctx, now, rest)
}

// Clamp implements store.Store. The provider says there are fewer tokens
// than believed: the local leases of the bucket are dropped too.
func (l *Store) Clamp(ctx context.Context, now time.Time, d store.Demand, tokens float64) error {
	l.mu.Lock()
	for k, le := range l.leases {
		if k.scope == d.Scope && k.key == d.Key {
			le.tokens = 0
		}
	}
	l.mu.Unlock()
	return l.src.Clamp(ctx, now, d, tokens)
}

// Adjust implements store.Adjuster: a settlement goes to the Source, whose
// bucket the call's tokens came from; a lease holds what is not yet spent.
func (l *Store) Adjust(ctx context.Context, now time.Time, demands []store.Demand) error {
	return l.src.Adjust(ctx, now, demands)
}
