// Package twilio emulates Twilio's Programmable Messaging REST API as Twilio
// documents it (every page read 2026-12-01): the Messages resource, POST
// /2010-04-01/Accounts/{AccountSid}/Messages.json, of an account whose
// senders release what it sends at their documented throughput, and the
// account's cap on concurrent REST requests.
//
// What it does, and where Twilio says so:
//
//   - Throughput is per sender and counted in message segments: "Twilio
//     queues messages based on the sending rate of a sender or an account.
//     For example a US long code number can send one message segment per
//     second, and a short code may send over 100 message segments per
//     second" (https://www.twilio.com/docs/api/errors/21611). US toll-free
//     numbers: "By default, any US Toll-Free number you purchase from Twilio
//     offers an SMS sending throughput of 3 MPS (message segments per
//     second) toward the US and Canada", and outside the +1 region "Toll-Free
//     US numbers will receive the standard throughput of 10 MPS, just like
//     all other Twilio numbers sending outside of the +1 region"
//     (https://support.twilio.com/hc/en-us/articles/4411046744987-Toll-Free-SMS-and-MMS-messaging-throughput-MPS).
//     A sender's rate is given when the test adds it (AddSender), as an
//     account's numbers are bought with their type.
//   - What exceeds a sender's rate is queued, not refused: "When Twilio
//     receives message requests from your application, these requests are
//     queued for delivery in the order we receive them", and "each of your
//     Twilio phone numbers has a separate queue, and each queue can hold up
//     to 10 hours' worth of message segments based on the sending rate for a
//     phone number type. For example, a local phone number from the US or
//     Canada has a full queue of 36,000 message segments"
//     (https://support.twilio.com/hc/en-us/articles/115002943027-Understanding-Twilio-Rate-Limits-and-Message-Queues).
//     A message that would take a sender's queue past QueueWindow is refused
//     with error 21611: "When a queue for a particular 'From' number exceeds
//     10 hours, this error will be thrown when attempting to create
//     additional messages on the same number"
//     (https://www.twilio.com/docs/api/errors/21611). Older copies of that
//     page say 4 hours; the current page and the support article say 10.
//     The emulator releases a sender's segments back to back at its rate,
//     in arrival order, and records how long each message waited and the
//     most segments that were queued at once.
//   - Segments: "Large messages are split into 153-character "segments""
//     after a single one of 160 GSM-7 characters; a body with any character
//     outside GSM-7 is sent as UCS-2, and "a message which is encoded in
//     UCS-2 has a maximum of 70 characters"
//     (https://www.twilio.com/docs/glossary/what-sms-character-limit,
//     https://www.twilio.com/docs/glossary/what-is-ucs-2-character-encoding).
//     "The Body parameter for an outgoing message can be up to 1,600
//     characters" (https://www.twilio.com/docs/api/errors/21617): a longer
//     body is refused with 21617.
//   - Concurrency: "Twilio returns this error when your account exceeds
//     allowed concurrency to Twilio's REST API (HTTP 429 Too Many
//     Requests). Requests that receive 429 responses aren't processed and
//     are safe to retry after backing off"
//     (https://www.twilio.com/docs/api/errors/20429). A request that finds
//     Concurrency requests in flight is refused with 429 and error 20429,
//     and no message is created.
//
// UNVERIFIED, and not built on by the tests:
//
//   - The number of concurrent requests an account is allowed: Twilio does
//     not publish it. Server.Concurrency has no default; a test sets it to
//     the cap it gives the preset.
//   - UCS2MultiSegment, 67 UTF-16 units in each segment of a longer UCS-2
//     message: Twilio's character-limit table was cut before its UCS-2 row
//     in the stored copies, and the sentence that gives 67 on the UCS-2
//     glossary page was read only on its sendgrid.com mirror. The emulator
//     counts with it; the tests send UCS-2 bodies of one segment only.
//   - The GSM-7 alphabet's members, and two septets for an extension
//     character: from GSM 03.38, not read on Twilio's pages.
//   - The HTTP status of errors 21611 and 21617, which their pages do not
//     give: the emulator answers 400, as Twilio's REST reference says of an
//     invalid request.
//   - The error body's JSON keys: Twilio's REST response page (for the
//     2008-08-01 API, https://www.twilio.com/docs/api/2008-08-01/rest/response)
//     names an exception's Status, Message, Code and MoreInfo; the JSON
//     spelling {"code", "message", "more_info", "status"} is what Twilio's
//     own helper libraries read, not a documented schema.
package twilio

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/pacer-go/pacer/providers/internal/emulator"
)

// The documented figures.
const (
	LongCodeMPS      = 1   // US and Canadian long codes, segments a second
	TollFreeMPS      = 3   // US toll-free numbers to the US and Canada
	InternationalMPS = 10  // any number sending outside the +1 region
	ShortCodeMPS     = 100 // "over 100": the floor is taken

	GSM7SingleSegment = 160
	GSM7MultiSegment  = 153
	UCS2SingleSegment = 70
	MaxBodyChars      = 1600

	QueueWindow = 10 * time.Hour

	CodeTooManyRequests = 20429
	CodeQueueFull       = 21611
	CodeBodyTooLong     = 21617

	// UNVERIFIED, see the package doc.
	UCS2MultiSegment = 67
)

// The names Tally.Refused counts refusals under. Accepted messages are
// counted under their From number, in messages (Tally.Accepted) and
// segments (Tally.Units).
const (
	RefusedConcurrency = "concurrency"
	RefusedQueueFull   = "queue full"
	RefusedBodyTooLong = "body too long"
)

// Server is the emulated REST API of one account.
type Server struct {
	Tally emulator.Tally

	// Concurrency is the account's cap on requests in flight, 0 for none.
	// Twilio does not publish it: set it to what the test assumes.
	Concurrency int
	// Latency is how long Twilio takes to answer, during which the request
	// holds one of the account's concurrent slots.
	Latency time.Duration

	mu       sync.Mutex
	inFlight int
	senders  map[string]*sender
}

// A sender's queue: Twilio releases its segments back to back at mps, so
// the queue is empty again at free.
type sender struct {
	mps        int
	free       time.Time
	longest    time.Duration // the longest a message waited to be released
	mostQueued int           // the most segments queued at once
}

// New returns the emulated API of an account with no senders and no cap
// on concurrent requests.
func New() *Server { return &Server{senders: map[string]*sender{}} }

// AddSender gives the account the sender from, releasing mps segments a
// second (LongCodeMPS, TollFreeMPS, ShortCodeMPS or InternationalMPS). An
// mps below 1 is an error.
func (s *Server) AddSender(from string, mps int) error {
	if mps < 1 {
		return fmt.Errorf("AddSender(%q, %d): a sender releases at least one segment a second", from, mps)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.senders[from] = &sender{mps: mps}
	return nil
}

// LongestWait returns the longest a message from from waited in its
// sender's queue before Twilio released its first segment.
func (s *Server) LongestWait(from string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.senders[from]; q != nil {
		return q.longest
	}
	return 0
}

// MostQueued returns the most segments that were waiting at once in
// from's queue, counting the message just accepted.
func (s *Server) MostQueued(from string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.senders[from]; q != nil {
		return q.mostQueued
	}
	return 0
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.Concurrency > 0 && s.inFlight >= s.Concurrency {
		s.mu.Unlock()
		s.Tally.Refuse(RefusedConcurrency)
		twilioError(w, http.StatusTooManyRequests, CodeTooManyRequests, "Too Many Requests")
		return
	}
	s.inFlight++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()
	time.Sleep(s.Latency)

	if r.Method != http.MethodPost || !isMessages(r.URL.Path) {
		twilioError(w, http.StatusNotFound, 0, "the emulator serves POST /2010-04-01/Accounts/{AccountSid}/Messages.json only, not "+r.Method+" "+r.URL.Path)
		return
	}
	if err := r.ParseForm(); err != nil {
		twilioError(w, http.StatusBadRequest, 0, "the body must be a form: "+err.Error())
		return
	}
	from, body := r.PostForm.Get("From"), r.PostForm.Get("Body")
	if len([]rune(body)) > MaxBodyChars {
		s.Tally.Refuse(RefusedBodyTooLong)
		twilioError(w, http.StatusBadRequest, CodeBodyTooLong, "The concatenated message body exceeds the 1600 character limit")
		return
	}
	segments := Segments(body)
	now := time.Now()
	s.mu.Lock()
	q := s.senders[from]
	if q == nil {
		s.mu.Unlock()
		twilioError(w, http.StatusBadRequest, 0, fmt.Sprintf("the From %q is not a sender of the account: add it with AddSender", from))
		return
	}
	start := now
	if q.free.After(now) {
		start = q.free
	}
	free := start.Add(time.Duration(segments) * time.Second / time.Duration(q.mps))
	if free.Sub(now) > QueueWindow {
		s.mu.Unlock()
		s.Tally.Refuse(RefusedQueueFull)
		twilioError(w, http.StatusBadRequest, CodeQueueFull, "This 'From' number has exceeded the maximum number of queued messages")
		return
	}
	q.free = free
	q.longest = max(q.longest, start.Sub(now))
	// What the queue holds now, in segments: the time it takes to empty
	// at the sender's rate, rounded up to whole segments.
	queued := int((free.Sub(now)*time.Duration(q.mps) + time.Second - 1) / time.Second)
	q.mostQueued = max(q.mostQueued, queued)
	s.mu.Unlock()

	s.Tally.Accept(from, int64(segments))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"sid":"SM%032x","from":%q,"to":%q,"body":%q,"status":"queued","num_segments":"%d","direction":"outbound-api","api_version":"2010-04-01"}`,
		now.UnixNano(), from, r.PostForm.Get("To"), body, segments)
}

// isMessages reports whether path is an account's Messages list resource.
func isMessages(path string) bool {
	rest, ok := strings.CutPrefix(path, "/2010-04-01/Accounts/")
	if !ok {
		return false
	}
	sid, resource, ok := strings.Cut(rest, "/")
	return ok && sid != "" && resource == "Messages.json"
}

// twilioError writes a REST exception as the 2010 API's JSON has it. Code
// 0 leaves out the code and its more_info: the emulator's own refusals of
// a request it does not serve (a test's mistake) carry none, so that no
// test can lean on an error code Twilio's pages were not read for.
func twilioError(w http.ResponseWriter, status, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if code == 0 {
		fmt.Fprintf(w, `{"message":%q,"status":%d}`, message, status)
		return
	}
	fmt.Fprintf(w, `{"code":%d,"message":%q,"more_info":"https://www.twilio.com/docs/errors/%d","status":%d}`,
		code, message, code, status)
}

// Segments returns the segments Twilio sends body in: one for up to
// GSM7SingleSegment septets, else one per GSM7MultiSegment; for a body
// with any character outside GSM-7, one for up to UCS2SingleSegment
// UTF-16 units, else one per UCS2MultiSegment.
func Segments(body string) int {
	septets, gsm := 0, true
	for _, r := range body {
		switch {
		case gsmBasic[r]:
			septets++
		case gsmExtension[r]:
			septets += 2
		default:
			gsm = false
		}
	}
	units, single, multi := septets, GSM7SingleSegment, GSM7MultiSegment
	if !gsm {
		units, single, multi = len(utf16.Encode([]rune(body))), UCS2SingleSegment, UCS2MultiSegment
	}
	if units <= single {
		return 1
	}
	return (units + multi - 1) / multi
}

// The GSM 03.38 default alphabet and the characters of its extension
// table, kept apart from the preset's own copy so that a mistake in one
// shows up against the other.
var gsmBasic, gsmExtension = runeSet(
	"@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./",
	"0123456789:;<=>?¡",
	"ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿",
	"abcdefghijklmnopqrstuvwxyzäöñüà",
), runeSet("^{}\\[~]|€\f")

func runeSet(parts ...string) map[rune]bool {
	set := map[rune]bool{}
	for _, p := range parts {
		for _, r := range p {
			set[r] = true
		}
	}
	return set
}
