package pacer

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/pacer-go/pacer/classify"
	"github.com/pacer-go/pacer/internal/pace"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/ratelimitheader"
	"github.com/pacer-go/pacer/store"
)

// Why a scope is paused, for Stats (bucket.why).
var (
	pausedForRetryAfter = "paused for the provider's Retry-After"
	pausedForNoneLeft   = "paused until the reset: the provider reported none left"
)

// coolDown stops the scope until now+d, unless it is stopped longer
// already; why says what asked for the pause.
func (c *call) coolDown(s *bucket, now time.Time, d time.Duration, why *string) {
	until := now.Add(d).UnixNano()
	for {
		old := s.cooldown.Load()
		if old >= until {
			return
		}
		if s.cooldown.CompareAndSwap(old, until) {
			s.pauseWhy.Store(why)
			if old < now.UnixNano() {
				s.pausedFrom.Store(now.UnixNano()) // a new pause, not one made longer
			}
			s.pausedTo.Store(until)
			c.t.emit(observe.Event{Kind: observe.EventCooldownStarted, Scope: s.scope.Name, Workload: c.workload.name, Wait: d})
			return
		}
	}
}

// cooledDown reports whether the scope is free of any pause at now, and
// says so, once, when a pause has just ended. A pause leaves a debt in the
// scope's bucket, so that the restart is paced (and a fleet sharing the
// bucket waits too): the first callers after it repay the debt at the pace
// it was set at, before anyone takes, not at whatever pace holds now.
func (c *call) cooledDown(s *bucket, now time.Time) (time.Duration, bool) {
	until := s.cooldown.Load()
	if until == 0 {
		return 0, true
	}
	if left := time.Duration(until - now.UnixNano()); left > 0 {
		return left, false
	}
	debt := s.debtRate.Load()
	if debt != 0 {
		c.repay(s, now, math.Float64frombits(debt))
	}
	if s.cooldown.CompareAndSwap(until, 0) {
		s.debtRate.CompareAndSwap(debt, 0)
		c.t.emit(observe.Event{Kind: observe.EventCooldownEnded, Scope: s.scope.Name, Workload: c.workload.name})
	}
	return 0, true
}

// owe records that a pause of s leaves its bucket a debt of rate × the
// pause: the pace cooledDown repays it at.
func (s *bucket) owe(rate float64) {
	if rate > 0 {
		s.debtRate.Store(math.Float64bits(rate))
	}
}

// repay brings s's buckets up to now at rate, the pace their debt was set
// at, if that is faster than the pace now: a clamp to the full burst lowers
// nothing, and every store refills a bucket at the demand's rate before it
// clamps. A pace lowered during the pause (a cut, a published limit) would
// otherwise stretch the pause by the ratio of the two, beyond the maximum
// wait.
//
// A scope that paces nothing now (SetLimit to the zero Limit during the
// pause) has no demand to refill with: its buckets are brought to empty
// at the debt's pace instead, so that a limit set later does not inherit
// the pause's debt and repay it at its own, slower pace. So is a scope
// whose pace rose during the pause (a cut's climb back, which is fastest
// just after the cut): refilled at the pace now, the debt was repaid
// early and the bucket was full when the pause ended, and its burst went
// out at once into the server that had asked for the pause — over a
// route of 300 ms, four of eleven refused, and a second cut.
func (c *call) repay(s *bucket, now time.Time, rate float64) {
	cur, _ := s.pace()
	if cur <= 0 || cur >= rate {
		for i := range c.charges {
			if ch := &c.charges[i]; ch.bucket == s {
				var d store.Demand
				setNames(&d, s.scope.Name, ch.key)
				if c.t.pool != nil {
					d.Group = c.t.pool.groupOf(s)
				}
				d.Rate = rate // Burst 0: refilled at the debt's pace up to empty, not full
				if err := c.t.store.Clamp(context.Background(), now, d, 0); err != nil {
					c.t.emit(observe.Event{Kind: observe.EventStoreFailure, Scope: d.Scope, Workload: c.workload.name, Err: err})
				}
			}
		}
		return
	}
	if rate <= cur {
		return
	}
	c.setDemands()
	for j, owner := range c.owners {
		if c.charges[owner].bucket != s {
			continue
		}
		d := c.demands[j]
		d.Rate *= rate / cur
		if err := c.t.store.Clamp(context.Background(), now, d, d.Burst); err != nil {
			c.t.emit(observe.Event{Kind: observe.EventStoreFailure, Scope: d.Scope, Workload: c.workload.name, Err: err})
		}
	}
}

// learnLimit takes a limit the provider published as the scope's pace, at
// the Transport's headroom, unless the configured limit is lower and not
// provisional. A published limit that rises back above the configured one
// gives the configured pace back. It reports whether the pace changed.
//
// A quota whose reset is further off than its window counts a longer
// period than the window says (a day's requests reported beside a
// per-minute limit, say): it may lower the pace, never raise it.
//
// However long the published window (a year, say), the learned pace lets a
// full bucket refill within maxWait — or at the configured pace, if that
// is slower: one response cannot stop a scope beyond the maximum wait, and
// the scope keeps sending, so a corrected server can teach it back.
func (s *bucket) learnLimit(q ratelimitheader.Quota, headroom float64, maxWait time.Duration, log *slog.Logger) bool {
	l := Limit{Count: int(min(q.Limit, math.MaxInt32)), Per: q.Window}
	rate, burst := l.shape(headroom)
	raw := float64(l.Count) / l.Per.Seconds()
	c := s.scope
	cfg := c.configured.Load() // a limit set at runtime merges as one set at New
	if cfg.Rate > 0 {
		mayRaise := c.Provisional && q.Reset <= q.Window
		if cfg.Rate == rate || cfg.Rate < rate && !mayRaise {
			// The configured limit is what the provider allows, or below it.
			return s.forgetPublished(nil)
		}
		// Keep the configured bucket's shape: one that holds a full minute
		// of tokens, so that any request within the limit fits, still does.
		burst = max(1, cfg.Burst*rate/cfg.Rate)
		rate = max(rate, min(cfg.Rate, s.floorRate(maxWait)))
	} else {
		rate = max(rate, s.floorRate(maxWait))
	}
	p := &pace.Capacity{Rate: rate, Burst: burst, Raw: raw, EdgeBurst: pace.EdgeBurst(c.countsRequests, float64(l.Count), burst)}
	if _, changed := s.amend(func(m pace.Model) (pace.Model, bool) {
		if m.Published != nil && m.Published.Rate == rate && m.Published.Burst == burst {
			return m, false
		}
		m.Published = p
		return m, true
	}); !changed {
		return false
	}
	if cfg.Rate == 0 {
		return true // nothing configured to say it replaces
	}
	attrs := []any{"scope", c.Name, "configured", cfg.limit.String(), "published", l.String()}
	if s.key != "" {
		attrs = append(attrs, "key", s.key)
	}
	if c.Provisional {
		log.Info("pacer: pacing by the limit the provider publishes, in place of the provisional one", attrs...)
	} else {
		log.Warn("pacer: the provider publishes a lower limit than configured; pacing by the provider's", attrs...)
	}
	return true
}

// learn reads what the response says about the scopes the call was charged
// to, and adjusts them for every caller:
//
//   - a quota's published limit becomes the scope's pace (see learnLimit);
//     a limit published without a window takes the window that successive
//     resets show, or until they do, a 429's Retry-After;
//   - a quota's remaining count clamps the bucket, less what was sent
//     since, and — with a reset — paces the scope to spend what is left by
//     the reset (reportRemaining); a success that took the last one pauses
//     the scope only while the reset plausibly lies ahead;
//   - a 429 or 503 with Retry-After (or a classifier's classify.Verdict.Wait) stops every
//     scope of the call until then; the bucket is emptied as well, so the
//     restart is paced, not a stampede. A Retry-After of a second or less
//     on a 429 that a cut answers with a measured capacity stops only the
//     call it answers (its retry waits it out): the other callers go on at
//     the measured pace;
//   - a 429 that teaches nothing else empties the bucket and cuts the pace
//     to what the provider was measured to accept, and the pace climbs
//     back by time (recovery.go); on a scope with no rate, a 429 or a 503
//     lowers its cap on calls in flight to what it held (cutSlots);
//   - a classifier that names the scopes a response concerns
//     (classify.Verdict.Scopes) confines the last two to them.
//
// Every pause a header asks for is clamped to the Transport's maximum wait.
func (c *call) learn(ctx context.Context, resp *http.Response, verdict classify.Verdict) {
	c.learnFrom(ctx, resp, verdict, true)
}

// learnFrom is learn; cuts false makes a 429 a pause only, never a cut: a
// permit's Reject(d > 0), a caller's own Retry-After (permit.go).
func (c *call) learnFrom(ctx context.Context, resp *http.Response, verdict classify.Verdict, cuts bool) {
	status := resp.StatusCode
	if verdict.Quota != "" {
		c.answered(false)
		return // a spent quota is no reason to slow down the scope
	}
	if verdict.BackPressure {
		status = http.StatusTooManyRequests
	}
	quiet := !ratelimitheader.Present(resp.Header)
	if quiet && status < 400 {
		// Most responses say nothing about limits: keep them cheap.
		for i := range c.charges {
			s := c.charges[i].bucket // not a copy of the charge: it is eight words
			s.answered(c.charges[i].spentAt, int64(c.charges[i].cost), true)
			s.succeeded()
			if s.recovered.Load() {
				c.reportRecovered(s)
			}
			if s.published() != nil {
				c.forgetUnconfirmed(s, c.t.clock.Now())
			}
		}
		return
	}
	t := c.t
	r := reply{status: status, code: resp.StatusCode, verdict: verdict, now: t.clock.Now(), cuts: cuts, local: t.ownsBuckets(), roomless: true}
	refused := status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
	if refused {
		// Before the counts are read: a refused call was never counted.
		for _, ch := range c.charges {
			if concerns(verdict, ch.bucket.scope.Name) {
				ch.bucket.noteRefused(r.now, ch.spentAt, int64(ch.cost), c.admitted)
			}
		}
	}
	r.wait, r.paused = ratelimitheader.RetryAfter(resp.Header, r.now)
	if !r.paused && verdict.Wait > 0 {
		r.wait, r.paused = verdict.Wait, true // the provider's documented wait
	}
	r.claimed = r.wait // before the clamp: farreset.go says it to the callers
	r.wait = min(r.wait, t.maxWait)
	if !quiet {
		quotas := ratelimitheader.ParseQuotas(resp.Header, r.now)
		c.learnLongWindows(resp.Header, r.now, quotas) // longwindow.go
		for _, q := range quotas {
			c.learnQuota(ctx, &r, resp.Header, q)
		}
	}
	if r.counted && r.roomless {
		r.taught = false
	}
	// A refusal while every count said the call fitted: the server limits
	// by more than it counts (a second limit it does not report, as
	// GitHub's secondary ones: "403 or 429" while x-ratelimit-remaining is
	// not 0). What it did outranks what its counts say: the refusal cuts,
	// as a bare 429 does, and the climb paces the scope below the counts
	// until it ends. Taken as the count's lesson, a server that said 80
	// left while it accepted half the calls had half refused for good.
	r.overruled = r.counts && !r.explained
	if r.overruled {
		r.taught = false
	}
	switch {
	case refused:
		// Only the scopes the response concerns: those the classifier
		// named, else all of the call's.
		c.workload.counts.rejected.Add(1)
		for _, ch := range c.charges {
			if concerns(verdict, ch.bucket.scope.Name) {
				ch.bucket.scope.rejected.Add(1)
				t.emit(observe.Event{Kind: observe.EventRejected, Scope: ch.bucket.scope.Name, Workload: c.workload.name, Status: r.code})
			}
		}
		for i, ch := range c.charges {
			if concerns(verdict, ch.bucket.scope.Name) {
				c.refusedOn(ctx, &r, i)
			}
		}
	case status < 400:
		for _, ch := range c.charges {
			ch.bucket.succeeded()
			c.reportRecovered(ch.bucket)
		}
	}
	for _, ch := range c.charges {
		c.forgetUnconfirmed(ch.bucket, r.now)
	}
	c.answered(false) // after the clamps: firstburst.go
}

// answered notes that the call's answer has been read (firstburst.go);
// quiet says it carried no count.
func (c *call) answered(quiet bool) {
	for i := range c.charges {
		ch := &c.charges[i]
		ch.bucket.answered(ch.spentAt, int64(ch.cost), quiet)
	}
}

// A reply is what one response with rate-limit headers, or a refusal,
// said, as learnFrom reads it: the facts it starts from, and what its
// quotas taught (learnQuota), which the refusal's lesson depends on
// (refusedOn).
type reply struct {
	status  int // the response's status, a classifier's back-pressure as 429
	code    int // the response's status as sent
	verdict classify.Verdict
	now     time.Time
	cuts    bool // a 429 may cut (learnFrom)
	local   bool // the Transport owns its buckets: no shared store

	// wait is the pause the response asks for (Retry-After, or the
	// classifier's documented wait), clamped to the maximum wait; claimed,
	// the same before the clamp (farreset.go); paused, that it asks for
	// one at all.
	wait, claimed time.Duration
	paused        bool

	// taught: the response teaches a limit or a count, so a 429 needs no
	// cut; counted: it says what remains, which paces the scope.
	taught, counted bool
	// A 429 is explained by a count it carries for a scope it concerns
	// that has no room for the refused call: the limit the count keeps
	// refused it. counts says it carries one at all; overruled, that it
	// carries one and none explains it.
	explained, counts, overruled bool
	// roomless: every count has no room to pace by (reportRemaining), so
	// neither it nor a published limit it outranks teaches anything: a
	// refusal is the lesson, as a bare 429's is.
	roomless bool
}

// learnQuota learns what the quota q of a response in r, with headers h,
// says of the scope it is charged to: a published limit (learnPublished),
// and what remains (learnRemaining). It notes in r what the quota taught.
func (c *call) learnQuota(ctx context.Context, r *reply, h http.Header, q ratelimitheader.Quota) {
	i := c.chargeFor(q)
	if i < 0 {
		return
	}
	if c.learnPublished(ctx, r, h, q, i) {
		r.taught = true
	}
	if q.Remaining >= 0 {
		c.learnRemaining(ctx, r, q, i)
	}
}

// learnPublished takes the limit the quota q publishes, with the window it
// is counted in, as the pace of the call's charge i (learnLimit), and
// reports whether q publishes one.
func (c *call) learnPublished(ctx context.Context, r *reply, h http.Header, q ratelimitheader.Quota, i int) bool {
	t, now := c.t, r.now
	s := c.charges[i].bucket
	if cfg := s.scope.configured.Load(); q.Limit > 0 && q.Window == 0 && q.Limit == int64(cfg.limit.Count) {
		// The configured count, published without a window: the
		// configured limit, whose window the gaps between resets would
		// only overstate (a window that starts at the first call after
		// the last one ended, as GitHub's do, is followed by a gap).
		q.Window = cfg.limit.Per
	}
	if q.Limit > 0 && q.Window == 0 {
		if q.HasReset {
			at := ratelimitheader.ResponseTime(h, now).Add(q.Reset)
			q.Window = s.learnWindow(at, q.Reset%time.Second == 0)
		}
		if q.Window == 0 && r.status == http.StatusTooManyRequests && r.paused {
			q.Window = s.windowHint(r.wait)
		}
	}
	if q.Limit > 0 && q.Window > 0 {
		s.believed.Store(now.Add(pace.BelieveFor(q.Window, t.maxWait)).UnixNano())
		at := now.UnixNano()
		_, before := s.basePace(at)
		if s.learnLimit(q, t.headroom, t.maxWait, t.log) {
			// Only beside a count, which clamps it next: the bucket
			// never believes it has more than the provider reported.
			m, cfg := s.modelAt(at), s.configured()
			if rate, after := m.Base(at, cfg); after > before && q.Remaining >= 0 {
				c.grow(ctx, now, i, after-before, rate, after)
			}
			why := "the provider published its limit"
			if m.Outranked(at, cfg) {
				why = "the provider published a limit below the configured one; what it reports remains paces the scope meanwhile, up to the configured limit"
			}
			c.paceChanged(s, why)
		}
		return true
	}
	return false
}

// learnRemaining takes what the quota q says remains for the call's charge
// i: it clamps the bucket, net of what was sent since, and — with a reset
// — paces the scope to spend it by then (reportRemaining), or pauses it
// when none is left.
func (c *call) learnRemaining(ctx context.Context, r *reply, q ratelimitheader.Quota, i int) {
	t, now := c.t, r.now
	s := c.charges[i].bucket
	tooMany := r.status == http.StatusTooManyRequests
	if tooMany && concerns(r.verdict, s.scope.Name) {
		r.counts = true
		r.explained = r.explained || q.Remaining < int64(c.charges[i].cost)
	}
	// What was admitted since this call may not be in the provider's
	// count yet: take it off, in the scope's own units — the whole
	// fleet's, in a shared store that counts what it took.
	mark, fleet := c.charges[i].spentAt, !r.local && c.charges[i].takenAt > 0
	if fleet {
		mark = c.charges[i].takenAt
	}
	// Nor, in the scope's first burst, the calls admitted before it that
	// the server may have counted after it (firstburst.go): a fleet's
	// marks are not this process's to read so.
	var unanswered int64
	burst := !fleet && s.inFirstBurst(mark)
	if burst {
		unanswered = s.unansweredBefore(mark, int64(c.charges[i].cost))
	}
	left := float64(q.Remaining) - float64(s.sinceMark(mark, fleet)+unanswered)
	var noneLeft time.Duration // nothing left: how long to pause for it (pace.Verdict.Pause)
	if q.HasReset {
		var refused int64
		if tooMany {
			refused = int64(c.charges[i].cost)
		}
		rep := pace.Count{Remaining: q.Remaining, Reset: q.Reset, Limit: q.Limit, Mark: mark, Unanswered: unanswered, Burst: burst, Refused: refused, Sent: c.admitted, Local: r.local, Fleet: fleet}
		v, began := s.reportRemaining(now, rep, t.maxWait)
		if began {
			c.paceChanged(s, "the provider reports what remains until its reset")
		}
		left, noneLeft = v.Left, v.Pause
		if v.Before {
			// A fixed window's count from before its latest turn
			// bounds nothing now: no bound, so the clamp below leaves
			// the bucket alone (it lowers a bucket only to a level
			// under its burst).
			left = math.Inf(1)
		}
	}
	// What the calls in flight take beyond what remains, the provider
	// refuses, and a refused call spends nothing: the count empties
	// the bucket, no more. Taken as a debt, the calls in flight when
	// a burst was refused stalled the scope for seconds.
	left = max(0, left)
	// A 429 that says what remains is the remaining count's lesson,
	// which paces the scope: no cut on top — unless the count has no
	// room to pace by (reportRemaining), when the refusal is the
	// lesson.
	r.counted = true
	if !s.model.Load().Roomless(now.UnixNano()) {
		r.taught, r.roomless = true, false
	}
	if pause := noneLeft; pause > 0 {
		c.coolDown(s, now, pause, &pausedForNoneLeft)
		s.claimFarReset(now, q.Reset, t.maxWait) // farreset.go
		// The bucket is empty, not full, when the pause ends: the
		// restart is paced, at the pace after the reset.
		blind := s.model.Load().Blind(s.configured())
		left = min(left, -blind*pause.Seconds())
		s.owe(blind)
	}
	c.clamp(ctx, now, i, left)
}

// refusedOn takes the refusal r for the call's charge i, a scope the
// response concerns: a scope that caps only its calls in flight holds no
// more at once than it held then; a 429 that taught nothing else cuts the
// pace to what the provider was measured to accept; a pause the response
// asks for stops the scope, its bucket emptied so that the restart is
// paced.
func (c *call) refusedOn(ctx context.Context, r *reply, i int) {
	t, now, ch := c.t, r.now, c.charges[i]
	// A Retry-After of a second or less beside a remaining count
	// is the count's rounding (a token bucket says "1" for the
	// 10 ms until its next token): where the scope knows what it
	// spent since (its own bucket, or a fleet's total), the count
	// paces the other callers from an empty bucket, and only the
	// refused call waits it out. A longer one asks the scope to
	// stop; so does a brief one where the count cannot be read
	// against what was spent.
	pause := r.paused && !(r.counted && !r.overruled && r.wait <= pace.BriefRetryAfter && (r.local || ch.takenAt > 0))
	if !r.taught && r.cuts && ch.bucket.limitsOnlyConcurrency(now) {
		// A 503 too: nginx's limit_conn answers one, and an
		// overloaded server as well, which fewer calls at once
		// is what helps.
		if ch.bucket.cutSlots(ch.heldWith, now) {
			c.paceChanged(ch.bucket, "the provider refused a call sent while the scope held "+strconv.Itoa(int(ch.heldWith))+" others: it holds no more at once")
			c.publishCut(ch.bucket)
		}
	} else if r.status == http.StatusTooManyRequests && !r.taught && r.cuts {
		var retryAfter time.Duration
		if r.paused {
			retryAfter = max(r.wait, 1) // "Retry-After: 0" still asks for a pause
		}
		// A brief Retry-After on a scope paced at a measured
		// capacity pauses only this call (pace.Cuts.Refused).
		cut, pauses := ch.bucket.cut(ch.admittedAt, now, retryAfter, t.maxWait, !r.local, r.overruled)
		pause = pause && pauses
		c.clamp(ctx, now, i, 0) // the provider has nothing left
		if cut {
			why := "the provider refused a call"
			if r.overruled {
				why = "the provider refused a call its count said fitted: it limits by more than it counts"
			}
			c.paceChanged(ch.bucket, why)
			// After the clamp, which stops the fleet at once.
			c.publishCut(ch.bucket)
		}
	}
	if !pause {
		return
	}
	if r.wait > pace.BriefRetryAfter && r.status == http.StatusTooManyRequests {
		// A refusal that costs more than the call: for a while
		// none left is waited out (pace.Scope.CostlyRefusals).
		// Not a 503's: an outage's pause says nothing of what
		// the limiter charges for a call sent into none left.
		ch.bucket.costlyFrom(now, r.wait)
	}
	c.coolDown(ch.bucket, now, r.wait, &pausedForRetryAfter)
	ch.bucket.claimFarReset(now, r.claimed, t.maxWait) // farreset.go
	// At the pace after any cut, the bucket is back to empty —
	// not full — when the pause ends.
	rate, _ := ch.bucket.pace()
	owed := r.wait
	if r.claimed > t.maxWait && !r.local {
		// A pause beyond the maximum wait is said at once here
		// (farreset.go); the fleet's other processes cannot hear
		// why a debt holds them, and would wait it out in
		// silence. The shared bucket owes a second's pace: each
		// sends within it, and its own answer tells it.
		owed = min(r.wait, pace.BriefRetryAfter)
	}
	c.clamp(ctx, now, i, -rate*owed.Seconds())
	ch.bucket.owe(rate)
}

// forgetUnconfirmed forgets the scope's published limit once no response
// has published it again for as long as believeFor allows, and reports
// whether it did.
func (c *call) forgetUnconfirmed(s *bucket, now time.Time) bool {
	p := s.published()
	if p == nil || now.UnixNano() < s.believed.Load() {
		return false
	}
	if !s.forgetPublished(p) {
		return false
	}
	c.paceChanged(s, "the provider's published limit was not published again: the configured limit paces the scope")
	return true
}

// paceChanged tells observers that a scope's pace changed, and why.
func (c *call) paceChanged(s *bucket, why string) {
	if len(c.t.observers) == 0 {
		return
	}
	rate, _ := s.pace()
	c.t.emit(observe.Event{Kind: observe.EventPaceChanged, Scope: s.scope.Name, Workload: c.workload.name, Rate: rate, Why: why})
}

// reportRecovered tells observers, once, that a scope climbed back to its
// full pace after a cut.
func (c *call) reportRecovered(s *bucket) {
	if s.recovered.Load() && s.recovered.CompareAndSwap(true, false) {
		c.paceChanged(s, "recovered from a cut")
	}
}

// chargeFor returns the index of the charge a quota reports on, or -1: the
// scope that names the quota's policy, else the first scope counted in the
// quota's unit that names no policy.
func (c *call) chargeFor(q ratelimitheader.Quota) int {
	for i, ch := range c.charges {
		if p := ch.bucket.scope.Policy; p != "" && p == q.Name {
			return i
		}
	}
	for i, ch := range c.charges {
		if cl := ch.bucket.scope; cl.Policy == "" && cl.Unit == q.Unit {
			return i
		}
	}
	return -1
}

// grow gives the bucket of the call's i-th charge units back, up to burst,
// its new size (rate its new pace): a limit learned above the one that
// sized the bucket — a provisional stand-in replaced by the published
// limit — makes it larger by as much, not emptier. Kept at its old level
// of a new size, a tier-1 bucket of 30,000 tokens became one of 2,000,000
// holding 29,000, and with 30 % of it reserved for another workload the
// next call waited 19 s while the provider reported nearly all of it
// left. Only an answer that carries a count grows a bucket, and the count
// then clamps it to what is left.
// Off the hot path: only a changed limit grows a bucket.
func (c *call) grow(ctx context.Context, now time.Time, i int, units, rate, burst float64) {
	name := c.charges[i].bucket.scope.Name
	for j, owner := range c.owners {
		if owner != i || c.demands[j].Scope != name {
			continue // a workload's Max scope keeps its own size
		}
		d := c.demands[j]
		d.Rate, d.Burst, d.Cost, d.Floor = rate, burst, -units, 0
		if err := adjustOrRefund(context.WithoutCancel(ctx), c.t.store, now, []store.Demand{d}); err != nil {
			c.t.emit(observe.Event{Kind: observe.EventStoreFailure, Scope: name, Workload: c.workload.name, Err: err})
			c.t.log.Warn("pacer: growing a bucket to the limit the provider published", "scope", name, "err", err)
		}
	}
}

// clamp lowers charge i's bucket to at most tokens. A bucket never holds
// more than its burst, so a clamp above that is skipped: a remote store is
// asked only when the answer can matter.
//
// The store brings the bucket to now before it lowers it, refilled at the
// demand's pace since it was last brought up to date. For a call of the
// scope's first burst, that is the pace now, not the one it was admitted
// at: the burst went out at the blind pace before any count, of a limit
// that may be far above the server's, and refilled at that pace between
// one answer's clamp and the next, each clamp set the bucket to what its
// count said was left rather than lowering it — and the burst's counts,
// read out of order, said up to twelve left of the server's eight
// (firstburst.go). A paced call's answer comes a round trip after a pace
// its counts set; refilled at the pace now instead, a sliding window told
// twice its limit over a 200–400 ms route spent 0.937 of it, not 0.952.
func (c *call) clamp(ctx context.Context, now time.Time, i int, tokens float64) {
	scale := -1.0 // the pace now over the pace the call was admitted at; unknown until needed
	for j, owner := range c.owners {
		if owner != i || tokens >= c.demands[j].Burst {
			continue
		}
		if scale < 0 {
			scale = 1
			if ch := c.charges[i]; ch.bucket.admittedInBurst(ch.spentAt) {
				scale = c.paceSinceAdmitted(i)
			}
		}
		d := c.demands[j]
		d.Rate *= scale
		// The response is in hand: a caller that has stopped waiting for it
		// must not stop the bucket from learning what it said.
		if err := c.t.store.Clamp(context.WithoutCancel(ctx), now, d, tokens); err != nil {
			c.t.emit(observe.Event{Kind: observe.EventStoreFailure, Scope: c.demands[j].Scope, Workload: c.workload.name, Err: err})
			c.t.log.Warn("pacer: lowering a bucket to what the provider reported", "scope", c.demands[j].Scope, "err", err)
		}
	}
}

// paceSinceAdmitted is charge i's pace now as a share of the pace its
// bucket's demand was admitted at (the first demand charge i owns: its
// scope's own; a workload's Max scope is a share of it); 1 if that was
// none.
func (c *call) paceSinceAdmitted(i int) float64 {
	for j, owner := range c.owners {
		if owner == i {
			if was := c.demands[j].Rate; was > 0 {
				now, _ := c.charges[i].bucket.pace()
				return now / was
			}
			break
		}
	}
	return 1
}

// costlyFrom remembers that a refusal at now paused the scope for wait,
// more than pace.BriefRetryAfter: for pace.CostlyFor(wait), or longer if
// an earlier one asks.
func (s *bucket) costlyFrom(now time.Time, wait time.Duration) {
	raiseTo(&s.costlyUntil, now.Add(pace.CostlyFor(wait)).UnixNano())
}
