package twilio

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/pool"
	"github.com/pacer-go/pacer/providers/internal/presetopt"
	"github.com/pacer-go/pacer/providers/internal/reqbody"
)

// A Sender is one number (or short code) of a sender pool (SenderPool).
type Sender struct {
	// Name identifies the sender in events, logs, errors and Stats.
	Name string
	// From is the sender, as a Messages POST gives it: "+15551230001",
	// "55555". Its type, and so its rate, is SenderScope's reading of it.
	From string
}

// ScopePoolSegments carries each pooled message's segments, which the
// sender it goes from is charged on its PoolSenderScope. It paces nothing:
// each sender's scope does.
const ScopePoolSegments = "twilio/pool/segments"

// PoolSenderScope names the scope that paces the messages of the pool's
// sender called name: "twilio/sender/" + name.
func PoolSenderScope(name string) string { return "twilio/sender/" + name }

// SenderPool returns the options that send Messages POSTs through a pool
// of senders of one account: each message goes out from one of them, its
// From set in the form (pool.FormField), so the caller's form leaves From
// out. It includes Preset: give it to pacer.New in Preset's place.
//
// What is per sender: its rate, by its type, as Throughput gives it (a US
// long code 1 segment a second, a toll-free number 3, a short code 100,
// a number sending outside the +1 region 10; see Figures for each quote),
// in segments, with SenderBurst, on a scope of its own (PoolSenderScope),
// since Twilio keeps a queue per number: "each of your Twilio phone
// numbers has a separate queue"
// (https://support.twilio.com/hc/en-us/articles/115002943027). The pool
// charges each message its segments (Segments of its Body) on
// ScopePoolSegments, which paces nothing, and the sender it goes from is
// then charged as many on its own scope, so long messages are paced as
// Preset paces them from one sender.
//
// What is shared: the account's cap on concurrent REST requests, which
// Preset's ScopeAccount charges every request once, whichever sender it
// goes from, so pooling never multiplies it; a 20429 lowers it for all.
//
// A Messaging Service (a MessagingServiceSid in place of From) is Twilio's
// own sender pool, choosing the number itself: send such messages through
// a Transport with Preset, not through this pool, which would add a From.
//
// A Sender with no Name or From, or two with one name, is a configuration
// error.
func SenderPool(senders ...Sender) pacer.Option {
	var errs presetopt.Errors
	o := []pacer.Option{Preset(), pacer.WithScope(pacer.Scope{Name: ScopePoolSegments, Unit: UnitSegments})}
	members := make([]pool.Member, 0, len(senders))
	for i, s := range senders {
		if strings.TrimSpace(s.From) == "" {
			errs.Add(fmt.Sprintf("twilio.SenderPool: sender %d (%q)", i+1, s.Name), fmt.Errorf("has no From"))
		}
		rate, _ := Throughput(SenderScope(s.From))
		scope := PoolSenderScope(s.Name)
		o = append(o, pacer.WithScope(pacer.Scope{Name: scope, Limit: rate, Unit: UnitSegments}))
		members = append(members, pool.Member{Name: s.Name, Apply: pool.FormField("From", s.From), Scopes: []string{scope}})
	}
	o = append(o,
		// A From in the caller's form is not the one sent: the sender's
		// own scope paces the message instead, charged its segments.
		pacer.WithRoute(func(req *http.Request, charges []pacer.Charge) []pacer.Charge {
			charges = slices.DeleteFunc(charges, func(c pacer.Charge) bool { return c.Scope != ScopeAccount })
			if req.Method != http.MethodPost || !isMessages(req.URL.Path) {
				return charges
			}
			return append(charges, pacer.Charge{Scope: ScopePoolSegments, Cost: int64(Segments(reqbody.Field(req, "Body")))})
		}),
		pacer.WithPool(pool.Config{Members: members}))
	return pacer.Options(append(o, errs.Options()...)...)
}
