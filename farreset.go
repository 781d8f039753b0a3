package pacer

// A wait beyond the maximum wait is said at once. A provider that asks for
// a pause longer than the Transport's maximum wait (a Retry-After of three
// days, a quota spent until next week) gets a pause of the maximum wait,
// no longer, so that the scope probes again and a corrected server can
// teach it back (DESIGN: no single response stops a scope beyond MaxWait).
// But a caller parked for that pause would be handed a silent wait that
// ends in another refusal: so, while the clamped pause holds, the calls it
// holds back are refused at once with the time the provider gave (a
// *ThrottledError's Reset), and the call whose answer asked for it gets a
// *QuotaError that says the same.

import (
	"fmt"
	"net/http"
	"time"

	"github.com/pacer-go/pacer/classify"
)

// farReset is a pause the provider asked for beyond the maximum wait.
// Immutable; each such answer stores a new one.
type farReset struct {
	until int64 // UnixNano the scope's pause ends: the claim holds while that pause does
	at    int64 // UnixNano when the provider says its quota returns
}

// claimFarReset records that the provider asked s to pause for claimed
// from now, when that is beyond maxWait: the pause coolDown took was
// clamped to maxWait, and until it ends, the calls it holds back are told
// when the quota returns instead of waiting (cannotWait). Called after
// coolDown, whose pause it tags. A claim within maxWait records nothing.
func (s *bucket) claimFarReset(now time.Time, claimed, maxWait time.Duration) {
	if claimed <= maxWait {
		return
	}
	s.farReset.Store(&farReset{until: s.cooldown.Load(), at: now.Add(claimed).UnixNano()})
}

// farResetAt returns when the provider says s's quota returns, and true,
// while s is held by a pause that the maximum wait clamped; false once that
// pause is over, or another replaced it. Safe for concurrent use.
func (s *bucket) farResetAt(now time.Time) (time.Time, bool) {
	f := s.farReset.Load()
	if f == nil {
		return time.Time{}, false
	}
	if until := s.cooldown.Load(); until != f.until || until <= now.UnixNano() {
		return time.Time{}, false
	}
	return time.Unix(0, f.at), true
}

// beyondMaxWait is the cause of a *ThrottledError for a call held back by
// a pause the provider asked for beyond the maximum wait.
func beyondMaxWait(now, at time.Time, left, maxWait time.Duration) error {
	return fmt.Errorf("the provider says its quota returns at %s, in %v, beyond the maximum wait (%v): "+
		"pacer refuses the scope's calls at once until it checks again in %v; raise WithMaxWait to let calls wait longer",
		at.UTC().Format(time.RFC3339), at.Sub(now).Round(time.Second), maxWait, left.Round(time.Millisecond))
}

// farRefusal returns the *QuotaError for an answer that refused the call
// and asked the scope to pause beyond the maximum wait (learn took the
// pause, claimFarReset its claim), or nil for any other answer. The answer
// is not handed back: its wait would be longer than any retry, or any
// caller, is allowed to make.
func (c *call) farRefusal(resp *http.Response, verdict classify.Verdict) *QuotaError {
	if s := resp.StatusCode; s != http.StatusTooManyRequests && s != http.StatusServiceUnavailable && !verdict.BackPressure {
		return nil
	}
	now := c.t.clock.Now()
	for i := range c.charges {
		s := c.charges[i].bucket
		if !concerns(verdict, s.scope.Name) {
			continue
		}
		if at, ok := s.farResetAt(now); ok {
			left := time.Duration(s.cooldown.Load() - now.UnixNano())
			return &QuotaError{Status: resp.StatusCode, Reset: at, Message: fmt.Sprintf(
				"it asks scope %q to wait until %s, in %v, beyond the maximum wait (%v); pacer checks again in %v, "+
					"and refuses the scope's calls at once until then; raise WithMaxWait to let calls wait longer",
				s.scope.Name, at.UTC().Format(time.RFC3339), at.Sub(now).Round(time.Second), c.t.maxWait, left.Round(time.Millisecond))}
		}
	}
	return nil
}
