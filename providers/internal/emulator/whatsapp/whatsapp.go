// Package whatsapp emulates the WhatsApp Cloud API's sending limits as Meta
// documents them on its "Throughput" page (read 2026-12-01,
// https://developers.facebook.com/documentation/business-messaging/whatsapp/throughput):
//
//   - "For each registered business phone number, Cloud API supports up to
//     80 messages per second (mps) by default, and up to 1,000 mps by
//     automatic upgrade"; numbers shared with the WhatsApp Business app
//     "have a fixed throughput of 20 mps";
//   - "Throughput is inclusive of inbound and outbound messages and all
//     message types": the emulator receives InboundPerSecond messages from
//     users on every number, evenly spaced, and counts them with the sends;
//   - "If you attempt to send more messages than your current throughput
//     level allows, the API will return error code 130429".
//
// The pair rate limit (one message every 6 seconds to the same user, error
// 131056) is UNVERIFIED: the throughput page names it without a number and
// the page with the number could not be read; the emulator enforces the
// figure third-party pages agree on. The HTTP status of an error is not
// verified either (third-party pages say 400 for most, some 429 for
// 131056); the emulator answers 400 with a Graph API error body, which
// pacer's preset reads by its code, not its status.
//
// Throughput is counted in a sliding window of one second, the strictest
// reading of "messages per second".
package whatsapp

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/pacer-go/pacer/providers/internal/emulator"
)

// The documented figures.
const (
	StandardMPS    = 80
	HighMPS        = 1_000
	CoexistenceMPS = 20
	CodeThroughput = 130429

	// UNVERIFIED, see the package doc.
	PairInterval = 6 * time.Second
	CodePairRate = 131056
)

// Tally keys: every message sent, and the inbound messages counted.
const (
	KeySent    = "sent"
	KeyInbound = "inbound"
	// KeyNumber+id counts the messages sent from the number id.
	KeyNumber = "number "
)

// Server is the emulated Cloud API of business phone numbers of one
// throughput level.
type Server struct {
	Tally emulator.Tally

	mps     int
	inbound int
	// MPSOf gives a number its own throughput, by phone-number ID, in place
	// of the server's: numbers of several levels behind one pool.
	MPSOf map[string]int

	mu      sync.Mutex
	numbers map[string]*number
	pairs   map[string]*emulator.Window
}

// A number's messages in the last second, inbound and outbound, in order.
type number struct {
	at          []time.Time
	nextInbound time.Time
}

// New returns the emulated API of numbers of mps messages a second, each
// receiving inboundPerSecond messages a second from users (0: none).
func New(mps, inboundPerSecond int) *Server {
	return &Server{mps: mps, inbound: inboundPerSecond,
		numbers: map[string]*number{}, pairs: map[string]*emulator.Window{}}
}

// send counts, at now, the inbound messages that arrived since the last
// call and then an outbound one when the last second leaves room for it.
func (s *Server) send(id string, now time.Time) bool {
	n := s.numbers[id]
	if n == nil {
		n = &number{nextInbound: now}
		s.numbers[id] = n
	}
	for s.inbound > 0 && !n.nextInbound.After(now) {
		n.at = append(n.at, n.nextInbound)
		n.nextInbound = n.nextInbound.Add(time.Second / time.Duration(s.inbound))
		s.Tally.Accept(KeyInbound, 1)
	}
	cut := now.Add(-time.Second)
	i := 0
	for i < len(n.at) && !n.at[i].After(cut) {
		i++
	}
	n.at = n.at[i:]
	mps := s.mps
	if m, ok := s.MPSOf[id]; ok {
		mps = m
	}
	if len(n.at)+1 > mps {
		return false
	}
	n.at = append(n.at, now)
	return true
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if r.Method != http.MethodPost || len(parts) != 3 || parts[2] != "messages" {
		graphError(w, 100, "Invalid parameter", "the emulator serves POST /{version}/{phone-number-id}/messages only")
		return
	}
	id := parts[1]
	body, _ := io.ReadAll(r.Body)
	var m struct {
		To string `json:"to"`
	}
	if json.Unmarshal(body, &m) != nil || m.To == "" {
		graphError(w, 100, "Invalid parameter", "the body must be JSON with a \"to\"")
		return
	}
	now := time.Now()
	s.mu.Lock()
	if !s.send(id, now) {
		s.mu.Unlock()
		s.Tally.Refuse("throughput")
		graphError(w, CodeThroughput, "Rate limit hit", "Message failed to send because there were too many messages sent from this phone number in a short period of time")
		return
	}
	pair := s.pairs[id+"→"+m.To]
	if pair == nil {
		pair = &emulator.Window{Limit: 1, Per: PairInterval}
		s.pairs[id+"→"+m.To] = pair
	}
	ok := pair.Allow(now, 1)
	s.mu.Unlock()
	if !ok {
		s.Tally.Refuse("pair")
		graphError(w, CodePairRate, "(Business Account, Consumer Account) pair rate limit hit", "Message failed to send because there were too many messages sent from this phone number to the same phone number in a short period of time")
		return
	}
	s.Tally.Accept(KeySent, 1)
	s.Tally.Accept(m.To, 1)
	s.Tally.Accept(KeyNumber+id, 1)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"messaging_product":"whatsapp","contacts":[{"input":%q,"wa_id":%q}],"messages":[{"id":"wamid.%d"}]}`,
		m.To, m.To, now.UnixNano())
}

// graphError writes a Graph API error, as the Cloud API sends one.
func graphError(w http.ResponseWriter, code int, title, details string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprintf(w, `{"error":{"message":"(#%d) %s","type":"OAuthException","code":%d,"error_data":{"messaging_product":"whatsapp","details":%q},"fbtrace_id":"Az8or2yhqkZfEZ-_4Qn_Bam"}}`,
		code, title, code, details)
}
