package pacer

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"sync/atomic"
	"time"
)

// DefaultMaxWait is the longest pause a provider's header can impose unless
// WithMaxWait says otherwise. A server that answers "Retry-After: 999999999"
// must not park a goroutine for 31 years.
const DefaultMaxWait = 10 * time.Minute

// The AIMD constants. A 429 that teaches nothing cuts a scope's rate (or,
// for a scope that limits only concurrency, its cap on calls in flight) to
// cutFactor of what it was — once for the calls admitted before a cut, whose
// 429s carry old news, the way TCP cuts once a round trip. Every success then
// adds back raiseShare of the rate the cut left, so climbing back takes about
// ln(1/cutFactor)/raiseShare ≈ 800 successes: one 429 in several hundred
// calls at the steady state, with the rate between 85% and 100% of the limit.
const (
	cutFactor  = 0.85
	raiseShare = 0.0002
	minFactor  = 1.0 / 1024
)

// pace is a bucket's rate and capacity.
type pace struct{ rate, burst float64 }

// feedback is what a scope's bucket has learned from the provider. Every
// field is read on the hot path without a lock.
type feedback struct {
	learned  atomic.Pointer[pace] // a limit the provider published; nil if none
	factor   atomic.Uint64        // AIMD: float64 bits of the rate's share, 0 meaning 1
	admitted atomic.Int64         // calls admitted, to tell which 429s are news
	spent    atomic.Int64         // units admitted, to tell what was sent since a response
	cooldown atomic.Int64         // UnixNano until which nothing may be sent; 0 if none

	// Under the scope state's mu:
	cutAt int64   // the admitted count at the last cut
	raise float64 // what each success adds to factor since the last cut
}

// pace returns the scope state's current pace: the provider's published
// limit when it taught one, else the configured one, times the AIMD factor.
func (s *scopeState) pace() (rate, burst float64) {
	rate, burst = s.class.configuredPace()
	if p := s.learned.Load(); p != nil {
		rate, burst = p.rate, p.burst
	}
	return rate * s.rateFactor(), burst
}

func (s *scopeState) rateFactor() float64 {
	if bits := s.factor.Load(); bits != 0 {
		return math.Float64frombits(bits)
	}
	return 1
}

// coolDown stops the scope until now+d, unless it is stopped longer already.
func (c *call) coolDown(s *scopeState, now time.Time, d time.Duration) {
	until := now.Add(d).UnixNano()
	for {
		old := s.cooldown.Load()
		if old >= until {
			return
		}
		if s.cooldown.CompareAndSwap(old, until) {
			c.t.emit(Event{Kind: EventCooldownStarted, Scope: s.class.Name, Workload: c.workload.name, Wait: d})
			return
		}
	}
}

// cooledDown reports whether the scope is free of any pause at now, and
// says so, once, when a pause has just ended.
func (c *call) cooledDown(s *scopeState, now time.Time) (time.Duration, bool) {
	until := s.cooldown.Load()
	if until == 0 {
		return 0, true
	}
	if left := time.Duration(until - now.UnixNano()); left > 0 {
		return left, false
	}
	if s.cooldown.CompareAndSwap(until, 0) {
		c.t.emit(Event{Kind: EventCooldownEnded, Scope: s.class.Name, Workload: c.workload.name})
	}
	return 0, true
}

// learnLimit takes a limit the provider published as the scope's pace, at
// the Transport's headroom, unless the configured limit is lower and not
// provisional. A published limit that rises back above the configured one
// gives the configured pace back.
//
// A quota whose reset is further off than its window counts a longer
// period than the window says (a day's requests reported beside a
// per-minute limit, say): it may lower the pace, never raise it.
func (s *scopeState) learnLimit(q Quota, headroom float64, log *slog.Logger) {
	l := Limit{Count: int(min(q.Limit, math.MaxInt32)), Per: q.Window}
	rate, burst := l.pace(headroom)
	c := s.class
	cfg := c.configured.Load() // a limit set at runtime merges as one set at New
	if cfg.rate > 0 {
		mayRaise := c.Provisional && q.Reset <= q.Window
		if cfg.rate == rate || cfg.rate < rate && !mayRaise {
			// The configured limit is what the provider allows, or below it.
			if s.learned.Load() != nil {
				s.learned.Store(nil)
			}
			return
		}
		// Keep the configured bucket's shape: one that holds a full minute
		// of tokens, so that any request within the limit fits, still does.
		burst = max(1, cfg.burst*rate/cfg.rate)
	}
	if p := s.learned.Load(); p != nil && p.rate == rate && p.burst == burst {
		return
	}
	s.learned.Store(&pace{rate, burst})
	if cfg.rate == 0 {
		return // nothing configured to say it replaces
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
}

// cut lowers the scope's rate after a 429 that taught nothing else, for a
// call admitted when the admitted count was admittedAt.
func (s *scopeState) cut(admittedAt int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if admittedAt <= s.cutAt {
		return // sent before the last cut, at the old rate
	}
	s.cutAt = s.admitted.Load()
	f := max(minFactor, s.rateFactor()*cutFactor)
	s.raise = f * raiseShare
	s.factor.Store(math.Float64bits(f))
}

// succeeded raises a cut rate additively back toward the full rate.
func (s *scopeState) succeeded() {
	for {
		bits := s.factor.Load()
		if bits == 0 {
			return // at the full rate: the common case costs one load
		}
		f := math.Float64frombits(bits)
		s.mu.Lock()
		raise := s.raise
		s.mu.Unlock()
		next := math.Float64bits(f + raise)
		if f+raise >= 1 {
			next = 0
		}
		if s.factor.CompareAndSwap(bits, next) {
			return
		}
	}
}

// learn reads what the response says about the scopes the call was charged
// to, and adjusts them for every caller:
//
//   - a quota's published limit becomes the scope's pace (see learnLimit);
//   - a quota's remaining count clamps the bucket, less what was sent since;
//     none remaining with a reset stops the scope until the reset;
//   - a 429 or 503 with Retry-After (or a classifier's Verdict.Wait) stops every
//     scope of the call until then; the bucket is emptied as well, so the
//     restart is paced, not a stampede;
//   - a 429 that teaches nothing else empties the bucket and cuts the rate,
//     or a scope's cap on calls in flight when it has no rate (AIMD), and
//     successes raise it back;
//   - a classifier that names the scopes a response concerns
//     (Verdict.Scopes) confines the last two to them.
//
// Waits the headers ask for are clamped to the Transport's maximum wait.
func (c *call) learn(ctx context.Context, resp *http.Response, verdict Verdict) {
	status := resp.StatusCode
	if verdict.Quota != "" {
		return // a spent quota is no reason to slow down the scope
	}
	if verdict.BackPressure {
		status = http.StatusTooManyRequests
	}
	quiet := quotaHeaderFamilies(resp.Header) == 0
	if quiet && status < 400 {
		// Most responses say nothing about limits: keep them cheap.
		for _, ch := range c.charges {
			ch.state.succeeded()
		}
		return
	}
	t := c.t
	now := t.clock.Now()
	taught := false
	var quotas []Quota
	if !quiet {
		quotas = ParseQuotas(resp.Header, now)
	}
	for _, q := range quotas {
		i := c.chargeFor(q)
		if i < 0 {
			continue
		}
		s := c.charges[i].state
		if q.Limit > 0 && q.Window > 0 {
			s.learnLimit(q, t.headroom, t.log)
			taught = true
		}
		if q.Remaining < 0 {
			continue
		}
		// What was admitted since this call may not be in the provider's
		// count yet: take it off, in the scope's own units.
		left := float64(q.Remaining) - float64(s.spent.Load()-c.charges[i].spentAt)
		if q.Remaining == 0 && q.Reset > 0 {
			reset := min(q.Reset, t.maxWait)
			c.coolDown(s, now, reset)
			rate, _ := s.pace()
			left = min(left, -rate*reset.Seconds())
			taught = true
		}
		c.clamp(ctx, now, i, left)
	}
	switch status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		// Only the scopes the response concerns: those the classifier
		// named, else all of the call's.
		for _, ch := range c.charges {
			if verdict.concerns(ch.state.class.Name) {
				t.emit(Event{Kind: EventRejected, Scope: ch.state.class.Name, Workload: c.workload.name, Status: resp.StatusCode})
			}
		}
		if status == http.StatusTooManyRequests && !taught {
			for i, ch := range c.charges {
				if verdict.concerns(ch.state.class.Name) {
					ch.state.cut(ch.admittedAt)
					c.clamp(ctx, now, i, 0) // the provider has nothing left
				}
			}
		}
		wait, ok := RetryAfter(resp.Header, now)
		if !ok && verdict.Wait > 0 {
			wait, ok = verdict.Wait, true // the provider's documented wait
		}
		if ok {
			wait = min(wait, t.maxWait)
			for i, ch := range c.charges {
				if !verdict.concerns(ch.state.class.Name) {
					continue
				}
				c.coolDown(ch.state, now, wait)
				// At the pace after any cut, the bucket is back to empty —
				// not full — when the pause ends.
				rate, _ := ch.state.pace()
				c.clamp(ctx, now, i, -rate*wait.Seconds())
			}
		}
	default:
		if status < 400 {
			for _, ch := range c.charges {
				ch.state.succeeded()
			}
		}
	}
}

// chargeFor returns the index of the charge a quota reports on, or -1: the
// scope that names the quota's policy, else the first scope counted in the
// quota's unit that names no policy.
func (c *call) chargeFor(q Quota) int {
	for i, ch := range c.charges {
		if p := ch.state.class.Policy; p != "" && p == q.Name {
			return i
		}
	}
	for i, ch := range c.charges {
		if cl := ch.state.class; cl.Policy == "" && cl.Unit == q.Unit {
			return i
		}
	}
	return -1
}

// clamp lowers charge i's bucket to at most tokens. A bucket never holds
// more than its burst, so a clamp above that is skipped: a remote store is
// asked only when the answer can matter.
func (c *call) clamp(ctx context.Context, now time.Time, i int, tokens float64) {
	for j, owner := range c.owners {
		if owner != i || tokens >= c.demands[j].Burst {
			continue
		}
		// The response is in hand: a caller that has stopped waiting for it
		// must not stop the bucket from learning what it said.
		if err := c.t.store.Clamp(context.WithoutCancel(ctx), now, c.demands[j], tokens); err != nil {
			c.t.emit(Event{Kind: EventStoreFailure, Scope: c.demands[j].Scope, Workload: c.workload.name, Err: err})
			c.t.log.Warn("pacer: lowering a bucket to what the provider reported", "scope", c.demands[j].Scope, "err", err)
		}
	}
}
