// Package whatsapp is pacer's preset for the WhatsApp Cloud API: the
// throughput of each business phone number, in messages per second, and the
// pair rate limit between one business number and one WhatsApp user.
//
// Last verified: 2026-12-01, against Meta's "Throughput" page
// (https://developers.facebook.com/documentation/business-messaging/whatsapp/throughput).
// Figures lists every figure with its source and quote, and those that stay
// unverified with the reason: the pair rate (one message every six seconds)
// and the error codes other than 130429, whose rows on Meta's error-codes
// page could not be read. "pacer presets whatsapp" prints them. Override any
// scope with a WithScope of the same name given to pacer.New after Preset.
//
// A number's throughput is "inclusive of inbound and outbound messages":
// the messages users send to the number spend it too, and pacer cannot see
// them. A number that receives messages should reserve its peak inbound rate
// with Throughput.ReserveInbound.
package whatsapp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/classify"
	"github.com/pacer-go/pacer/providers/internal/presetopt"
	"github.com/pacer-go/pacer/providers/internal/reqbody"
)

// Throughput is a business phone number's throughput level.
type Throughput int

const (
	// Standard: "up to 80 messages per second (mps) by default".
	Standard Throughput = iota
	// High: "up to 1,000 mps by automatic upgrade" for eligible numbers.
	High
	// Coexistence: numbers "in use with both the WhatsApp Business app and
	// Cloud API have a fixed throughput of 20 mps".
	Coexistence
)

// Messages per second per business phone number, "inclusive of inbound and
// outbound messages and all message types" (see ReserveInbound), from
// https://developers.facebook.com/documentation/business-messaging/whatsapp/throughput.
const (
	standardMPS    = 80
	highMPS        = 1_000
	coexistenceMPS = 20
)

// The pair rate limit: one message every 6 seconds from one business phone
// number to the same WhatsApp user; above it the API answers error 131056.
// UNVERIFIED: Meta's throughput page names the limit but not its number,
// and the page that states it ("Pair rate limits" in the Cloud API
// overview) could not be read; the figure is the one third-party pages
// agree on. They also speak of short bursts borrowed from later sends;
// pacer does not rely on them.
const pairInterval = 6 * time.Second

// The scopes the preset declares.
const (
	ScopeThroughput = "whatsapp/throughput" // one bucket per business phone number ID
	ScopePair       = "whatsapp/pair"       // one bucket per phone number ID and recipient
)

// The error codes Meta returns for the two limits: 130429 (throughput, from
// the throughput page) and 131056 (pair rate; UNVERIFIED, its row on
// https://developers.facebook.com/documentation/business-messaging/whatsapp/support/error-codes
// could not be read).
const (
	codeThroughput = 130429
	codePairRate   = 131056
)

// Limit returns the published throughput of level t.
func (t Throughput) Limit() pacer.Limit {
	switch t {
	case High:
		return pacer.PerSecond(highMPS)
	case Coexistence:
		return pacer.PerSecond(coexistenceMPS)
	}
	return pacer.PerSecond(standardMPS)
}

// ReserveInbound returns an option, given to pacer.New after Preset, that
// paces the number's outbound messages at level t less the inbound messages
// it expects at most, in messages per second: Meta counts both against the
// same throughput, and pacer sees only the outbound ones. It fails when
// inboundPerSecond is negative, or leaves nothing to send with.
func (t Throughput) ReserveInbound(inboundPerSecond int) (pacer.Option, error) {
	level := t.Limit()
	if inboundPerSecond < 0 || inboundPerSecond >= level.Count {
		return nil, fmt.Errorf("whatsapp: ReserveInbound(%d): the inbound rate must be at least 0 and below the number's throughput of %v; "+
			"a number that receives that much has no room to send", inboundPerSecond, level)
	}
	return pacer.WithScope(pacer.Scope{Name: ScopeThroughput,
		Limit: pacer.Limit{Count: level.Count - inboundPerSecond, Per: level.Per}}), nil
}

// PairLimit returns the pair rate limit: one message every six seconds.
func PairLimit() pacer.Limit { return pacer.Limit{Count: 1, Per: pairInterval} }

// Preset returns the options for sending through the Cloud API from
// numbers of throughput level t. Options given to pacer.New after it
// override what it sets. A level other than Standard, High and Coexistence
// is a configuration error.
//
// A POST to /{version}/{phone-number-id}/messages is charged to
// ScopeThroughput keyed by the phone number ID from the path, and to
// ScopePair keyed by that ID and the recipient, the "to" of the JSON body
// (read through GetBody). Other Graph API calls are left to the charges
// before the route.
//
// Classify marks Meta's errors 130429 and 131056 as back-pressure that was
// never processed: the message was refused, not sent, so it may be sent
// again once pacer has waited.
func Preset(t Throughput) pacer.Option {
	preset := []pacer.Option{
		pacer.WithScope(pacer.Scope{Name: ScopeThroughput, Limit: t.Limit()}),
		pacer.WithScope(pacer.Scope{Name: ScopePair, Limit: PairLimit()}),
		pacer.WithRoute(Route),
		pacer.WithClassifier(Classify),
	}
	if t < Standard || t > Coexistence {
		var errs presetopt.Errors
		errs.Add(fmt.Sprintf("whatsapp.Preset(%d)", int(t)), fmt.Errorf("no such Throughput; use whatsapp.Standard, High or Coexistence"))
		preset = append(preset, errs.Options()...)
	}
	return pacer.Options(preset...)
}

// Route charges a messages POST to its phone number's and its pair's
// buckets, in place of the charges before it. Preset installs it.
func Route(req *http.Request, charges []pacer.Charge) []pacer.Charge {
	if req.Method != http.MethodPost {
		return charges
	}
	id, ok := phoneNumberID(req.URL.Path)
	if !ok {
		return charges
	}
	charges = append(charges[:0], pacer.Charge{Scope: ScopeThroughput, Key: id})
	if to := reqbody.Field(req, "to"); to != "" {
		charges = append(charges, pacer.Charge{Scope: ScopePair, Key: id + "→" + normalize(to)})
	}
	return charges
}

// phoneNumberID returns the ID in a path /v{version}/{phone-number-id}/messages
// (or without the version, which Graph API defaults).
func phoneNumberID(path string) (string, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) == 3 && strings.HasPrefix(parts[0], "v") {
		parts = parts[1:]
	}
	if len(parts) != 2 || parts[1] != "messages" || parts[0] == "" {
		return "", false
	}
	return parts[0], true
}

// normalize keeps the digits of a phone number, so that "+1 555-0100" and
// "15550100" are the same recipient.
func normalize(to string) string {
	var b strings.Builder
	for _, r := range to {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return to // not a phone number (a user ID): keep it as it is
	}
	return b.String()
}

// graphError is the shape of a Graph API error response:
// {"error": {"message": "...", "type": "OAuthException", "code": 130429,
// "error_data": {...}, "fbtrace_id": "..."}}.
type graphError struct {
	Error struct {
		Code int `json:"code"`
	} `json:"error"`
}

// Classify reads a Cloud API error response: 130429 and 131056 are
// back-pressure, and were never processed. Other codes, 131049, 131048 and
// 80007 among them, are left to the default (a final error): their rows on
// Meta's error-codes page could not be read, and only third-party copies
// say what they mean (see Figures). Each concerns its own limit
// only: a pair rate error slows the pair, not the number's messages to
// everyone else, and a throughput error the number, not the pair.
// Preset installs it.
func Classify(_ *http.Response, body []byte) classify.Verdict {
	var e graphError
	if json.Unmarshal(body, &e) != nil {
		return classify.Verdict{}
	}
	switch e.Error.Code {
	case codeThroughput:
		return classify.Verdict{BackPressure: true, NeverProcessed: true, Scopes: throughputScopes}
	case codePairRate:
		return classify.Verdict{BackPressure: true, NeverProcessed: true, Scopes: pairScopes}
	}
	return classify.Verdict{}
}

var (
	throughputScopes = []string{ScopeThroughput}
	pairScopes       = []string{ScopePair}
)
