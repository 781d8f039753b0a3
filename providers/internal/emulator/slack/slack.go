// Package slack emulates the Slack Web API's rate limits for one app in one
// workspace, as Slack documents them (read 2026-12-01):
//
//   - "Rate limits" (https://docs.slack.dev/apis/web-api/rate-limits, its
//     overview table read whole on https://api.slack.com/docs/rate-limits):
//     limits apply "per API method per workspace/team per app"; Tier 1 "1+
//     per minute", Tier 2 "20+ per minute", Tier 3 "50+ per minute", Tier 4
//     "100+ per minute"; "chat.postMessage generally allows posting one
//     message per second per channel, while also maintaining a
//     workspace-wide limit";
//   - the tier of each method in Methods, from its reference page (the
//     methods whose page could not be read are not served: a call to one
//     answers unknown_method, so that no test leans on an unread figure).
//
// The emulator takes each tier's floor as its limit and counts in a sliding
// window of a minute (a second for a channel's messages), the strictest
// reading of "N+ per minute". It does not enforce chat.postMessage's
// workspace-wide limit: Slack does not publish it.
//
// A call over a limit answers 429 with Retry-After and {"ok":false,
// "error":"ratelimited"}. UNVERIFIED: the rate-limits page's own words on
// the 429 were not surfaced by the search; the emulator gives, in seconds,
// the time until its window has room.
package slack

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pacer-go/pacer/providers/internal/emulator"
)

// The documented figures.
const (
	Tier1PerMinute = 1
	Tier2PerMinute = 20
	Tier3PerMinute = 50
	Tier4PerMinute = 100

	PostMessagePerSecondPerChannel = 1
)

// Methods are the tiers of the methods whose reference page was read.
var Methods = map[string]int{
	"chat.delete":           3,
	"chat.update":           3,
	"conversations.history": 3,
	"conversations.replies": 3,
	"reactions.add":         3,
}

// PerMinute returns tier's requests per minute.
func PerMinute(tier int) int {
	return map[int]int{1: Tier1PerMinute, 2: Tier2PerMinute, 3: Tier3PerMinute, 4: Tier4PerMinute}[tier]
}

// KeyPostMessage returns the Tally key of the messages posted to channel.
func KeyPostMessage(channel string) string { return "chat.postMessage " + channel }

// Server is the emulated Web API of one app in one workspace.
type Server struct {
	Tally emulator.Tally

	mu       sync.Mutex
	methods  map[string]*emulator.Window
	channels map[string]*emulator.Window
}

// New returns the emulated Web API.
func New() *Server {
	return &Server{methods: map[string]*emulator.Window{}, channels: map[string]*emulator.Window{}}
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	method, ok := strings.CutPrefix(r.URL.Path, "/api/")
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	now := time.Now()
	var (
		win *emulator.Window
		key string
	)
	s.mu.Lock()
	if method == "chat.postMessage" {
		channel := channelOf(r, body)
		if channel == "" {
			s.mu.Unlock()
			fmt.Fprint(w, `{"ok":false,"error":"channel_not_found"}`)
			return
		}
		key = KeyPostMessage(channel)
		if win = s.channels[channel]; win == nil {
			win = &emulator.Window{Limit: PostMessagePerSecondPerChannel, Per: time.Second}
			s.channels[channel] = win
		}
	} else if tier, known := Methods[method]; known {
		key = method
		if win = s.methods[method]; win == nil {
			win = &emulator.Window{Limit: PerMinute(tier), Per: time.Minute}
			s.methods[method] = win
		}
	} else {
		s.mu.Unlock()
		fmt.Fprint(w, `{"ok":false,"error":"unknown_method"}`)
		return
	}
	allowed := win.Allow(now, 1)
	wait := win.Until(now)
	s.mu.Unlock()
	if !allowed {
		s.Tally.Refuse(key)
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"ok":false,"error":"ratelimited"}`)
		return
	}
	s.Tally.Accept(key, 1)
	fmt.Fprint(w, `{"ok":true}`)
}

// channelOf reads chat.postMessage's channel from the query, a form body or
// a JSON body, as Slack accepts it.
func channelOf(r *http.Request, body []byte) string {
	if c := r.URL.Query().Get("channel"); c != "" {
		return c
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var m struct {
			Channel string `json:"channel"`
		}
		json.Unmarshal(body, &m)
		return m.Channel
	}
	form, _ := url.ParseQuery(string(body))
	return form.Get("channel")
}
