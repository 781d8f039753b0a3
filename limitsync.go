package pacer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacer-go/pacer/internal/pace"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/store"
)

// limitSync is what a Transport keeps for store.Policy.LimitSync.
type limitSync struct {
	store    store.LimitStore
	interval time.Duration
	timeout  time.Duration
	next     atomic.Int64     // Unix nanoseconds of the next read
	mu       sync.Mutex       // held by the one call that reads
	read     atomic.Bool      // the first read is done, or failed
	readDone chan struct{}    // closed when read is set
	versions map[string]int64 // by scope, the version applied

	// By scope, the version of the pace record applied or published here;
	// under paceMu, which is never held across a round trip, so that a
	// refused call publishing its cut does not wait for a read.
	paceMu sync.Mutex
	paces  map[string]int64
}

// newPace reports whether version is a pace record of scope this
// Transport has neither applied nor published, and takes note of it.
func (ls *limitSync) newPace(scope string, version int64) bool {
	ls.paceMu.Lock()
	defer ls.paceMu.Unlock()
	if version <= ls.paces[scope] {
		return false
	}
	ls.paces[scope] = version
	return true
}

// markRead notes that the first read has ended, once.
func (ls *limitSync) markRead() {
	if !ls.read.Swap(true) {
		close(ls.readDone)
	}
}

// awaitFirstRead waits for the first read, which another call is making,
// to end: no longer than a read may take (the store timeout), nor than
// ctx lasts, so that a store that hangs past its timeout holds the first
// calls no longer than the store's Policy says.
func (t *Transport) awaitFirstRead(ctx context.Context) {
	ls := t.limitSync
	timer := t.clock.NewTimer(ls.timeout)
	defer timer.Stop()
	select {
	case <-ls.readDone:
	case <-timer.C():
	case <-ctx.Done():
	}
}

// syncLimits reads the published limits if interval has passed since the
// last read, and applies the newer ones. Only one call reads at a time;
// the others go on at once, except before the first read has ended: a new
// instance's first calls wait for it, so that none is sent at a limit the
// fleet has changed, or through a pool member it has parked.
func (t *Transport) syncLimits(ctx context.Context) {
	ls := t.limitSync
	now := t.clock.Now().UnixNano()
	if now < ls.next.Load() && ls.read.Load() {
		return // between reads, every call goes on without the lock
	}
	if !ls.mu.TryLock() {
		if !ls.read.Load() {
			t.awaitFirstRead(ctx)
		}
		return
	}
	defer ls.mu.Unlock()
	defer ls.markRead()
	if now < ls.next.Load() {
		return
	}
	ls.next.Store(now + int64(ls.interval))
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ls.timeout)
	defer cancel()
	published, err := ls.store.PublishedLimits(ctx)
	if err != nil {
		t.emit(observe.Event{Kind: observe.EventStoreFailure, Err: fmt.Errorf("pacer: reading the fleet's limits: %w", err)})
		return
	}
	for scope, p := range published {
		cs := t.scopes[scope]
		if cs == nil {
			if p.PaceVersion > 0 && t.pool != nil && isMemberRecord(scope) && ls.newPace(scope, p.PaceVersion) {
				t.applyMember(scope, p.Pace) // poolmembers.go
			}
			continue
		}
		if p.Version > ls.versions[scope] {
			ls.versions[scope] = p.Version
			if l := Limit(p.Limit); cs.configured.Load().limit != l && l.validate() == nil {
				t.applyLimit(cs, l, observe.OriginStore)
			}
		}
		if p.PaceVersion > 0 && ls.newPace(scope, p.PaceVersion) {
			t.applyPace(cs, p.Pace)
		}
	}
}

// applyPace applies a pace record another instance published: a cut,
// which the scope's bucket climbs back from as that instance does (see
// bucket.adopt). A record this version cannot read is logged and left.
func (t *Transport) applyPace(cs *configuredScope, rec string) {
	r, ok := pace.ParseRecord(rec, pace.MaxRecordedRecovery)
	if !ok {
		t.log.Warn("pacer: a pace record in the shared store that this version of pacer cannot read; left alone", "scope", cs.Name, "record", rec)
		return
	}
	s := cs.shared
	if !s.adopt(r, t.clock.Now(), t.maxWait) {
		return
	}
	if len(t.observers) > 0 {
		rate, _ := s.pace()
		t.emit(observe.Event{Kind: observe.EventPaceChanged, Scope: cs.Name, Rate: rate, Origin: observe.OriginStore,
			Why: "another instance of the fleet was refused a call: its cut, read from the store"})
	}
}

// publishCut publishes the cut a refusal just made on s, when the Transport
// syncs limits, so that every instance sharing the store climbs back on
// the same curve instead of being refused in turn: one store round trip,
// bounded by the store timeout, on the refused call's path, and none while
// the store is known to be down. A failure is reported (observe.EventStoreFailure)
// and the call goes on. Only a scope's
// shared bucket is published: a keyed bucket's cut stays this process's.
func (c *call) publishCut(s *bucket) {
	t := c.t
	ls := t.limitSync
	r := s.climb()
	if ls == nil || s.key != "" || r == nil {
		return
	}
	v, err := t.publishRecord(s.scope.Name, r.Record())
	if err != nil {
		t.emit(observe.Event{Kind: observe.EventStoreFailure, Scope: s.scope.Name, Workload: c.workload.name,
			Err: fmt.Errorf("pacer: publishing scope %q's cut to the fleet: %w", s.scope.Name, err)})
		return
	}
	ls.newPace(s.scope.Name, v)
}

// publishRecord publishes rec as scope's pace record, in one store round
// trip bounded by the store timeout, and none while the store is known to
// be down; it returns the record's version.
func (t *Transport) publishRecord(scope, rec string) (v int64, err error) {
	publish := func(ctx context.Context) (err error) {
		v, err = t.limitSync.store.PublishPace(ctx, scope, rec)
		return err
	}
	switch g := t.guard; {
	case g == nil: // the in-memory store: no round trip
		err = publish(context.Background())
	case g.IsDown():
		err = g.Unavailable() // not one more wait on a store known to be down
	default:
		err = g.Bounded(context.Background(), publish) // bounded even for a store that ignores its context
	}
	return v, err
}

// publishLimit publishes l for the fleet, when the Transport syncs limits.
func (t *Transport) publishLimit(scope string, l Limit) error {
	ls := t.limitSync
	if ls == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), ls.timeout)
	defer cancel()
	v, err := ls.store.PublishLimit(ctx, scope, store.Limit(l))
	if err != nil {
		return fmt.Errorf("pacer: SetLimit: publishing scope %q's limit to the fleet: %w", scope, err)
	}
	ls.mu.Lock()
	ls.versions[scope] = max(ls.versions[scope], v)
	ls.mu.Unlock()
	return nil
}
