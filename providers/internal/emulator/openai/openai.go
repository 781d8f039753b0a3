// Package openai emulates the OpenAI API's rate limits. OpenAI's
// rate-limits and error-codes guides were read (2026-12-01) in a mirror of
// OpenAI's own Markdown, https://github.com/crasuna/openai-dev-docs-cn-mirror
// (sources/en/api/docs/guides/, fetched from developers.openai.com on
// 2026-06-27); its model pages were not found, so the per-model figures
// come from copies. Each point says where it comes from:
//
//   - per model, requests and tokens per minute, and requests per day for
//     some models at tier 1: the tier-1 table of the model pages as quoted
//     on OpenAI's community forum
//     (https://community.openai.com/t/gpt-4o-rate-limits-being-30k-tpm-and-90k-tpd-does-that-mean-i-can-only-do-90k-tokens-in-a-day/1028595):
//     "gpt-4o-mini | 500 | 10,000 | 200,000 | 2,000,000" (RPM, RPD, TPM,
//     batch queue), "text-embedding-3-small | 3,000 | - | 1,000,000";
//   - a request is charged, before it runs, "the maximum of max_tokens and
//     the estimated number of tokens based on the character count of your
//     request" (the rate-limits guide);
//   - x-ratelimit-{limit,remaining,reset}-{requests,tokens} on every
//     response, a reset being "the time until the rate limit … resets to
//     its initial state", written as a Go duration ("1s", "6m0s"; the
//     guide's samples); limits refill continuously;
//   - the requests headers report the requests limit that has the least
//     left (a captured tier's "x-ratelimit-limit-requests: 200" with
//     "x-ratelimit-reset-requests: 16m17.764s" is a daily limit): captured
//     responses, not the guide;
//   - x-ratelimit-*-tokens_usage_based, which no OpenAI page names:
//     captured responses in public repositories show it with the figures
//     of the tokens headers, and the emulator sends it so; with
//     UsageBasedDiffers it sends other figures, as some captures show, to
//     prove that a client pacing by the tokens headers is not misled;
//   - what a request is charged stays charged: the guide says nothing of
//     a correction by the usage, and advises "set the `max_tokens` value as
//     close to your expected response size as possible", which only helps
//     if the unused reservation stays counted; the usage each answer
//     reports (its input and Answer's output) is billing, not the limiter's;
//   - a refused request still counts toward the requests per minute
//     ("unsuccessful requests contribute to your per-minute limit", the
//     guide);
//   - a refusal is 429 with {"error":{"message":"Rate limit reached for …",
//     "type":…,"param":null,"code":"rate_limit_exceeded"}} (captured).
//
// The figures here are the emulator's own, not the preset's.
package openai

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode"

	"github.com/pacer-go/pacer/providers/internal/emulator"
)

// Limits are one model's figures; a zero field sets no limit.
type Limits struct{ RPM, TPM, RPD int }

// Tier1 are the tier-1 figures of the models the workloads use.
var Tier1 = map[string]Limits{
	"gpt-4o":                 {RPM: 500, TPM: 30_000},
	"gpt-4o-mini":            {RPM: 500, TPM: 200_000, RPD: 10_000},
	"text-embedding-3-small": {RPM: 3_000, TPM: 1_000_000},
}

// Server is the emulated API of one organization.
type Server struct {
	Tally   emulator.Tally
	Latency time.Duration
	// UsageBasedDiffers makes the x-ratelimit-*-tokens_usage_based headers
	// report a tenth of the tokens limit, nothing left and an hour to wait,
	// instead of the tokens headers' figures.
	UsageBasedDiffers bool
	// ProjectTPM, when set, is a project-scoped token limit per minute
	// across every model, charged each request's tokens as its model's TPM
	// is; its x-ratelimit-{limit,remaining,reset}-project-tokens headers
	// are sent only then ("Project-token headers may be present when a
	// project-scoped token limit applies", the guide's revision of
	// 2026-06-26). The guide gives no window: the emulator's is a minute.
	ProjectTPM int

	limits  map[string]Limits
	project emulator.Bucket
	mu      sync.Mutex
	models  map[string]*model
}

type model struct {
	lim           Limits
	rpm, tpm, rpd emulator.Bucket
	hasRPD        bool
}

// New returns the emulated API with these figures per model.
func New(limits map[string]Limits) *Server {
	return &Server{limits: limits, models: map[string]*model{}}
}

// Tokens returns what a request is charged the emulator's way: the larger
// of its max_tokens (or max_completion_tokens) and its input counted with
// Tokenize (not the preset's estimate): its text, three per message. OpenAI's
// rate-limits guide: "Your rate limit is calculated as the maximum of
// max_tokens and the estimated number of tokens based on the character
// count of your request."
func Tokens(body []byte) (modelName string, tokens int) {
	modelName, input, maxTokens := count(body)
	return modelName, max(input, maxTokens)
}

// count reads a request the emulator's way: its model, its input counted
// with Tokenize, and its max_tokens (or max_completion_tokens).
func count(body []byte) (modelName string, input, maxTokens int) {
	var r struct {
		Model     string `json:"model"`
		Input     any    `json:"input"`
		MaxTokens int    `json:"max_tokens"`
		MaxCompl  int    `json:"max_completion_tokens"`
		Messages  []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(body, &r)
	for _, m := range r.Messages {
		input += 3 + int(Tokenize(m.Content))
	}
	switch in := r.Input.(type) {
	case string:
		input += int(Tokenize(in))
	case []any:
		for _, x := range in {
			if s, ok := x.(string); ok {
				input += int(Tokenize(s))
			}
		}
	}
	return r.Model, input, max(r.MaxTokens, r.MaxCompl)
}

// Answer is the output of a request that reserved maxTokens: a third of
// it, as answers mostly stop well before their limit. The usage in the
// response reports it beside the input; the limiter does not see it, since
// the guide says a request is counted at what it is charged before it runs
// and nothing of a correction by the usage.
func Answer(maxTokens int) int { return maxTokens / 3 }

// Tokenize stands in for OpenAI's tokenizer: a token per five letters of a
// word, per three digits of a number and per two marks of punctuation;
// spaces are free. It is not the preset's estimate, on purpose.
func Tokenize(s string) int64 {
	var n int64
	rs := []rune(s)
	for i := 0; i < len(rs); {
		r := rs[i]
		j := i + 1
		switch {
		case unicode.IsLetter(r):
			for j < len(rs) && unicode.IsLetter(rs[j]) {
				j++
			}
			n += int64((j - i + 4) / 5)
		case unicode.IsDigit(r):
			for j < len(rs) && unicode.IsDigit(rs[j]) {
				j++
			}
			n += int64((j - i + 2) / 3)
		case unicode.IsSpace(r):
		default:
			for j < len(rs) && !unicode.IsLetter(rs[j]) && !unicode.IsDigit(rs[j]) && !unicode.IsSpace(rs[j]) {
				j++
			}
			n += int64((j - i + 1) / 2)
		}
		i = j
	}
	return n
}

func (s *Server) model(name string) *model {
	m := s.models[name]
	if m == nil {
		lim, ok := s.limits[name]
		if !ok {
			panic("emulator/openai: no figures for model " + name)
		}
		m = &model{lim: lim,
			rpm: emulator.Bucket{Capacity: float64(lim.RPM), Per: time.Minute},
			tpm: emulator.Bucket{Capacity: float64(lim.TPM), Per: time.Minute},
			rpd: emulator.Bucket{Capacity: float64(lim.RPD), Per: 24 * time.Hour}, hasRPD: lim.RPD > 0}
		s.models[name] = m
	}
	return m
}

// projectBucket is the project's token bucket, set up on first use.
func (s *Server) projectBucket() *emulator.Bucket {
	if s.project.Per == 0 {
		s.project = emulator.Bucket{Capacity: float64(s.ProjectTPM), Per: time.Minute}
	}
	return &s.project
}

// ServeHTTP answers chat completions and embeddings.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	name, input, maxTokens := count(body)
	tokens := max(input, maxTokens)
	now := time.Now()
	s.mu.Lock()
	m := s.model(name)
	refused, kind, wait := "", "", time.Duration(0)
	switch {
	case m.rpm.Level(now) < 1:
		refused, kind, wait = fmt.Sprintf("requests per min (RPM): Limit %d", m.lim.RPM), "requests", m.rpm.Until(now, 1)
	case m.hasRPD && m.rpd.Level(now) < 1:
		refused, kind, wait = fmt.Sprintf("requests per day (RPD): Limit %d", m.lim.RPD), "requests", m.rpd.Until(now, 1)
	case m.tpm.Level(now) < float64(tokens):
		refused, kind, wait = fmt.Sprintf("tokens per min (TPM): Limit %d", m.lim.TPM), "tokens", m.tpm.Until(now, float64(tokens))
	case s.ProjectTPM > 0 && s.projectBucket().Level(now) < float64(tokens):
		refused, kind, wait = fmt.Sprintf("project tokens per min (TPM): Limit %d", s.ProjectTPM), "tokens", s.project.Until(now, float64(tokens))
	default:
		m.rpm.Spend(now, 1)
		m.tpm.Spend(now, float64(tokens))
		if s.ProjectTPM > 0 {
			s.project.Spend(now, float64(tokens))
		}
		if m.hasRPD {
			m.rpd.Spend(now, 1)
		}
	}
	if refused != "" {
		// "Note that unsuccessful requests contribute to your per-minute
		// limit, so continuously resending a request won't work."
		m.rpm.Take(now, 1)
	}
	s.setHeaders(w.Header(), m, now)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if refused != "" {
		s.Tally.Refuse(name + " " + refused)
		w.WriteHeader(http.StatusTooManyRequests)
		msg := fmt.Sprintf("Rate limit reached for %s in organization org-emulated on %s, Requested %d. Please try again in %s. Visit https://platform.openai.com/account/rate-limits to learn more.",
			name, refused, tokens, wait.Round(time.Millisecond))
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": kind, "param": nil, "code": "rate_limit_exceeded"}})
		w.Write(b)
		return
	}
	if s.Latency > 0 {
		time.Sleep(s.Latency)
	}
	s.Tally.Accept(name, 1)
	s.Tally.Accept(name+" tokens", int64(tokens))
	out := Answer(maxTokens)
	fmt.Fprintf(w, `{"object":"ok","model":%q,"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, name, input, out, input+out)
}

// Reset writes d as OpenAI does: a Go duration, milliseconds below a second.
func Reset(d time.Duration) string {
	if d < time.Second {
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	}
	return d.Round(time.Millisecond).String()
}

func (s *Server) setHeaders(h http.Header, m *model, now time.Time) {
	reqLimit, reqLeft, reqReset := m.lim.RPM, m.rpm.Level(now), m.rpm.UntilFull(now)
	if m.hasRPD && m.rpd.Level(now) < reqLeft {
		reqLimit, reqLeft, reqReset = m.lim.RPD, m.rpd.Level(now), m.rpd.UntilFull(now)
	}
	h.Set("x-ratelimit-limit-requests", strconv.Itoa(reqLimit))
	h.Set("x-ratelimit-remaining-requests", strconv.Itoa(int(max(math.Floor(reqLeft), 0))))
	h.Set("x-ratelimit-reset-requests", Reset(reqReset))
	for _, suffix := range []string{"tokens", "tokens_usage_based"} {
		h.Set("x-ratelimit-limit-"+suffix, strconv.Itoa(m.lim.TPM))
		h.Set("x-ratelimit-remaining-"+suffix, strconv.Itoa(int(max(math.Floor(m.tpm.Level(now)), 0))))
		h.Set("x-ratelimit-reset-"+suffix, Reset(m.tpm.UntilFull(now)))
	}
	if s.ProjectTPM > 0 {
		p := s.projectBucket()
		h.Set("x-ratelimit-limit-project-tokens", strconv.Itoa(s.ProjectTPM))
		h.Set("x-ratelimit-remaining-project-tokens", strconv.Itoa(int(max(math.Floor(p.Level(now)), 0))))
		h.Set("x-ratelimit-reset-project-tokens", Reset(p.UntilFull(now)))
	}
	if s.UsageBasedDiffers {
		h.Set("x-ratelimit-limit-tokens_usage_based", strconv.Itoa(m.lim.TPM/10))
		h.Set("x-ratelimit-remaining-tokens_usage_based", "0")
		h.Set("x-ratelimit-reset-tokens_usage_based", Reset(time.Hour))
	}
}
