package pacer

// A pool's members change state (out, parked, back) on what their answers
// say, and at runtime on what the caller says (AddMember, RemoveMember,
// ParkMember, PutBack). With store.Policy.LimitSync, each change is the
// fleet's: published in the store as a record under the member's name,
// which every instance applies at its next read, as it applies a limit.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/pool"
)

// AddMember adds m to the Transport's pool: it takes calls from the next
// one on, paced by its own buckets (new, and full) of the pool's Scopes and
// by m.Scopes, which must be declared. With store.Policy.LimitSync it also
// puts a member of that name back in rotation on every instance of the
// fleet that has one (a credential replaced, say), as PutBack does. An
// error says what is wrong and adds nothing: a Transport without a pool, a
// member that fails pool.Config's checks, or a name the pool already has.
func (t *Transport) AddMember(m pool.Member) error {
	p := t.pool
	if p == nil {
		return errors.New("pacer: AddMember: the Transport has no pool; declare one with WithPool")
	}
	if err := (pool.Config{Members: []pool.Member{m}}).Validate(); err != nil {
		return fmt.Errorf("pacer: AddMember: %w", err)
	}
	pm, errs := t.newMember(p, m)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("pacer: AddMember: %w", err)
	}
	p.mu.Lock()
	old := p.members.Load()
	if p.find(m.Name) != nil {
		p.mu.Unlock()
		return fmt.Errorf("pacer: AddMember: the pool has a member named %q already; names are unique (RemoveMember it first to replace it)", m.Name)
	}
	for _, cs := range pm.own {
		// The scope's buckets would change their Group (a Cluster's hash
		// tag), and so their keys, under the member that has them.
		if by, ok := old.ownedBy[cs]; ok && by != m.Name {
			p.mu.Unlock()
			return fmt.Errorf("pacer: AddMember: member %q's scope %q is another member's; a member added at runtime needs scopes of its own (declare one it shares at New)", m.Name, cs.Name)
		}
		if slices.Contains(p.shared, cs) {
			p.mu.Unlock()
			return fmt.Errorf("pacer: AddMember: member %q's scope %q is the pool's SharedQuota, which every member charges already", m.Name, cs.Name)
		}
	}
	p.members.Store(old.with(pm, p.shared))
	p.mu.Unlock()
	return t.publishMember(pm, memberRecord{state: pool.Ready})
}

// RemoveMember takes the member named name out of the Transport's pool:
// calls in flight through it end as they would, and no new call goes to
// it. With store.Policy.LimitSync, every other instance of the fleet stops
// sending through it too (its Stats show it pool.Removed) until an
// AddMember or a PutBack of that name on any instance. A name not in the
// pool is an error.
func (t *Transport) RemoveMember(name string) error {
	p := t.pool
	if p == nil {
		return errors.New("pacer: RemoveMember: the Transport has no pool; declare one with WithPool")
	}
	p.mu.Lock()
	old := p.members.Load()
	i := slices.IndexFunc(old.list, func(m *poolMember) bool { return m.Name == name })
	if i < 0 {
		p.mu.Unlock()
		return fmt.Errorf("pacer: RemoveMember: the pool has no member named %q", name)
	}
	m := old.list[i]
	p.members.Store(old.without(i))
	p.mu.Unlock()
	return t.publishMember(m, memberRecord{state: pool.Removed})
}

// ParkMember keeps calls off the member named name until until, as a spent
// quota does (pool.Parked, an observe.EventMemberParked): after until, the
// next call probes it. It is for what the provider does not say in an
// answer: a key being rotated, a quota known to be spent elsewhere. With
// store.Policy.LimitSync, the member is parked on every instance of the
// fleet. A name not in the pool, or an until not after now, is an error.
func (t *Transport) ParkMember(name string, until time.Time) error {
	m, err := t.member("ParkMember", name)
	if err != nil {
		return err
	}
	if !until.After(t.clock.Now()) {
		return fmt.Errorf("pacer: ParkMember: until (%v) is not after now; give a time to come", until)
	}
	m.park(t, 0, until, parkedWhy(0))
	return nil
}

// PutBack puts a pool member back in rotation: one out after a 401 (its
// credential fixed), one parked before its reset, or one another instance
// removed. With store.Policy.LimitSync, it is back on every instance of the
// fleet. It is safe for concurrent use; a name not in the pool is an
// error, and so is a failure to publish it to the fleet (it is back here
// all the same).
func (t *Transport) PutBack(member string) error {
	m, err := t.member("PutBack", member)
	if err != nil {
		return err
	}
	m.freeAt.Store(0)
	m.clear(t, "")
	return t.publishMember(m, memberRecord{state: pool.Ready})
}

// member is the pool's member named name, or the error that says why there
// is none, for the method named by.
func (t *Transport) member(by, name string) (*poolMember, error) {
	if t.pool == nil {
		return nil, fmt.Errorf("pacer: %s: the Transport has no pool; declare one with WithPool", by)
	}
	if m := t.pool.find(name); m != nil {
		return m, nil
	}
	return nil, fmt.Errorf("pacer: %s: the pool has no member named %q", by, name)
}

// takeOut takes m out of rotation after a 401, saying so once, and tells
// the fleet.
func (m *poolMember) takeOut(t *Transport) {
	if m.setOut(t, "it answered 401 Unauthorized: its credential was refused", "") {
		t.log.Warn("pacer: a pool member answered 401 and is out of rotation until put back (Transport.PutBack)", "member", m.Name)
		t.tellFleet(m, memberRecord{state: pool.Out, status: http.StatusUnauthorized})
	}
}

// setOut marks m out of rotation and reports whether it was not already,
// emitting an EventMemberOut with origin.
func (m *poolMember) setOut(t *Transport, why, origin string) bool {
	if !m.out.CompareAndSwap(false, true) {
		return false
	}
	m.why.Store(&why)
	t.emit(observe.Event{Kind: observe.EventMemberOut, Member: m.Name, Status: http.StatusUnauthorized, Why: why, Origin: origin})
	return true
}

// park keeps calls off m until until, when a call probes it, and tells the
// fleet. The calls in flight when its quota ran out each meet the refusal:
// the first parks it and says so; the others only move the end later, if
// theirs is.
func (m *poolMember) park(t *Transport, status int, until time.Time, why string) {
	was, later := m.parkUntil(t, status, until, why, "")
	if !later {
		return
	}
	if !was {
		t.log.Info("pacer: a pool member is parked", "member", m.Name, "until", until.UTC().Format(time.RFC3339), "why", why)
	}
	// A later end is published too: an instance that reads the record
	// after the first end was published would otherwise probe the member
	// while this one still holds it parked.
	t.tellFleet(m, memberRecord{state: pool.Parked, until: until.UnixNano(), status: status})
}

// parkedWhy says why a member is parked: a spent quota the answer's status
// told, or, for status 0, the caller.
func parkedWhy(status int) string {
	if status == 0 {
		return "parked by the caller (Transport.ParkMember)"
	}
	return "its quota is spent (status " + strconv.Itoa(status) + ")"
}

// parkUntil parks m until until, or later if it is parked later already.
// It reports whether m was parked already, and whether until is the park's
// end now; when m was not parked, it emits an EventMemberParked with
// origin.
func (m *poolMember) parkUntil(t *Transport, status int, until time.Time, why, origin string) (was, later bool) {
	at := until.UnixNano()
	for {
		old := m.parkedUntil.Load()
		if old != 0 && old >= at {
			return true, false
		}
		if m.parkedUntil.CompareAndSwap(old, at) {
			if old != 0 {
				return true, true // parked already: said when it was
			}
			break
		}
	}
	m.why.Store(&why)
	t.emit(observe.Event{Kind: observe.EventMemberParked, Member: m.Name, Status: status, Wait: until.Sub(t.clock.Now()), Why: why, Origin: origin})
	return false, true
}

// back notes that m answered a call chosen at sent: a parked member it
// probed is back, here and, with LimitSync, on the fleet. A call chosen
// before the park ended is no probe: an answer to a call sent before the
// quota ran out, or before another instance parked the member, says
// nothing of the quota now.
func (m *poolMember) back(t *Transport, ctx context.Context, sent time.Time) {
	if p := m.parkedUntil.Load(); p != 0 && sent.UnixNano() >= p && m.parkedUntil.CompareAndSwap(p, 0) {
		m.why.Store(nil)
		t.emit(observe.Event{Kind: observe.EventMemberUnparked, Member: m.Name, Workload: workloadName(t, ctx)})
		t.tellFleet(m, memberRecord{state: pool.Ready})
	}
}

// clear puts m back in rotation: not out, parked or removed. It emits one
// EventMemberUnparked with origin when m was any of those.
func (m *poolMember) clear(t *Transport, origin string) {
	was := m.out.Swap(false)
	was = m.removed.Swap(false) || was
	was = m.parkedUntil.Swap(0) != 0 || was
	m.why.Store(nil)
	if was {
		t.emit(observe.Event{Kind: observe.EventMemberUnparked, Member: m.Name, Origin: origin})
	}
}

// The fleet's record of a member.
//
// A member's state is published with store.LimitStore.PublishPace under
// the scope memberRecordPrefix+name, a name no declared scope can have
// (reservedPrefix), as "member <state> <until> <status>": the state as
// pool.State spells it, until in Unix nanoseconds (0 unless parked), and
// the status that caused it (0 when none).

const memberRecordPrefix = reservedPrefix + "member:"

// memberRecord is a member's state as the fleet's record holds it.
type memberRecord struct {
	state  pool.State
	until  int64 // Unix nanoseconds; parked only
	status int
}

func (r memberRecord) String() string {
	return "member " + string(r.state) + " " + strconv.FormatInt(r.until, 10) + " " + strconv.Itoa(r.status)
}

// parseMemberRecord reads a record String wrote; ok is false for anything
// else, which a later version of pacer may write.
func parseMemberRecord(s string) (r memberRecord, ok bool) {
	f := strings.Fields(s)
	if len(f) != 4 || f[0] != "member" {
		return r, false
	}
	r.state = pool.State(f[1])
	switch r.state {
	case pool.Ready, pool.Parked, pool.Out, pool.Removed:
	default:
		return r, false
	}
	until, err1 := strconv.ParseInt(f[2], 10, 64)
	status, err2 := strconv.Atoi(f[3])
	if err1 != nil || err2 != nil || until < 0 || status < 0 || r.state == pool.Parked && until == 0 {
		return r, false
	}
	r.until, r.status = until, status
	return r, true
}

// isMemberRecord reports whether a published scope is a member's record.
func isMemberRecord(scope string) bool { return strings.HasPrefix(scope, memberRecordPrefix) }

// publishMember publishes r as m's state for the fleet, when the Transport
// syncs limits: one store round trip, bounded by the store timeout. A
// failure is returned; m's state here stands.
func (t *Transport) publishMember(m *poolMember, r memberRecord) error {
	ls := t.limitSync
	if ls == nil {
		return nil
	}
	scope := memberRecordPrefix + m.Name
	v, err := t.publishRecord(scope, r.String())
	if err != nil {
		return fmt.Errorf("pacer: publishing pool member %q's state (%s) to the fleet: %w", m.Name, r.state, err)
	}
	ls.newPace(scope, v)
	return nil
}

// tellFleet publishes r as m's state, on a call's path, where a failure
// is reported (observe.EventStoreFailure) and the call goes on.
func (t *Transport) tellFleet(m *poolMember, r memberRecord) {
	if err := t.publishMember(m, r); err != nil {
		t.emit(observe.Event{Kind: observe.EventStoreFailure, Member: m.Name, Err: err})
	}
}

// applyMember applies a member's record another instance published. A
// member this Transport does not have is left alone: its record applies
// when AddMember adds it, at the read after. A record this version cannot
// read is logged and left.
func (t *Transport) applyMember(scope, rec string) {
	name := strings.TrimPrefix(scope, memberRecordPrefix)
	r, ok := parseMemberRecord(rec)
	if !ok {
		t.log.Warn("pacer: a pool member's record in the shared store that this version of pacer cannot read; left alone", "member", name, "record", rec)
		return
	}
	m := t.pool.find(name)
	if m == nil {
		return
	}
	const fleet = "another instance of the fleet: "
	switch r.state {
	case pool.Ready:
		m.clear(t, observe.OriginStore)
	case pool.Parked:
		if until := time.Unix(0, r.until); until.After(t.clock.Now()) {
			m.parkUntil(t, r.status, until, fleet+parkedWhy(r.status), observe.OriginStore)
		}
	case pool.Out:
		m.setOut(t, fleet+"it answered 401 Unauthorized: its credential was refused", observe.OriginStore)
	case pool.Removed:
		if !m.removed.Swap(true) {
			why := fleet + "it was removed from the pool (Transport.RemoveMember); AddMember or PutBack puts it back"
			m.why.Store(&why)
			t.emit(observe.Event{Kind: observe.EventMemberOut, Member: m.Name, Why: why, Origin: observe.OriginStore})
		}
	}
}
