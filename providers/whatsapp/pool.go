package whatsapp

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/classify"
	"github.com/pacer-go/pacer/pool"
	"github.com/pacer-go/pacer/providers/internal/presetopt"
)

// A Number is one business phone number of a pool (PhoneNumbers).
type Number struct {
	// Name identifies the number in events, logs, errors and Stats.
	Name string
	// ID is the number's phone-number ID: each message sent through the
	// number goes to /{version}/{ID}/messages.
	ID string
	// Throughput is the number's level: Standard, High or Coexistence.
	Throughput Throughput
}

// NumberScope names the scope that paces the messages of the pool's
// number called name: "whatsapp/throughput/" + name.
func NumberScope(name string) string { return ScopeThroughput + "/" + name }

// PhoneNumbers returns the options that send messages through a pool of
// business phone numbers: each message POST goes through one of them, its
// phone-number ID put in the path in place of the one the caller's request
// names (pool.URL), so a caller writes to any one ID, or a placeholder.
// It includes Preset: give it to pacer.New in Preset's place.
//
// What is per number: its throughput, at its own level, on its own scope
// (NumberScope), since Meta states it of each number: "For each registered
// business phone number, Cloud API supports up to 80 messages per second
// (mps) by default, and up to 1,000 mps by automatic upgrade"
// (https://developers.facebook.com/documentation/business-messaging/whatsapp/throughput,
// read 2026-12-02). An error 130429 slows the number that drew it, and the
// message goes to another number.
//
// What is shared, and not paced: Meta's page goes on "business phone
// numbers, regardless of throughput, are still subject to their WhatsApp
// Business Account rate limit and template messaging limits", and gives
// no figure for the first; the messaging limit (unique users reached
// outside a customer service window in 24 hours) "is calculated and set at
// the business portfolio level and are shared by all business phone
// numbers within a portfolio"
// (https://developers.facebook.com/documentation/business-messaging/whatsapp/messaging-limits).
// pacer cannot tell which message opens a conversation nor count unique
// users, so it paces neither, for one number or many: pooling numbers
// raises the pool's throughput, never those limits (see Figures). The pair
// rate limit is per number and user, but the pool keeps one bucket per
// user for all its numbers (the bucket is chosen before the number is): a
// user is written to no faster than one number may, the safe side.
//
// A Number with no Name or ID, two with one name, or a level other than
// Standard, High and Coexistence, is a configuration error.
func PhoneNumbers(numbers ...Number) pacer.Option {
	var errs presetopt.Errors
	o := []pacer.Option{Preset(Standard)}
	members := make([]pool.Member, 0, len(numbers))
	scopes := make([]string, 0, len(numbers))
	for i, n := range numbers {
		what := fmt.Sprintf("whatsapp.PhoneNumbers: number %d (%q)", i+1, n.Name)
		switch {
		case n.ID == "" || strings.Contains(n.ID, "/"):
			errs.Add(what, fmt.Errorf("the ID %q is not a phone-number ID", n.ID))
		case n.Throughput < Standard || n.Throughput > Coexistence:
			errs.Add(what, fmt.Errorf("no such Throughput %d; use whatsapp.Standard, High or Coexistence", int(n.Throughput)))
		}
		scope := NumberScope(n.Name)
		scopes = append(scopes, scope)
		o = append(o, pacer.WithScope(pacer.Scope{Name: scope, Limit: n.Throughput.Limit()}))
		members = append(members, pool.Member{Name: n.Name, Apply: pool.URL(withNumber(n.ID)), Scopes: []string{scope}})
	}
	o = append(o,
		// The caller's path names no number of the pool's: the number's
		// own scope paces the message instead.
		pacer.WithRoute(func(_ *http.Request, charges []pacer.Charge) []pacer.Charge {
			return slices.DeleteFunc(charges, func(c pacer.Charge) bool { return c.Scope == ScopeThroughput })
		}),
		// A 130429 slows the number's own scope, the only one of these a
		// call is charged to.
		pacer.WithClassifier(func(resp *http.Response, body []byte) classify.Verdict {
			if v := Classify(resp, body); slices.Equal(v.Scopes, throughputScopes) {
				v.Scopes = scopes
				return v
			}
			return classify.Verdict{}
		}),
		pacer.WithPool(pool.Config{Members: members}))
	return pacer.Options(append(o, errs.Options()...)...)
}

// withNumber returns a rewrite that puts id in a messages path, in place
// of the phone-number ID there.
func withNumber(id string) func(*url.URL) {
	return func(u *url.URL) {
		parts := strings.Split(strings.Trim(u.Path, "/"), "/")
		if _, ok := phoneNumberID(u.Path); !ok {
			return // not a messages POST: nothing to put the number in
		}
		parts[len(parts)-2] = id
		u.Path, u.RawPath = "/"+strings.Join(parts, "/"), ""
	}
}
