// Package pool is the vocabulary of a pool of members behind one pacer
// Transport (pacer.WithPool): several API keys, deployments or sender
// numbers, each paced by its own scopes and what its own responses say,
// one of them chosen for each call.
//
// A Member is a name and a way to apply itself to the request that is sent.
// The name is the only thing of a member that pacer ever shows: events,
// logs, errors and Stats carry it, never what Apply sets (a key, a token, a
// sender number). The caller's own request is never modified: Apply is
// given a clone.
//
// This package holds no state and does no I/O; the Transport does the
// choosing (pacer's pool.go).
package pool

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Config declares a pool on a Transport.
//
// A call goes to the member that can admit it soonest on every scope it
// charges; on a tie, to the one whose scopes have the most headroom (the
// pace what the provider reports allows); with Affinity, to the same member
// for the same affinity key while it can admit at once. Admission is all or
// nothing: the chosen member's buckets are taken together, and the next
// member is tried only when that take is refused.
//
// The zero Config declares no members, which WithPool refuses.
type Config struct {
	// Members, at least one; names unique and not empty.
	Members []Member
	// Scopes are scopes (declared with pacer.WithScope) of which every
	// member is a key: each member gets its own bucket of each, with the
	// scope's limits, and learns it from its own responses' headers, as
	// any keyed bucket does. A scope marked Provisional lets each member's
	// published limit replace the stand-in, so members of different tiers
	// are paced at their own limits.
	Scopes []string
	// SharedQuota are scopes every member charges once, on one bucket: the
	// limit a provider enforces above its members (an OpenAI project, a
	// Twilio account), which pooling must never multiply. A refusal
	// cools the member that drew it, not the shared scope.
	SharedQuota []string
	// Affinity, when set, returns a key (a conversation, a prompt-cache
	// prefix) that keeps calls on one member while it can admit them at
	// once; "" means none. It must not modify the request, and must not
	// return a credential: the key is hashed, never shown.
	Affinity func(*http.Request) string
}

// A Member is one key, deployment or sender of a pool. A Member is a value:
// WithPool copies the list, and the Transport calls Apply from many
// goroutines at once, so Apply must be safe for concurrent use (the ones
// this package returns are). The zero Member has no Name and no Apply,
// which WithPool refuses.
type Member struct {
	// Name identifies the member in events, logs, errors, metrics and
	// Stats, and, in a fleet sharing a store, on every instance: the same
	// name is the same member. It must not be a credential, and must be
	// printable text.
	Name string
	// Apply sets the member on the clone of the request that is sent: a
	// header (Header, Bearer), a URL (URL), a form field (FormField). An
	// error fails the call with it, unsent; it must not contain the
	// credential.
	Apply func(*http.Request) error
	// Scopes are the member's own scopes (declared with pacer.WithScope),
	// charged on their one bucket: a per-member limit configured rather
	// than learned (a sender number's rate, a deployment's quota).
	Scopes []string
}

// Validate reports what is wrong with c, naming members by position and
// name only.
func (c Config) Validate() error {
	var errs []error
	if len(c.Members) == 0 {
		errs = append(errs, errors.New("WithPool: the pool has no members; give it at least one Member"))
	}
	seen := make(map[string]bool, len(c.Members))
	for i, m := range c.Members {
		switch {
		case m.Name == "":
			errs = append(errs, fmt.Errorf("WithPool: member %d has no Name; name it (the name is what events, logs and Stats show)", i+1))
		case seen[m.Name]:
			errs = append(errs, fmt.Errorf("WithPool: two members are named %q; names must be unique", m.Name))
		case !printable(m.Name):
			errs = append(errs, fmt.Errorf("WithPool: member %d's Name %q holds a control character or invalid UTF-8; name it in printable text (it is a label in metrics and a key in a shared store)", i+1, m.Name))
		}
		seen[m.Name] = true
		if m.Apply == nil {
			errs = append(errs, fmt.Errorf("WithPool: member %q has no Apply; set one (pool.Header, pool.Bearer, pool.URL, pool.FormField)", m.Name))
		}
	}
	return errors.Join(errs...)
}

// printable reports whether s is valid UTF-8 without control characters.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// Header returns an Apply that sets header name to value.
func Header(name, value string) func(*http.Request) error {
	return func(r *http.Request) error {
		r.Header.Set(name, value)
		return nil
	}
}

// Bearer returns an Apply that sets "Authorization: Bearer token".
func Bearer(token string) func(*http.Request) error {
	return Header("Authorization", "Bearer "+token)
}

// URL returns an Apply that rewrites the clone's URL (an Azure deployment,
// a WhatsApp phone-number id). rewrite is given the clone's own copy.
func URL(rewrite func(*url.URL)) func(*http.Request) error {
	return func(r *http.Request) error {
		rewrite(r.URL)
		r.Host = "" // the URL's host is the one sent
		return nil
	}
}

// FormField returns an Apply that sets field name to value in a request
// whose body is a form (application/x-www-form-urlencoded): Twilio's From,
// say. The clone gets a new body, with GetBody and ContentLength set; a
// body without GetBody is read once, so such a call goes to one member
// only.
func FormField(name, value string) func(*http.Request) error {
	return func(r *http.Request) error {
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
			return fmt.Errorf("pool.FormField: the request's Content-Type is %q; a form field needs application/x-www-form-urlencoded", ct)
		}
		var raw []byte
		if r.Body != nil && r.Body != http.NoBody {
			b, err := io.ReadAll(r.Body)
			r.Body.Close()
			if err != nil {
				return fmt.Errorf("pool.FormField: reading the form: %w", err)
			}
			raw = b
		}
		form, err := url.ParseQuery(string(raw))
		if err != nil {
			return fmt.Errorf("pool.FormField: the body is not a form: %w", err)
		}
		form.Set(name, value)
		body := []byte(form.Encode())
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
}

// A State says whether a member takes calls.
type State string

const (
	Ready  State = "ready"  // takes calls
	Parked State = "parked" // its quota is spent, or the caller parked it: no calls until Until, then one probes it
	Out    State = "out"    // it answered 401: out of rotation until put back
	// Removed: another instance of the fleet removed it from the pool
	// (Transport.RemoveMember); no calls until it is added or put back.
	Removed State = "removed"
)

// MemberStats describes one member of a pool (pacer.Stats.Members).
type MemberStats struct {
	Name  string
	State State
	// Until is when a parked member is tried again; zero otherwise.
	Until time.Time
	// Why says what put the member in its State; "" when Ready.
	Why string
	// Admitted counts the calls sent through the member; Refused those the
	// provider refused (429, 503, 401, 402 or a spent quota); RotatedAway
	// those it refused that went on to another member.
	Admitted, Refused, RotatedAway int64
	// Cooldown is what is left of a pause the provider asked of the
	// member's own scopes; 0 when none.
	Cooldown time.Duration
}
