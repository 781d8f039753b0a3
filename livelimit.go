package pacer

import "fmt"

// configuredLimit is a scope's configured Limit and its pace after headroom.
type configuredLimit struct {
	limit       Limit
	rate, burst float64
}

func (c *scopeClass) setLimit(l Limit, headroom float64) *configuredLimit {
	rate, burst := l.pace(headroom)
	return c.configured.Swap(&configuredLimit{limit: l, rate: rate, burst: burst})
}

// configuredPace returns the pace of the scope's configured Limit.
func (c *scopeClass) configuredPace() (rate, burst float64) {
	p := c.configured.Load()
	return p.rate, p.burst
}

// SetLimit changes the Limit of the named scope while the Transport runs,
// for every bucket of the scope, at once: the next call is paced at the
// new limit, and so is a call already waiting, which re-reads the pace
// when it next tries. Nothing is lost: the tokens in hand stay (down to the
// new burst, if it is smaller), waiting calls keep their places, calls in
// flight keep their slots. Tokens refilled since a bucket's last take are
// counted at the new rate.
//
// The new limit is the configured one from now on, and a limit the
// provider publishes combines with it as with one given to New: a published
// limit below it wins, one above it wins only if the scope is Provisional.
// A limit learned before the change is forgotten, so the change applies at
// once; the provider's next report teaches it again.
//
// Concurrency is not changed. With a shared store, the change is this
// process's alone: set it on every instance. An EventLimitChanged says who
// changed what. A scope that is not declared, or an invalid Limit, is an
// error, and nothing changes.
func (t *Transport) SetLimit(scope string, l Limit) error {
	class := t.scopes[scope]
	if class == nil {
		return fmt.Errorf("pacer: SetLimit: scope %q is not declared; declare it with WithScope", scope)
	}
	if err := l.validate(); err != nil {
		return fmt.Errorf("pacer: SetLimit: scope %q: %w", scope, err)
	}
	old := class.setLimit(l, t.headroom)
	class.eachState(func(s *scopeState) {
		s.learned.Store(nil)
		// The head's timer was set at the old pace: wake it to re-read.
		if s.waiting.Load() > 0 {
			s.headOf().signal()
		}
	})
	t.emit(Event{Kind: EventLimitChanged, Scope: scope, Limit: l, Previous: old.limit, Origin: OriginSetLimit})
	return nil
}

// eachState calls f on every bucket state the scope holds.
func (c *scopeClass) eachState(f func(*scopeState)) {
	f(c.shared)
	c.mu.Lock()
	states := make([]*scopeState, 0, len(c.keyed))
	for _, s := range c.keyed {
		states = append(states, s)
	}
	c.mu.Unlock()
	for _, s := range states {
		f(s)
	}
}

// OriginSetLimit is the Origin of an EventLimitChanged that SetLimit made in
// this process.
const OriginSetLimit = "set_limit"
