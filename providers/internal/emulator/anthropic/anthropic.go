// Package anthropic emulates the Claude API's Messages rate limits as
// https://platform.claude.com/docs/en/api/rate-limits documents them (read
// 2026-12-01):
//
//   - "The rate limits for the Messages API are measured in requests per
//     minute (RPM), input tokens per minute (ITPM), and output tokens per
//     minute (OTPM) for each model class", with the per-class tables of the
//     Start, Build and Scale tabs, Opus 4.x and Sonnet 4.x each "a total
//     limit that applies to combined traffic" of their versions;
//   - "The API uses the token bucket algorithm [...] your capacity is
//     continuously replenished up to your maximum limit";
//   - "ITPM rate limits are estimated at the beginning of each request";
//     "OTPM rate limits are evaluated in real time as output tokens are
//     produced, counting only the actual tokens generated. The max_tokens
//     parameter does not factor into OTPM rate limit calculations";
//   - every response carries anthropic-ratelimit-{requests,input-tokens,
//     output-tokens,tokens}-{limit,remaining,reset}; token counts
//     remaining are "rounded to the nearest thousand"; a reset is "The
//     time when the [...] rate limit will be fully replenished, provided in
//     RFC 3339 format";
//   - a refusal is "a 429 error describing which rate limit was exceeded,
//     along with a retry-after header indicating how long to wait", with
//     the error body of https://platform.claude.com/docs/en/api/errors.
//
// The page does not say when a request is refused for output tokens, which
// are counted only as they are produced; the emulator refuses a request
// while its class's output bucket is empty, and lets the bucket go below
// zero while the answers in flight are generated. The figures here are the
// emulator's own, not the preset's, so that a wrong preset figure shows.
package anthropic

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pacer-go/pacer/providers/internal/emulator"
)

// Limits are one model class's documented limits, per minute.
type Limits struct{ RPM, ITPM, OTPM int }

// The model classes of the documented tables.
const (
	Fable5   = "Claude Fable 5"
	Opus4    = "Claude Opus 4.x"
	Sonnet5  = "Claude Sonnet 5"
	Sonnet4  = "Claude Sonnet 4.x"
	Haiku45  = "Claude Haiku 4.5"
	Haiku35  = "Claude Haiku 3.5"
	Unlisted = "unlisted"
)

// Tables are the documented limits: tier ("Start", "Build", "Scale"), then
// model class.
var Tables = map[string]map[string]Limits{
	"Start": {
		Fable5: {1_000, 500_000, 100_000}, Opus4: {1_000, 2_000_000, 400_000}, Sonnet5: {1_000, 2_000_000, 400_000},
		Sonnet4: {1_000, 2_000_000, 400_000}, Haiku45: {1_000, 2_000_000, 400_000}, Haiku35: {1_000, 100_000, 20_000},
	},
	"Build": {
		Fable5: {2_000, 1_500_000, 300_000}, Opus4: {5_000, 5_000_000, 1_000_000}, Sonnet5: {5_000, 5_000_000, 1_000_000},
		Sonnet4: {5_000, 5_000_000, 1_000_000}, Haiku45: {5_000, 5_000_000, 1_000_000}, Haiku35: {2_000, 200_000, 40_000},
	},
	"Scale": {
		Fable5: {4_000, 4_000_000, 800_000}, Opus4: {10_000, 10_000_000, 2_000_000}, Sonnet5: {10_000, 10_000_000, 2_000_000},
		Sonnet4: {10_000, 10_000_000, 2_000_000}, Haiku45: {10_000, 10_000_000, 2_000_000}, Haiku35: {4_000, 400_000, 80_000},
	},
}

// ClassOf names the documented class of a model ID: "claude-opus-4-7" and
// "claude-opus-4-5-20251101" are both Opus 4.x. A model of no table is
// Unlisted.
func ClassOf(model string) string {
	for _, c := range []struct{ prefix, class string }{
		{"claude-fable-5", Fable5},
		{"claude-opus-4-5", Opus4}, {"claude-opus-4-6", Opus4}, {"claude-opus-4-7", Opus4}, {"claude-opus-4-8", Opus4},
		{"claude-sonnet-5", Sonnet5},
		{"claude-sonnet-4-5", Sonnet4}, {"claude-sonnet-4-6", Sonnet4},
		{"claude-haiku-4-5", Haiku45},
		{"claude-3-5-haiku", Haiku35},
	} {
		if rest, ok := strings.CutPrefix(model, c.prefix); ok && (rest == "" || isSnapshot(rest)) {
			return c.class
		}
	}
	return Unlisted
}

// isSnapshot reports whether s is "-YYYYMMDD" or "-latest".
func isSnapshot(s string) bool {
	if s == "-latest" {
		return true
	}
	if len(s) != 9 || s[0] != '-' {
		return false
	}
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Server is the emulated Messages API of one organization.
type Server struct {
	Tally emulator.Tally
	// Output returns how many tokens the model answers a request with, at
	// most its max_tokens; nil answers max_tokens/4.
	Output func(body []byte) int
	// TokensPerSecond is how fast an answer is generated; zero means 80.
	TokensPerSecond int

	tier    map[string]Limits
	mu      sync.Mutex
	classes map[string]*class
	ids     int
}

type class struct {
	lim                Limits
	req, input, output emulator.Bucket
}

// New returns the emulated API of an organization on tier ("Start",
// "Build" or "Scale").
func New(tier string) *Server {
	t, ok := Tables[tier]
	if !ok {
		panic("emulator/anthropic: no tier " + tier)
	}
	return &Server{tier: t, classes: map[string]*class{}}
}

func (s *Server) class(name string) *class {
	c := s.classes[name]
	if c == nil {
		lim, ok := s.tier[name]
		if !ok {
			panic("emulator/anthropic: a request for a model of no documented class")
		}
		c = &class{lim: lim,
			req:    emulator.Bucket{Capacity: float64(lim.RPM), Per: time.Minute},
			input:  emulator.Bucket{Capacity: float64(lim.ITPM), Per: time.Minute},
			output: emulator.Bucket{Capacity: float64(lim.OTPM), Per: time.Minute}}
		s.classes[name] = c
	}
	return c
}

type request struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_tokens"`
	Stream    bool   `json:"stream"`
	System    string `json:"system"`
	Messages  []struct {
		Content string `json:"content"`
	} `json:"messages"`
}

// InputTokens counts a request's input the emulator's way: a token per
// word and per comma or full stop, three per message. It is not the
// preset's estimate, on purpose.
func InputTokens(r request) int {
	n := len(strings.Fields(r.System))
	for _, m := range r.Messages {
		n += 3 + len(strings.Fields(m.Content)) + strings.Count(m.Content, ",") + strings.Count(m.Content, ".")
	}
	return n
}

// InputTokensOf is InputTokens of a request's body; 0 for a body that is
// not a Messages request.
func InputTokensOf(body []byte) int {
	var r request
	if json.Unmarshal(body, &r) != nil {
		return 0
	}
	return InputTokens(r)
}

// ServeHTTP answers POST /v1/messages.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req request
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" || json.Unmarshal(body, &req) != nil || req.MaxTokens < 1 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "emulator: a Messages request with a model and max_tokens is expected")
		return
	}
	name := ClassOf(req.Model)
	in := InputTokens(req)
	out := req.MaxTokens / 4
	if s.Output != nil {
		out = s.Output(body)
	}
	out = max(min(out, req.MaxTokens), 1)
	now := time.Now()

	s.mu.Lock()
	c := s.class(name)
	refused, wait := "", time.Duration(0)
	switch {
	case c.req.Level(now) < 1:
		refused, wait = fmt.Sprintf("%d requests per minute", c.lim.RPM), c.req.Until(now, 1)
	case c.input.Level(now) < float64(in):
		refused, wait = fmt.Sprintf("%d input tokens per minute", c.lim.ITPM), c.input.Until(now, float64(in))
	case c.output.Level(now) < 1:
		refused, wait = fmt.Sprintf("%d output tokens per minute", c.lim.OTPM), c.output.Until(now, 1)
	default:
		c.req.Spend(now, 1)
		c.input.Spend(now, float64(in))
	}
	s.ids++
	id := s.ids
	if refused != "" {
		setHeaders(w.Header(), c, now)
		s.mu.Unlock()
		s.Tally.Refuse(name + ": " + refused)
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		writeError(w, http.StatusTooManyRequests, "rate_limit_error",
			"This request would exceed your organization's rate limit of "+refused+". For details, refer to: https://docs.claude.com/en/api/rate-limits.")
		return
	}
	if req.Stream {
		// A stream's headers leave before the answer is generated.
		setHeaders(w.Header(), c, now)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
	}
	s.mu.Unlock()

	s.generate(c, out)
	s.Tally.Accept(name, 1)
	s.Tally.Accept(name+" input", int64(in))
	s.Tally.Accept(name+" output", int64(out))
	usage := fmt.Sprintf(`{"input_tokens":%d,"output_tokens":%d}`, in, out)
	if req.Stream {
		fmt.Fprintf(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_%d\",\"type\":\"message\",\"role\":\"assistant\",\"model\":%q,\"usage\":{\"input_tokens\":%d,\"output_tokens\":1}}}\n\n", id, req.Model, in)
		fmt.Fprintf(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":%d}}\n\n", out)
		fmt.Fprint(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
		return
	}
	s.mu.Lock()
	setHeaders(w.Header(), c, time.Now())
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"msg_%d","type":"message","role":"assistant","model":%q,"content":[{"type":"text","text":"..."}],"stop_reason":"end_turn","usage":%s}`, id, req.Model, usage)
}

// generate produces out tokens at the server's speed, spending each slice
// of them from the output bucket as it is produced.
func (s *Server) generate(c *class, out int) {
	tps := s.TokensPerSecond
	if tps <= 0 {
		tps = 80
	}
	const slice = 250 * time.Millisecond
	perSlice := max(tps/4, 1)
	for left := out; left > 0; left -= perSlice {
		n := min(left, perSlice)
		time.Sleep(time.Duration(n) * slice / time.Duration(perSlice))
		s.mu.Lock()
		c.output.Spend(time.Now(), float64(n))
		s.mu.Unlock()
	}
}

// RoundThousand rounds n to the nearest thousand, as the token headers do.
func RoundThousand(n float64) int64 {
	return int64(math.Round(max(n, 0)/1000)) * 1000
}

func setHeaders(h http.Header, c *class, now time.Time) {
	set := func(kind string, limit int, remaining int64, full time.Time) {
		h.Set("anthropic-ratelimit-"+kind+"-limit", strconv.Itoa(limit))
		h.Set("anthropic-ratelimit-"+kind+"-remaining", strconv.FormatInt(remaining, 10))
		h.Set("anthropic-ratelimit-"+kind+"-reset", full.UTC().Format(time.RFC3339))
	}
	req, in, out := c.req.Level(now), c.input.Level(now), c.output.Level(now)
	set("requests", c.lim.RPM, int64(max(math.Floor(req), 0)), now.Add(c.req.UntilFull(now)))
	set("input-tokens", c.lim.ITPM, RoundThousand(in), now.Add(c.input.UntilFull(now)))
	set("output-tokens", c.lim.OTPM, RoundThousand(out), now.Add(c.output.UntilFull(now)))
	// "If Workspace limits do not apply, the headers will return the total
	// tokens remaining, where total is the sum of input and output tokens."
	set("tokens", c.lim.ITPM+c.lim.OTPM, RoundThousand(in+out), now.Add(max(c.input.UntilFull(now), c.output.UntilFull(now))))
	h.Set("request-id", "req_emulated")
}

// writeError writes the Claude API's error body: "a top-level error object
// that always includes a type and message value".
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}, "request_id": "req_emulated"})
	w.Write(b)
}
