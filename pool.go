package pacer

// A pool of members behind one Transport (WithPool, vocabulary in package
// pool): each attempt goes through one member, chosen here, and a member's
// faults are its own. Nothing here runs for a Transport without a pool.

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"slices"
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
// makes at most one attempt per member. Members are this process's own:
// a fleet sharing a store shares each member's buckets, not whether it is
// out or parked.
//
// It is safe for concurrent use, as the Transport is; Transport.PutBack
// puts a member back and Stats().Members describes them.
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
	members  []*poolMember
	affinity func(*http.Request) string
	turn     atomic.Uint32 // spreads ties

	// What groupOf reads: the pool's Scopes, the members' names, and each
	// member's own scope that is the member's alone, by scope.
	keyed   map[*configuredScope]bool
	names   map[string]bool
	ownedBy map[*configuredScope]string
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
	lookup := func(what, name string) *configuredScope {
		cs := t.scopes[name]
		if cs == nil {
			cfg.errs = append(cfg.errs, fmt.Errorf("WithPool: %s names scope %q, which is not declared; declare it with WithScope", what, name))
		}
		return cs
	}
	p := &poolState{affinity: pc.Affinity, keyed: map[*configuredScope]bool{}, names: map[string]bool{}, ownedBy: map[*configuredScope]string{}}
	var keyed, shared []*configuredScope
	for _, name := range pc.Scopes {
		if cs := lookup("Scopes", name); cs != nil {
			keyed = append(keyed, cs)
			p.keyed[cs] = true
		}
	}
	for _, name := range pc.SharedQuota {
		if cs := lookup("SharedQuota", name); cs != nil {
			if slices.Contains(pc.Scopes, name) {
				cfg.errs = append(cfg.errs, fmt.Errorf("WithPool: scope %q is both in Scopes (a bucket per member) and SharedQuota (one bucket for all); choose one", name))
			}
			shared = append(shared, cs)
		}
	}
	for _, m := range pc.Members {
		pm := &poolMember{Member: m, keyed: keyed, shared: shared}
		p.names[m.Name] = true
		for _, name := range m.Scopes {
			if cs := lookup(fmt.Sprintf("member %q's Scopes", m.Name), name); cs != nil {
				pm.own = append(pm.own, cs)
				// A scope two members list, or a shared one, is no
				// member's alone.
				if by, ok := p.ownedBy[cs]; ok && by != m.Name || slices.Contains(pc.SharedQuota, name) {
					p.ownedBy[cs] = ""
				} else {
					p.ownedBy[cs] = m.Name
				}
			}
		}
		for _, cs := range append(slices.Clone(keyed), pm.own...) {
			pm.concerns = append(pm.concerns, cs.Name)
		}
		p.members = append(p.members, pm)
	}
	return p
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

// groupOf returns the store.Demand.Group of bucket b: a member's name for
// the member's own buckets — its key of each of the pool's Scopes, and the
// bucket of each scope of its own that no other member lists — so that a
// sharded store (a Redis Cluster) keeps them in one slot and takes them in
// one script; "" for every other, the SharedQuota's included, which every
// member charges. It is a function of the bucket alone, whichever call
// charges it (a member's attempt, a permit), as the Group must be.
func (p *poolState) groupOf(b *bucket) string {
	if b.key == "" {
		return p.ownedBy[b.scope]
	}
	if p.keyed[b.scope] && p.names[b.key] {
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
	if m.out.Load() {
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
// it now. A member with no buckets of its own has unbounded headroom.
func (m *poolMember) headroom() float64 {
	h := -1.0
	m.eachBucket(func(b *bucket) {
		if rate, _ := b.pace(); rate > 0 && (h < 0 || rate < h) {
			h = rate
		}
	})
	if h < 0 {
		return 1e18
	}
	return h
}

// order returns the members that may take the call, best first: soonest
// ready, then most headroom, ties spread in turn; with an affinity key, its
// member first when it is ready now.
func (p *poolState) order(now time.Time, req *http.Request, skip []bool) []*poolMember {
	type ranked struct {
		m    *poolMember
		at   int64
		room float64
		tie  uint32
	}
	n := now.UnixNano()
	turn := p.turn.Add(1)
	rs := make([]ranked, 0, len(p.members))
	for i, m := range p.members {
		if skip[i] {
			continue
		}
		at, ok := m.readyAt(n)
		if !ok {
			continue
		}
		rs = append(rs, ranked{m, at, m.headroom(), (uint32(i) + turn) % uint32(len(p.members))})
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
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	bodyUsed := false
	skip := make([]bool, len(p.members))
	var last *poolTry // the latest answer, to hand back when no member is left
	var lastMember *poolMember
	for {
		now := t.clock.Now()
		order := p.order(now, req, skip)
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
		skip[slices.Index(p.members, m)] = true
		if !p.fault(t, m, tried, now) {
			m.back(t, ctx)
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
// and acts on it: a 401 takes m out, a spent quota parks it. A 429 or 503
// has cooled m's scopes already (learn, confined by confineToMember).
func (p *poolState) fault(t *Transport, m *poolMember, r *poolTry, now time.Time) bool {
	if r.err != nil {
		var q *QuotaError
		switch {
		case errors.As(r.err, &q):
			until := q.Reset
			if until.IsZero() {
				until = now.Add(t.maxWait)
			}
			m.park(t, q.Status, until, "its quota is spent (status "+fmt.Sprint(q.Status)+")")
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
		m.park(t, r.resp.StatusCode, until, "its quota is spent (status 402)")
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

// takeOut takes m out of rotation, saying so once.
func (m *poolMember) takeOut(t *Transport) {
	if !m.out.CompareAndSwap(false, true) {
		return
	}
	why := "it answered 401 Unauthorized: its credential was refused"
	m.why.Store(&why)
	t.emit(observe.Event{Kind: observe.EventMemberOut, Member: m.Name, Status: http.StatusUnauthorized, Why: why})
	t.log.Warn("pacer: a pool member answered 401 and is out of rotation until put back (Transport.PutBack)", "member", m.Name)
}

// park keeps calls off m until until, when a call probes it. The calls in
// flight when its quota ran out each meet the refusal: the first parks it
// and says so; the others only move the end later, if theirs is.
func (m *poolMember) park(t *Transport, status int, until time.Time, why string) {
	at := until.UnixNano()
	for {
		old := m.parkedUntil.Load()
		if old != 0 && old >= at {
			return
		}
		if m.parkedUntil.CompareAndSwap(old, at) {
			if old != 0 {
				return // parked already: said when it was
			}
			break
		}
	}
	m.why.Store(&why)
	t.emit(observe.Event{Kind: observe.EventMemberParked, Member: m.Name, Status: status, Wait: until.Sub(t.clock.Now()), Why: why})
	t.log.Info("pacer: a pool member is parked", "member", m.Name, "until", until.UTC().Format(time.RFC3339), "why", why)
}

// back notes that m answered a call: a parked member it probed is back.
func (m *poolMember) back(t *Transport, ctx context.Context) {
	if p := m.parkedUntil.Load(); p != 0 && m.parkedUntil.CompareAndSwap(p, 0) {
		m.why.Store(nil)
		t.emit(observe.Event{Kind: observe.EventMemberUnparked, Member: m.Name, Workload: workloadName(t, ctx)})
	}
}

// noneLeft is the error of a call no member can take: all out or parked.
func (p *poolState) noneLeft(now time.Time) error {
	var soonest time.Duration
	for _, m := range p.members {
		if u := m.parkedUntil.Load(); u != 0 && !m.out.Load() {
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

// PutBack puts a pool member back in rotation: one out after a 401 (its
// credential fixed), or one parked before its reset. It is safe for
// concurrent use; a name not in the pool is an error.
func (t *Transport) PutBack(member string) error {
	if t.pool == nil {
		return errors.New("pacer: PutBack: the Transport has no pool; declare one with WithPool")
	}
	for _, m := range t.pool.members {
		if m.Name == member {
			was := m.out.Swap(false)
			if m.parkedUntil.Swap(0) != 0 {
				was = true
			}
			m.freeAt.Store(0)
			m.why.Store(nil)
			if was {
				t.emit(observe.Event{Kind: observe.EventMemberUnparked, Member: m.Name})
			}
			return nil
		}
	}
	return fmt.Errorf("pacer: PutBack: the pool has no member named %q", member)
}

// memberStats describes the pool's members, in their declared order.
func (p *poolState) memberStats(now time.Time) []pool.MemberStats {
	out := make([]pool.MemberStats, 0, len(p.members))
	for _, m := range p.members {
		ms := pool.MemberStats{Name: m.Name, State: pool.Ready,
			Admitted: m.admitted.Load(), Refused: m.refused.Load(), RotatedAway: m.rotatedAway.Load()}
		if m.out.Load() {
			ms.State = pool.Out
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
