package pacer

// A pool of members behind one Transport (WithPool, vocabulary in package
// pool): each attempt goes through one member, chosen here, and a member's
// faults are its own. Nothing here runs for a Transport without a pool.

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pacer-go/pacer/classify"
	"github.com/pacer-go/pacer/internal/retryrule"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/pool"
	"github.com/pacer-go/pacer/ratelimitheader"
	"github.com/pacer-go/pacer/retry"
	"github.com/pacer-go/pacer/store"
)

// WithPool sends every request through one member of a pool (see
// pool.Config): several keys, deployments or sender numbers, each paced by
// its own scopes and its own responses' headers, with SharedQuota scopes
// every member charges.
//
// Each attempt goes to the member that can admit it soonest; when none can
// before the context's deadline, RoundTrip fails at once with a
// *ThrottledError whose RetryAfter is the earliest any member frees. A
// member's faults are its own: a Retry-After or a cut cools that member
// alone; a 401 takes it out of rotation (an EventMemberOut, a log line,
// Stats) and the call goes to another member, whatever its method, since a
// 401 was never processed, as does a connection that never left; a 402 or a
// spent quota parks the member until its reset, or for the maximum wait,
// after which a call probes it; a 429 or 503 goes to another member only
// when the call is safe to send twice (an idempotent method, or an
// Idempotency-Key header). Any other answer, a 403 included, is the
// caller's. A body without GetBody is sent once, to one member.
//
// With a pool, another member is the retry: the retry policy (WithRetry)
// and WithIdempotencyKey are not applied on top (the policy's
// IdempotencyHeaders still say what is safe to send twice), and a call
// makes at most one attempt per member.
//
// Members change at runtime: Transport.AddMember, RemoveMember,
// ParkMember and PutBack (poolmembers.go). A fleet sharing a store shares
// each member's buckets; with store.Policy.LimitSync it also shares each
// member's state: a member one instance takes out, parks, removes or puts
// back is so on every instance at its next read, a new instance's first
// calls included. A member is known by its name on every instance.
//
// It is safe for concurrent use, as the Transport is; Stats().Members
// describes the members.
//
// The caller's request is never modified; the member is applied to the
// clone that is sent, after admission, so routes see the request without it.
func WithPool(p pool.Config) Option {
	return func(c *config) {
		p.Members = slices.Clone(p.Members)
		c.pool = &p
	}
}

// poolState is a Transport's pool.
type poolState struct {
	// members is replaced whole, never changed in place, so that a call
	// reads it without a lock while AddMember and RemoveMember change it
	// (under mu).
	members  atomic.Pointer[memberSet]
	mu       sync.Mutex
	keyed    []*configuredScope        // the pool's Scopes
	keyedSet map[*configuredScope]bool // the same, for groupOf
	shared   []*configuredScope        // the pool's SharedQuota
	affinity func(*http.Request) string
	turn     atomic.Uint32 // spreads ties
}

// A memberSet is the pool's members at one time, and what groupOf reads of
// every member the pool has had: their names, and each scope of a member's
// own that is that member's alone. A name or an owner, once seen, stays,
// so that a member's buckets keep their Group (a Cluster's hash tag) when
// it is removed and added back.
type memberSet struct {
	list    []*poolMember
	names   map[string]bool
	ownedBy map[*configuredScope]string // "": listed by two members, or shared
}

// add adds pm to s, which no call reads yet.
func (s *memberSet) add(pm *poolMember, shared []*configuredScope) {
	s.list = append(s.list, pm)
	s.names[pm.Name] = true
	for _, cs := range pm.own {
		// A scope two members list, or a shared one, is no member's alone.
		if by, ok := s.ownedBy[cs]; ok && by != pm.Name || slices.Contains(shared, cs) {
			s.ownedBy[cs] = ""
		} else {
			s.ownedBy[cs] = pm.Name
		}
	}
}

// with is s and pm, a copy; s is left as it is.
func (s *memberSet) with(pm *poolMember, shared []*configuredScope) *memberSet {
	c := &memberSet{list: slices.Clone(s.list), names: maps.Clone(s.names), ownedBy: maps.Clone(s.ownedBy)}
	c.add(pm, shared)
	return c
}

// without is s less the member at i, a copy; what groupOf reads stays.
func (s *memberSet) without(i int) *memberSet {
	return &memberSet{list: slices.Delete(slices.Clone(s.list), i, i+1), names: s.names, ownedBy: s.ownedBy}
}

// poolMember is one member and what the Transport knows of it.
type poolMember struct {
	pool.Member
	keyed  []*configuredScope // the pool's Scopes: the member is a key of each
	own    []*configuredScope // the member's own Scopes
	shared []*configuredScope // the pool's SharedQuota
	// concerns names the scopes the member's refusals slow: its keyed and
	// own scopes, not the shared ones, nor what routes charge.
	concerns []string

	freeAt      atomic.Int64 // UnixNano before which a take was said to be refused
	parkedUntil atomic.Int64 // UnixNano; 0 when not parked
	out         atomic.Bool
	removed     atomic.Bool // by another instance of the fleet (poolmembers.go)
	why         atomic.Pointer[string]

	admitted, refused, rotatedAway atomic.Int64
}

// newPool validates cfg's pool against the declared scopes; nil without a
// pool.
func (t *Transport) newPool(cfg *config) *poolState {
	if cfg.pool == nil {
		return nil
	}
	pc := cfg.pool
	if err := pc.Validate(); err != nil {
		cfg.errs = append(cfg.errs, err)
	}
	p := &poolState{affinity: pc.Affinity, keyedSet: map[*configuredScope]bool{}}
	for _, name := range pc.Scopes {
		if cs, err := t.poolScope("Scopes", name); err != nil {
			cfg.errs = append(cfg.errs, err)
		} else {
			p.keyed = append(p.keyed, cs)
			p.keyedSet[cs] = true
		}
	}
	for _, name := range pc.SharedQuota {
		cs, err := t.poolScope("SharedQuota", name)
		if err != nil {
			cfg.errs = append(cfg.errs, err)
			continue
		}
		if slices.Contains(pc.Scopes, name) {
			cfg.errs = append(cfg.errs, fmt.Errorf("WithPool: scope %q is both in Scopes (a bucket per member) and SharedQuota (one bucket for all); choose one", name))
		}
		p.shared = append(p.shared, cs)
	}
	members := &memberSet{names: map[string]bool{}, ownedBy: map[*configuredScope]string{}}
	for _, m := range pc.Members {
		pm, errs := t.newMember(p, m)
		cfg.errs = append(cfg.errs, errs...)
		members.add(pm, p.shared)
	}
	p.members.Store(members)
	return p
}

// poolScope is the declared scope a pool's config names.
func (t *Transport) poolScope(what, name string) (*configuredScope, error) {
	if cs := t.scopes[name]; cs != nil {
		return cs, nil
	}
	return nil, fmt.Errorf("WithPool: %s names scope %q, which is not declared; declare it with WithScope", what, name)
}

// newMember is m as a member of p, with what is wrong with its scopes.
func (t *Transport) newMember(p *poolState, m pool.Member) (*poolMember, []error) {
	var errs []error
	pm := &poolMember{Member: m, keyed: p.keyed, shared: p.shared}
	for _, name := range m.Scopes {
		if cs, err := t.poolScope(fmt.Sprintf("member %q's Scopes", m.Name), name); err != nil {
			errs = append(errs, err)
		} else {
			pm.own = append(pm.own, cs)
		}
	}
	for _, cs := range append(slices.Clone(p.keyed), pm.own...) {
		pm.concerns = append(pm.concerns, cs.Name)
	}
	return pm, errs
}

// list is the pool's members now, in their declared order, then those
// added since; the caller must not change it.
func (p *poolState) list() []*poolMember { return p.members.Load().list }

// find is the member named name; nil when the pool has none.
func (p *poolState) find(name string) *poolMember {
	for _, m := range p.list() {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// charge adds the member's charges to c: its own buckets first, then the
// shared ones.
func (m *poolMember) charge(c *call, vals *callValues) {
	for _, cs := range m.keyed {
		c.addCharge(cs, Charge{Scope: cs.Name, Key: m.Name}, vals)
	}
	for _, cs := range m.own {
		c.addCharge(cs, Charge{Scope: cs.Name}, vals)
	}
	for _, cs := range m.shared {
		c.addCharge(cs, Charge{Scope: cs.Name}, vals)
	}
}

// costMemberCharges gives each of the call's first n charges, a member's,
// that costs nothing — one on a scope counted in a unit other than
// requests (tokens, segments), which no route can charge, not knowing the
// member — the most the routes charged the call in that unit: a
// deployment's tokens a minute is charged what the call was estimated to
// cost on the model's.
func (c *call) costMemberCharges(n int) {
	for i := range n {
		ch := &c.charges[i]
		if ch.cost != 0 || ch.bucket.scope.countsRequests {
			continue
		}
		unit := ch.bucket.scope.Unit
		for j := n; j < len(c.charges); j++ {
			if o := &c.charges[j]; o.bucket.scope.Unit == unit {
				ch.cost = max(ch.cost, o.cost)
			}
		}
	}
}

// groupOf returns the store.Demand.Group of bucket b: a member's name for
// the member's own buckets — its key of each of the pool's Scopes, and the
// bucket of each scope of its own that no other member lists — so that a
// sharded store (a Redis Cluster) keeps them in one slot and takes them in
// one script; "" for every other, the SharedQuota's included, which every
// member charges. It is a function of the bucket alone, whichever call
// charges it (a member's attempt, a permit), as the Group must be.
func (p *poolState) groupOf(b *bucket) string {
	ms := p.members.Load()
	if b.key == "" {
		return ms.ownedBy[b.scope]
	}
	if p.keyedSet[b.scope] && ms.names[b.key] {
		return b.key
	}
	return ""
}

// group sets the Group of each of c's demands (setDemands), from the
// bucket of the charge it serves: a workload's Max share of a member's
// bucket is kept with it.
func (p *poolState) group(c *call) {
	for j := range c.demands {
		d := &c.demands[j]
		if g := p.groupOf(c.charges[c.owners[j]].bucket); d.Group != g {
			d.Group = g
		}
	}
}

// confineToMember makes a pooled attempt's refusal slow the member's own
// scopes only, unless a classifier named the scopes itself.
func confineToMember(ctx context.Context, v *classify.Verdict) {
	if vals := valuesFrom(ctx); vals != nil && vals.member != nil && len(v.Scopes) == 0 {
		v.Scopes = vals.member.concerns
	}
}

// eachBucket calls f with each of the member's own buckets (not the shared
// ones), held for the duration of the call.
func (m *poolMember) eachBucket(f func(*bucket)) {
	for _, cs := range m.keyed {
		b := cs.bucketFor(m.Name)
		f(b)
		b.release()
	}
	for _, cs := range m.own {
		f(cs.shared)
	}
}

// readyAt is the earliest the member may admit a call, as far as this
// process knows without asking the store: a refused take's wait, a pause
// the provider asked of its scopes. ok is false for a member out of
// rotation or parked.
func (m *poolMember) readyAt(now int64) (at int64, ok bool) {
	if m.out.Load() || m.removed.Load() {
		return 0, false
	}
	if p := m.parkedUntil.Load(); p != 0 && p > now {
		return 0, false
	}
	at = max(now, m.freeAt.Load())
	m.eachBucket(func(b *bucket) { at = max(at, b.cooldown.Load()) })
	return at, true
}

// headroom is the slowest pace among the member's own buckets, in units a
// second: what the provider's reported counts and published limits allow
// it now; -1 for a member with no buckets of its own, whose headroom
// nothing says.
func (m *poolMember) headroom() float64 {
	h := -1.0
	m.eachBucket(func(b *bucket) {
		if rate, _ := b.pace(); rate > 0 && (h < 0 || rate < h) {
			h = rate
		}
	})
	return h
}

// order returns the members of members that may take the call, best
// first: soonest ready, then most headroom, ties spread in turn; with an
// affinity key, its member first when it is ready now.
func (p *poolState) order(now time.Time, req *http.Request, members []*poolMember, skip []bool) []*poolMember {
	type ranked struct {
		m    *poolMember
		at   int64
		room float64
		tie  uint32
	}
	n := now.UnixNano()
	turn := p.turn.Add(1)
	rs := make([]ranked, 0, len(members))
	for i, m := range members {
		if skip[i] {
			continue
		}
		at, ok := m.readyAt(n)
		if !ok {
			continue
		}
		rs = append(rs, ranked{m, at, m.headroom(), (uint32(i) + turn) % uint32(len(members))})
	}
	// A member whose headroom nothing says ties with the best that is
	// known, so that calls spread over it and the best in turn: ranked
	// above every other, a member with no scopes of its own (a key with
	// no limits of its own) took every call.
	best := -1.0
	for _, r := range rs {
		best = max(best, r.room)
	}
	for i := range rs {
		if rs[i].room < 0 {
			rs[i].room = best
		}
	}
	slices.SortFunc(rs, func(a, b ranked) int {
		switch {
		case a.at != b.at:
			return cmpInt64(a.at, b.at)
		case a.room != b.room:
			if a.room > b.room {
				return -1
			}
			return 1
		}
		return int(a.tie) - int(b.tie)
	})
	out := make([]*poolMember, len(rs))
	for i, r := range rs {
		out[i] = r.m
	}
	if p.affinity != nil && len(out) > 1 {
		if key := p.affinity(req); key != "" {
			// Rendezvous hashing over the members ready now: a member
			// leaving moves only its own keys.
			best, score := -1, uint64(0)
			for i, r := range rs {
				if r.at > n {
					continue
				}
				h := fnv.New64a()
				h.Write([]byte(key))
				h.Write([]byte{0})
				h.Write([]byte(r.m.Name))
				if s := h.Sum64(); best < 0 || s > score {
					best, score = i, s
				}
			}
			if best > 0 {
				m := out[best]
				copy(out[1:best+1], out[:best])
				out[0] = m
			}
		}
	}
	return out
}

func cmpInt64(a, b int64) int {
	if a < b {
		return -1
	}
	return 1
}

// poolTry is what became of one try of a member.
type poolTry struct {
	resp    *http.Response
	info    attemptInfo
	err     error
	blocked blocked // when not admitted: where, and for how long
}

// roundTrip sends req through the members of the pool, one attempt each at
// most, as WithPool says.
func (p *poolState) roundTrip(t *Transport, req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if t.limitSync != nil {
		t.syncLimits(ctx) // the fleet's records of the members, before choosing one
	}
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	bodyUsed := false
	members := p.list() // the members as the call began: one attempt each at most
	skip := make([]bool, len(members))
	var last *poolTry // the latest answer, to hand back when no member is left
	var lastMember *poolMember
	for {
		now := t.clock.Now()
		order := p.order(now, req, members, skip)
		if len(order) == 0 {
			if last != nil {
				return last.resp, last.err
			}
			return nil, closeRequestBody(req, p.noneLeft(now))
		}
		if lastMember != nil {
			lastMember.rotatedAway.Add(1)
			t.emit(observe.Event{Kind: observe.EventMemberRotated, Member: lastMember.Name, Workload: workloadName(t, ctx), Status: answered(last.resp, last.err)})
			drop(last.resp, last.info.stalled)
			last, lastMember = nil, nil
		}
		var tried *poolTry
		var m *poolMember
		var best *poolMember
		var bestBlock blocked
		for _, cand := range order {
			r := t.tryMember(req, cand, bodyUsed, false)
			if r.blocked.bucket == nil {
				tried, m = &r, cand
				break
			}
			if w := r.blocked.wait; w > 0 && w != store.Never {
				cand.freeAt.Store(now.Add(w).UnixNano())
			}
			if best == nil || better(r.blocked.wait, bestBlock.wait) {
				best, bestBlock = cand, r.blocked
			}
		}
		if tried == nil {
			// No member admits the call now: wait in the queue of the one
			// that frees first, as any call waits, unless that is past the
			// deadline: then say so at once, with when that member frees.
			if deadline, ok := ctx.Deadline(); ok && bestBlock.wait > 0 && bestBlock.wait > deadline.Sub(now) {
				err := bestBlock.error(context.DeadlineExceeded)
				t.poolThrottled(ctx, err)
				return nil, closeRequestBody(req, err)
			}
			r := t.tryMember(req, best, bodyUsed, true)
			tried, m = &r, best
		}
		if !tried.info.sent {
			if tried.err == nil {
				tried.err = errors.New("pacer: a pool member's attempt was neither sent nor refused") // unreachable
			}
			return nil, closeRequestBody(req, tried.err)
		}
		bodyUsed = bodyUsed || req.Body != nil && req.Body != http.NoBody
		m.admitted.Add(1)
		skip[slices.Index(members, m)] = true
		if !p.fault(t, m, tried, t.clock.Now()) {
			m.back(t, ctx, now)
			return tried.resp, tried.err
		}
		m.refused.Add(1)
		if !p.mayRotate(t, req, tried) || bodyUsed && !replayable {
			return tried.resp, tried.err
		}
		last, lastMember = tried, m
	}
}

// better reports whether wait a is a better bet than b: a known wait beats
// an unknown one (0: until a call in flight ends), a shorter a longer.
func better(a, b time.Duration) bool {
	switch {
	case a == store.Never:
		return false
	case b == store.Never:
		return true
	case a == 0 || b == 0:
		return a != 0 && b == 0
	}
	return a < b
}

// tryMember makes one attempt of req through m: admitted at once or not at
// all, or, with wait, waiting as any call does. A try not admitted takes
// nothing and leaves req's body unread.
func (t *Transport) tryMember(req *http.Request, m *poolMember, bodyUsed, wait bool) poolTry {
	v := derive(req.Context())
	v.member = m
	ctx := context.WithValue(req.Context(), callValuesKey{}, v)
	routed := req.WithContext(ctx) // what the routes see: without the member's credential
	c, err := t.callFor(ctx, routed, nil)
	if err != nil {
		return poolTry{err: err}
	}
	if wait {
		if err := c.enter(ctx); err != nil {
			return poolTry{err: err}
		}
	} else if b, err := c.enterNow(ctx); err != nil || b.bucket != nil {
		return poolTry{err: err, blocked: b}
	}
	info := attemptInfo{sent: true, scope: t.defaultScope}
	if len(c.charges) > 0 {
		info.scope = c.charges[0].bucket.scope
	}
	sent := req.Clone(ctx)
	if bodyUsed && req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			c.cancelReservation(ctx) // unsent: its tokens and budget back
			return poolTry{err: fmt.Errorf("pacer: the request body could not be sent again to pool member %q: %w", m.Name, err)}
		}
		sent.Body = body
	}
	if err := m.Apply(sent); err != nil {
		c.cancelReservation(ctx) // unsent: its tokens and budget back
		return poolTry{err: fmt.Errorf("pacer: applying pool member %q to the request: %w", m.Name, err)}
	}
	if t.retry != nil && t.retry.AttemptTimeout > 0 {
		sent = c.bound(sent, t.retry.AttemptTimeout)
	}
	r := poolTry{info: info}
	r.resp, r.info.verdict, r.info.stalled, r.err = c.send(sent)
	return r
}

// enterNow is enter without a wait: the budget, then every slot and token,
// all or none. It counts and says nothing of a refusal, which only sends
// the call to another member; blocked says where it was held back.
func (c *call) enterNow(ctx context.Context) (blocked, error) {
	if c.budget[0].Cost > 0 {
		if err := c.spendBudget(ctx); err != nil {
			c.finish()
			return blocked{}, err
		}
	}
	b, err := c.admitNow(ctx)
	if err != nil || b.bucket != nil {
		c.refundBudget(ctx)
		c.finish()
		return b, err
	}
	c.workload.counts.admitted.Add(1)
	c.emitAdmitted()
	return blocked{}, nil
}

// admitNow is admit's first half: the calls waiting ahead first, then one
// try.
func (c *call) admitNow(ctx context.Context) (blocked, error) {
	if err := ctx.Err(); err != nil {
		return blocked{}, err
	}
	now := c.t.clock.Now()
	for i := range c.charges {
		if s := c.charges[i].bucket; s.waiting.Load() != 0 && s.servesBefore(c.workload.index, s.scope.shares.Load().reserve[c.workload.index]) {
			return blocked{bucket: s, reason: s.queueReason(now)}, nil
		}
	}
	return c.tryAdmit(ctx)
}

// fault reports whether the try's answer is m's fault, not the caller's,
// and acts on it: a 401 takes m out, a spent quota parks it, its reset
// counted from now, when the answer came. A 429 or 503 has cooled m's
// scopes already (learn, confined by confineToMember).
func (p *poolState) fault(t *Transport, m *poolMember, r *poolTry, now time.Time) bool {
	if r.err != nil {
		var q *QuotaError
		switch {
		case errors.As(r.err, &q):
			until := q.Reset
			if until.IsZero() {
				until = now.Add(t.maxWait)
			}
			m.park(t, q.Status, until, parkedWhy(q.Status))
			return true
		case retryrule.NeverLeft(r.err):
			return true // the call never left: another member may take it
		}
		return false
	}
	switch r.resp.StatusCode {
	case http.StatusUnauthorized:
		m.takeOut(t)
		return true
	case http.StatusPaymentRequired:
		until := now.Add(t.maxWait)
		if wait, ok := ratelimitheader.RetryAfter(r.resp.Header, now); ok {
			until = now.Add(wait)
		}
		m.park(t, r.resp.StatusCode, until, parkedWhy(http.StatusPaymentRequired))
		return true
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return true
	}
	return r.info.verdict.BackPressure
}

// mayRotate reports whether a call m refused may go to another member: a
// 401 or a connection that never left was never processed; anything else
// only when the call is safe to send twice.
func (p *poolState) mayRotate(t *Transport, req *http.Request, r *poolTry) bool {
	if r.err != nil && retryrule.NeverLeft(r.err) || r.resp != nil && r.resp.StatusCode == http.StatusUnauthorized {
		return true
	}
	if r.info.verdict.NeverProcessed {
		return true
	}
	rule := retryrule.Rule{IdempotencyHeaders: retry.Policy{}.WithDefaults().IdempotencyHeaders}
	if t.retry != nil {
		rule = t.retry.rule // the policy's own idempotency headers
	}
	return rule.MayRetry(req)
}

// noneLeft is the error of a call no member can take: all out or parked.
func (p *poolState) noneLeft(now time.Time) error {
	var soonest time.Duration
	for _, m := range p.list() {
		if u := m.parkedUntil.Load(); u != 0 && !m.out.Load() && !m.removed.Load() {
			if d := time.Duration(u - now.UnixNano()); soonest == 0 || d < soonest {
				soonest = max(d, 1)
			}
		}
	}
	return &ThrottledError{Scope: "pool", Reason: observe.ReasonCapacity, RetryAfter: soonest,
		Err: errors.New("no pool member can take the call: each is out of rotation (a 401) or parked (a spent quota); see Stats().Members, and put a member back with Transport.PutBack")}
}

// poolThrottled counts and tells of a call the pool refused.
func (t *Transport) poolThrottled(ctx context.Context, err error) {
	var te *ThrottledError
	if !errors.As(err, &te) {
		return
	}
	name := workloadName(t, ctx)
	t.workloads[name].throttled(t.clock.Now(), te)
	t.emit(observe.Event{Kind: observe.EventThrottled, Scope: te.Scope, Workload: name, Wait: te.RetryAfter, Err: err})
}

// memberStats describes the pool's members, in their declared order, then
// those added since.
func (p *poolState) memberStats(now time.Time) []pool.MemberStats {
	members := p.list()
	out := make([]pool.MemberStats, 0, len(members))
	for _, m := range members {
		ms := pool.MemberStats{Name: m.Name, State: pool.Ready,
			Admitted: m.admitted.Load(), Refused: m.refused.Load(), RotatedAway: m.rotatedAway.Load()}
		if m.out.Load() {
			ms.State = pool.Out
		} else if m.removed.Load() {
			ms.State = pool.Removed
		} else if u := m.parkedUntil.Load(); u != 0 {
			ms.State, ms.Until = pool.Parked, time.Unix(0, u)
		}
		if ms.State != pool.Ready {
			if w := m.why.Load(); w != nil {
				ms.Why = *w
			}
		}
		m.eachBucket(func(b *bucket) {
			if d := time.Duration(b.cooldown.Load() - now.UnixNano()); d > ms.Cooldown {
				ms.Cooldown = d
			}
		})
		out = append(out, ms)
	}
	return out
}
