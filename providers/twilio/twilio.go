// Package twilio is pacer's preset for Twilio's REST API: the account's cap
// on concurrent requests, the messaging throughput of each sender (long
// code, toll-free, short code), keyed by the From number of a Messages POST
// and counted in message segments, and Twilio's rule that a request refused
// with error 20429 was never processed, so that even a POST can be retried.
//
// Last verified: 2026-12-01. Figures lists every figure with its source and
// quote, and the ones that stay unverified; "pacer presets twilio" prints
// them. Override any of them with a WithScope of the same name given to
// pacer.New after Preset: a short code with purchased throughput, say,
//
//	pacer.New(nil, twilio.Preset(),
//		pacer.WithScope(pacer.Scope{Name: twilio.ScopeShortCode, Unit: twilio.UnitSegments,
//			Limit: pacer.PerSecond(400)}))
package twilio

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/classify"
	"github.com/pacer-go/pacer/providers/internal/reqbody"
)

// The scopes the preset declares.
const (
	// ScopeAccount caps the account's concurrent REST requests.
	ScopeAccount = "twilio/account"
	// The sender scopes pace Messages POSTs, one bucket per From number.
	ScopeLongCode      = "twilio/messages/long-code"
	ScopeTollFree      = "twilio/messages/toll-free"
	ScopeShortCode     = "twilio/messages/short-code"
	ScopeInternational = "twilio/messages/international"
)

// UnitSegments is the unit of the sender scopes: Twilio releases messages at
// a number of message segments per second, so a three-segment SMS costs
// three.
const UnitSegments = "segments"

// Twilio returns error 20429 when "your account exceeds allowed concurrency
// to Twilio's REST API", and does not publish the cap
// (https://www.twilio.com/docs/api/errors/20429). 100 is the default that
// third-party guides report and that Twilio raises on request; set yours with
// WithScope(pacer.Scope{Name: ScopeAccount, Concurrency: n}). A 20429 lowers
// it for a while, as a 429 lowers a rate, in case yours is lower still.
const accountConcurrency = 100

// Outbound message segments per second, by sender: a US long code 1 and a
// short code "over 100" (https://www.twilio.com/docs/api/errors/21611), a
// US toll-free number 3 toward the US and Canada, and any number sending
// outside the +1 region 10 ("Toll-Free SMS and MMS messaging throughput",
// https://support.twilio.com/hc/en-us/articles/4411046744987). Twilio
// queues what exceeds them rather than refusing it, up to senderQueueHours
// of a sender's segments ("Understanding Twilio Rate Limits and Message
// Queues", https://support.twilio.com/hc/en-us/articles/115002943027);
// pacing here keeps that queue, and the latency it adds, to at most
// SenderBurst segments.
const (
	longCodeMPS      = 1
	tollFreeMPS      = 3
	internationalMPS = 10
	shortCodeMPS     = 100
	senderQueueHours = 10
)

// codeTooManyRequests is the error code of Twilio's 429 for too many
// concurrent requests (https://www.twilio.com/docs/api/errors/20429).
const codeTooManyRequests = 20429

// MaxBodyChars is the longest Body Twilio accepts: "The Body parameter for
// an outgoing message can be up to 1,600 characters"
// (https://www.twilio.com/docs/api/errors/21617). Twilio recommends at most
// 320 characters for SMS, but sends up to this.
const MaxBodyChars = 1600

// SenderBurst is how many segments a sender's bucket holds. A bucket must
// hold the longest message Twilio accepts to let it through at all: 1,600
// UCS-2 characters make 24 segments of 67 (1,600 GSM-7 characters, 11 of
// 153). Twilio queues what arrives faster than the sender's rate and
// releases it at that rate, so at most SenderBurst segments wait in its
// queue: 24 seconds on a long code, far below the 10 hours of segments a
// sender's queue holds before Twilio refuses more (error 21611).
// Only a body over MaxBodyChars, which Twilio refuses too (error 21617),
// fails with pacer.ErrExceedsCapacity.
const SenderBurst = (MaxBodyChars + ucs2MultiSegment - 1) / ucs2MultiSegment

// Characters per segment, https://www.twilio.com/docs/glossary/what-sms-character-limit.
const (
	gsmSingleSegment  = 160
	gsmMultiSegment   = 153
	ucs2SingleSegment = 70
	ucs2MultiSegment  = 67
)

// Throughput returns the published throughput of a sender scope, in message
// segments per second, with SenderBurst, and false for a name that is not
// one.
func Throughput(scope string) (pacer.Limit, bool) {
	mps := map[string]int{ScopeLongCode: longCodeMPS, ScopeTollFree: tollFreeMPS,
		ScopeShortCode: shortCodeMPS, ScopeInternational: internationalMPS}[scope]
	if mps == 0 {
		return pacer.Limit{}, false
	}
	return pacer.Limit{Count: mps, Per: time.Second, Burst: SenderBurst}, true
}

// Preset returns the options for calling Twilio's REST API. Options given
// to pacer.New after it override what it sets.
//
// Every request is charged to ScopeAccount, which caps calls in flight. A
// POST to an account's Messages resource with a From is also charged to
// the sender scope that SenderScope names for it, keyed by From, at the
// message's estimated segment count (see Segments). A message sent through
// a Messaging Service (MessagingServiceSid, no From) has no sender to key
// by: Twilio spreads it over the service's pool, so only the account cap
// applies.
//
// A 429 whose body carries Twilio's error code 20429 is classified as never
// processed: Twilio documents that such a request "is never processed and is
// always safe to retry", so pacer retries it even as a POST without an
// idempotency key. Any other failed POST (a 500, say) is not sent twice.
func Preset() pacer.Option {
	preset := []pacer.Option{
		pacer.WithScope(pacer.Scope{Name: ScopeAccount, Concurrency: accountConcurrency}),
	}
	for _, s := range []string{ScopeLongCode, ScopeTollFree, ScopeShortCode, ScopeInternational} {
		l, _ := Throughput(s)
		preset = append(preset, pacer.WithScope(pacer.Scope{Name: s, Limit: l, Unit: UnitSegments}))
	}
	preset = append(preset, pacer.WithRoute(Route), pacer.WithClassifier(Classify))
	return pacer.Options(preset...)
}

// Route charges a request to ScopeAccount and, for a Messages POST, to its
// sender's scope, in place of the charges before it. Preset installs it.
// It reads the form body through GetBody and never consumes it.
func Route(req *http.Request, charges []pacer.Charge) []pacer.Charge {
	charges = append(charges[:0], pacer.Charge{Scope: ScopeAccount})
	if req.Method != http.MethodPost || !isMessages(req.URL.Path) {
		return charges
	}
	from := reqbody.Field(req, "From")
	if from == "" {
		return charges
	}
	return append(charges, pacer.Charge{Scope: SenderScope(from), Key: from, Cost: int64(Segments(reqbody.Field(req, "Body")))})
}

// isMessages reports whether path is an account's Messages list resource,
// /2010-04-01/Accounts/{AccountSid}/Messages.json.
func isMessages(path string) bool {
	rest, ok := strings.CutPrefix(path, "/2010-04-01/Accounts/")
	if !ok {
		return false
	}
	sid, resource, ok := strings.Cut(rest, "/")
	return ok && sid != "" && (resource == "Messages.json" || resource == "Messages")
}

// SenderScope names the scope that paces messages from the sender from:
// ScopeShortCode for a five- or six-digit short code, ScopeTollFree for a
// North American toll-free number (+1 800, 833, 844, 855, 866, 877, 888),
// ScopeLongCode for any other +1 number, and ScopeInternational for the
// rest (numbers outside North America, alphanumeric sender IDs, channel
// addresses such as "whatsapp:+…").
func SenderScope(from string) string {
	if n := len(from); n >= 5 && n <= 6 && allDigits(from) {
		return ScopeShortCode
	}
	if national, ok := strings.CutPrefix(from, "+1"); ok && len(national) == 10 && allDigits(national) {
		switch national[:3] {
		case "800", "833", "844", "855", "866", "877", "888":
			return ScopeTollFree
		}
		return ScopeLongCode
	}
	return ScopeInternational
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// Segments estimates the message segments of an SMS body: 160 GSM-7
// characters fit in one segment and 153 in each segment of a longer message;
// a body with any character outside GSM-7 is sent as UCS-2, 70 UTF-16 units
// in one segment and 67 in each of a longer one
// (https://www.twilio.com/docs/glossary/what-sms-character-limit). An empty
// body (a media-only message) counts as one.
func Segments(body string) int {
	units, single, multi := 0, gsmSingleSegment, gsmMultiSegment
	for _, r := range body {
		switch {
		case strings.ContainsRune(gsm7Basic, r):
			units++
		case strings.ContainsRune(gsm7Extension, r):
			units += 2 // an escape, then the character
		default:
			single, multi = ucs2SingleSegment, ucs2MultiSegment
		}
	}
	if single == ucs2SingleSegment {
		units = len(utf16.Encode([]rune(body)))
	}
	if units <= single {
		return 1
	}
	return int(math.Ceil(float64(units) / float64(multi)))
}

// The GSM 03.38 default alphabet, and its extension table's characters.
const (
	gsm7Basic = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?" +
		"¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
	gsm7Extension = "^{}\\[~]|€\f"
)

// errorBody is the shape of Twilio's REST error responses:
// {"code": 20429, "message": "Too Many Requests", "more_info":
// "https://www.twilio.com/docs/errors/20429", "status": 429}.
type errorBody struct {
	Code int `json:"code"`
}

// Classify reads a Twilio error response. A 429 with error code 20429 was
// never processed (https://www.twilio.com/docs/api/errors/20429), so it may
// be retried whatever its method; it says the account has too many requests
// in flight, so it concerns ScopeAccount alone, whose cap on calls in flight
// it lowers (the sender's pace is not at fault). Preset installs it.
func Classify(resp *http.Response, body []byte) classify.Verdict {
	if resp.StatusCode != http.StatusTooManyRequests {
		return classify.Verdict{}
	}
	var e errorBody
	if json.Unmarshal(body, &e) == nil && e.Code == codeTooManyRequests {
		return classify.Verdict{NeverProcessed: true, Scopes: accountScopes}
	}
	return classify.Verdict{}
}

var accountScopes = []string{ScopeAccount}
