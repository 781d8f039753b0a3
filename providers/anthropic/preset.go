package anthropic

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/classify"
	"github.com/pacer-go/pacer/providers/internal/presetopt"
	"github.com/pacer-go/pacer/providers/internal/reqbody"
)

// The scopes of model classes the Limits do not list, one bucket per class.
const (
	ScopeRequests     = "anthropic/requests"
	ScopeInputTokens  = "anthropic/input-tokens"
	ScopeOutputTokens = "anthropic/output-tokens"
)

// The units of the token scopes, which are also the names ratelimitheader.ParseQuotas gives
// Anthropic's anthropic-ratelimit-input-tokens-* and -output-tokens-*
// headers; the scopes declare them as their Policy.
const (
	UnitInputTokens  = "input-tokens"
	UnitOutputTokens = "output-tokens"
)

const (
	// DefaultRequestTokens is the input charged for a request whose body
	// cannot be read without consuming it (GetBody nil), or is not JSON.
	DefaultRequestTokens = 2048
	// DefaultOutputEstimate is the output charged for a request before it
	// runs, or its max_tokens when that is less. Anthropic counts output
	// tokens as they are produced, not max_tokens; the preset cannot know
	// how long an answer will be, so it charges a typical length and lets
	// the anthropic-ratelimit-output-tokens-remaining header lower the
	// bucket to what was produced. WithOutputEstimate sets your own.
	DefaultOutputEstimate = 1_000
	// Flat costs: an image of at most 1.15 megapixels costs about
	// width×height/750 tokens, 1,600 at most; a PDF page about 1,500–3,000
	// tokens, of which one page is charged.
	// https://platform.claude.com/docs/en/build-with-claude/vision
	imageTokens    = 1_600
	documentTokens = 3_000
	// Each message's role and delimiters.
	messageOverhead = 4
	charsPerToken   = 4
	maxEstimated    = 4 << 20
)

// An Option changes the preset.
type Option func(*Limits)

// WithModel gives a model class limits, and scopes, of its own. A model ID
// names its class (ModelClass): WithModel("claude-opus-4-7", l) sets the
// limits of every Opus 4.x, as Anthropic counts them together.
func WithModel(class string, l ModelLimits) Option {
	return func(s *Limits) { s.Models[ModelClass(class)] = l }
}

// WithOutputEstimate sets the output tokens charged for a request before it
// runs (at most its max_tokens): the typical length of your answers. Zero
// or less means DefaultOutputEstimate. A call's own figure, given with
// pacer.ContextWithCost(ctx, UnitOutputTokens, n), wins over it.
func WithOutputEstimate(n int) Option {
	return func(s *Limits) { s.OutputEstimate = n }
}

// WithDefault sets the limits of every model class not given its own.
func WithDefault(l ModelLimits) Option { return func(s *Limits) { s.Default = l } }

// WithConcurrency caps the calls in flight per model class at n; 0 sets no
// cap. A negative n is a configuration error.
func WithConcurrency(n int) Option { return func(s *Limits) { s.Concurrency = n } }

// Preset returns the options that pace calls to the Claude API at the
// published limits of the tier, changed by opts. Options given to pacer.New
// after it override what it sets.
//
// Its Meter prices calls at prices.Anthropic() (see Prices in the package doc):
// a budget in money (pacer.Budget.Spend) needs no pacer.WithPrices.
//
// The tier's figures are Anthropic's for the tier, and an organization's own
// limits may differ (a Build or Custom tier, an increase granted). So they
// are provisional (pacer.Scope.Provisional): the limits Anthropic publishes
// for the organization in anthropic-ratelimit-*-limit replace them from the
// first response on, higher or lower. Figures set WithModel or WithDefault
// are not.
//
// An unknown tier is a configuration error: it has no figures to pace by.
func Preset(tier Tier, opts ...Option) pacer.Option {
	var errs presetopt.Errors
	if _, ok := tierTables[tier]; !ok {
		errs.Add(fmt.Sprintf("anthropic.Preset(%d)", int(tier)), fmt.Errorf("no such tier; use anthropic.Evaluation, Start, Build or Scale"))
	}
	return presetLimits(tier.Limits(), true, opts, errs)
}

// PresetLimits is Preset with figures of your own, such as those of your
// Console's Limits page. They are paced as given, and a published limit
// only ever lowers them. A negative figure is a configuration error.
func PresetLimits(l Limits, opts ...Option) pacer.Option {
	var errs presetopt.Errors
	l = l.clone()
	for class, m := range l.Models {
		if errs.Add(fmt.Sprintf("anthropic.PresetLimits: Limits.Models[%q]", class), m.check()) {
			delete(l.Models, class)
		}
	}
	if errs.Add("anthropic.PresetLimits: Limits.Default", l.Default.check()) {
		l.Default = ModelLimits{}
	}
	if l.Concurrency < 0 {
		errs.Add("anthropic.PresetLimits", concurrencyError(fmt.Sprintf("Limits.Concurrency %d", l.Concurrency)))
		l.Concurrency = 0
	}
	return presetLimits(l, false, opts, errs)
}

func presetLimits(l Limits, tierFigures bool, opts []Option, errs presetopt.Errors) pacer.Option {
	l = l.clone()
	apply(&l, opts)
	// What opts set is the caller's own; under Preset, the rest is the
	// tier's. Running them on an empty Limits tells the two apart, and
	// what is wrong with them is said in the words of the option given.
	given := Limits{Models: map[string]ModelLimits{}, Default: notGiven}
	apply(&given, opts)
	for class, m := range given.Models {
		if errs.Add(fmt.Sprintf("anthropic.WithModel(%q, %+v)", class, m), m.check()) {
			delete(l.Models, class)
		}
	}
	if given.Default != notGiven && errs.Add(fmt.Sprintf("anthropic.WithDefault(%+v)", given.Default), given.Default.check()) {
		l.Default = ModelLimits{}
	}
	if given.Concurrency < 0 {
		errs.Add(fmt.Sprintf("anthropic.WithConcurrency(%d)", given.Concurrency), concurrencyError("the cap on calls in flight"))
		l.Concurrency = 0
	}
	own := map[string]bool{}
	var o []pacer.Option
	for class, m := range l.Models {
		own[class] = true
		_, set := given.Models[class]
		o = append(o, scopes(l.Concurrency, "anthropic/"+class+"/", m, tierFigures && !set)...)
	}
	o = append(o, scopes(l.Concurrency, "anthropic/", l.Default, tierFigures && given.Default == notGiven)...)
	estimate := int64(l.OutputEstimate)
	if estimate <= 0 {
		estimate = DefaultOutputEstimate
	}
	o = append(o, pacer.WithRoute(router{own, estimate}.route), pacer.WithClassifier(classifyError), meter())
	return pacer.Options(append(o, errs.Options()...)...)
}

// notGiven marks a Default that no option set: no caller's figure.
var notGiven = ModelLimits{RPM: math.MinInt, ITPM: math.MinInt, OTPM: math.MinInt}

// check returns what is wrong with m, nil if nothing.
func (m ModelLimits) check() error {
	return presetopt.Negative(presetopt.Field{Name: "RPM", N: m.RPM}, presetopt.Field{Name: "ITPM", N: m.ITPM},
		presetopt.Field{Name: "OTPM", N: m.OTPM})
}

// concurrencyError is what is wrong with a negative cap, said as what.
func concurrencyError(what string) error {
	return fmt.Errorf("%s must be at least 0 (0 means no cap)", what)
}

func apply(l *Limits, opts []Option) {
	for _, opt := range opts {
		if opt != nil {
			opt(l)
		}
	}
}

// scopes declares a class's three scopes. The token buckets hold a full
// minute, as Anthropic's do, so any request within the published limits
// can be admitted. Provisional scopes follow the limits Anthropic
// publishes, up or down.
func scopes(concurrency int, prefix string, m ModelLimits, provisional bool) []pacer.Option {
	tokens := func(n int) pacer.Limit {
		l := perMinute(n)
		l.Burst = max(n, 0)
		return l
	}
	return []pacer.Option{
		pacer.WithScope(pacer.Scope{Name: prefix + "requests", Limit: perMinute(m.RPM),
			Unit: pacer.UnitRequests, Policy: "requests", Concurrency: concurrency, Provisional: provisional}),
		pacer.WithScope(pacer.Scope{Name: prefix + UnitInputTokens, Limit: tokens(m.ITPM),
			Unit: UnitInputTokens, Policy: UnitInputTokens, Provisional: provisional}),
		pacer.WithScope(pacer.Scope{Name: prefix + UnitOutputTokens, Limit: tokens(m.OTPM),
			Unit: UnitOutputTokens, Policy: UnitOutputTokens, Provisional: provisional}),
	}
}

func perMinute(n int) pacer.Limit {
	if n == 0 {
		return pacer.Limit{}
	}
	return pacer.Limit{Count: n, Per: time.Minute}
}

type router struct {
	own      map[string]bool
	estimate int64 // output tokens charged, at most max_tokens
}

// route charges a Messages API call to its model class's three scopes,
// instead of DefaultScope.
func (r router) route(req *http.Request, charges []pacer.Charge) []pacer.Charge {
	if req.Method != http.MethodPost || req.URL == nil || !strings.HasSuffix(strings.TrimSuffix(req.URL.Path, "/"), "/messages") {
		return charges
	}
	e := estimateRequest(req)
	class := ModelClass(e.Model)
	prefix, key := "anthropic/", class
	if r.own[class] {
		prefix, key = "anthropic/"+class+"/", ""
	}
	charges = slices.DeleteFunc(charges, func(c pacer.Charge) bool { return c.Scope == pacer.DefaultScope })
	return append(charges,
		pacer.Charge{Scope: prefix + "requests", Key: key},
		pacer.Charge{Scope: prefix + UnitInputTokens, Key: key, Cost: max(e.Input, 1)},
		pacer.Charge{Scope: prefix + UnitOutputTokens, Key: key, Cost: max(outputCharge(e.MaxTokens, r.estimate), 1)})
}

// An Estimate is what a Messages API request will be charged before it runs.
type Estimate struct {
	Model string
	Input int64
	// MaxTokens is the request's max_tokens, zero when it has none: the
	// most output it can be charged, never what it is charged up front.
	MaxTokens int64
	// Output is the output charged up front: DefaultOutputEstimate, or
	// MaxTokens when that is less.
	Output int64
	// Thinking: the request turns on extended thinking (a "thinking"
	// other than {"type":"disabled"}), billed as output in full while
	// the Claude 4 models stream a summary of it; true too when the body
	// could not be read. A stream of it cut before its usage settles at
	// its reservation (pacer.CallEstimate.HiddenOutput).
	Thinking bool
}

func estimateRequest(req *http.Request) Estimate {
	fallback := Estimate{Input: DefaultRequestTokens, Output: DefaultOutputEstimate, Thinking: true}
	b, ok := reqbody.Read(req, maxEstimated+1)
	if !ok || len(b) > maxEstimated {
		return fallback
	}
	e, err := EstimateTokens(b)
	if err != nil {
		return fallback
	}
	return e
}

// EstimateTokens estimates a Messages API request from its JSON body: input,
// a token per four ASCII characters and per other character of the system
// prompt, messages and tool definitions, 4 tokens per message, 1,600 per
// image and 3,000 per document; output, DefaultOutputEstimate or
// max_tokens when that is less (max_tokens absent, which the API refuses,
// counts as DefaultOutputEstimate).
func EstimateTokens(body []byte) (Estimate, error) {
	var r struct {
		Model     string            `json:"model"`
		System    json.RawMessage   `json:"system"`
		Messages  []json.RawMessage `json:"messages"`
		Tools     json.RawMessage   `json:"tools"`
		MaxTokens int64             `json:"max_tokens"`
		Thinking  *struct {
			Type string `json:"type"`
		} `json:"thinking"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return Estimate{}, err
	}
	var c counter
	c.value(r.System)
	for _, m := range r.Messages {
		c.flat += messageOverhead
		c.value(m)
	}
	if len(r.Tools) > 0 && string(r.Tools) != "null" {
		c.add(string(r.Tools))
	}
	e := Estimate{Model: r.Model, Input: c.total(), MaxTokens: max(r.MaxTokens, 0),
		Thinking: r.Thinking != nil && r.Thinking.Type != "disabled"}
	e.Output = outputCharge(e.MaxTokens, DefaultOutputEstimate)
	return e, nil
}

// outputCharge is what a request of this max_tokens (zero: unknown) is
// charged in output tokens up front, for this estimate.
func outputCharge(maxTokens, estimate int64) int64 {
	if maxTokens > 0 {
		return min(maxTokens, estimate)
	}
	return estimate
}

type counter struct{ ascii, other, flat int64 }

func (c *counter) total() int64 { return (c.ascii+charsPerToken-1)/charsPerToken + c.other + c.flat }

func (c *counter) add(s string) {
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			c.ascii++
			i++
			continue
		}
		_, n := utf8.DecodeRuneInString(s[i:])
		c.other++
		i += n
	}
}

func (c *counter) value(raw json.RawMessage) {
	var v any
	if len(raw) > 0 && json.Unmarshal(raw, &v) == nil {
		c.walk(v, "")
	}
}

// Keys whose values are structure, not text the model reads.
var structural = map[string]bool{"role": true, "type": true, "id": true, "tool_use_id": true,
	"cache_control": true, "media_type": true, "signature": true}

func (c *counter) walk(v any, key string) {
	switch v := v.(type) {
	case string:
		if !structural[key] {
			c.add(v)
		}
	case []any:
		for _, x := range v {
			c.walk(x, key)
		}
	case map[string]any:
		switch v["type"] {
		case "image":
			c.flat += imageTokens
			return
		case "document":
			c.flat += documentTokens
			return
		}
		for k, x := range v {
			if !structural[k] {
				c.walk(x, k)
			}
		}
	}
}

// apiError is the body of a Claude API error.
// https://platform.claude.com/docs/en/api/errors
type apiError struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Details struct {
			ErrorCode string `json:"error_code"`
		} `json:"details"`
	} `json:"error"`
}

// classifyError reads the Claude API's error responses (see the package doc).
func classifyError(resp *http.Response, body []byte) classify.Verdict {
	var e apiError
	_ = json.Unmarshal(body, &e)
	msg := strings.ToLower(e.Error.Message)
	var v classify.Verdict
	switch resp.StatusCode {
	case http.StatusTooManyRequests:
		if e.Error.Details.ErrorCode == "enforced_spend_limit_reached" || strings.Contains(msg, "api usage limits") {
			return classify.Verdict{Quota: "Anthropic spend limit reached: " + e.Error.Message}
		}
		v.NeverProcessed = true
	case http.StatusBadRequest:
		if strings.Contains(msg, "credit balance is too low") {
			return classify.Verdict{Quota: "Anthropic credit balance: " + e.Error.Message}
		}
	case 529: // overloaded_error
		v.BackPressure, v.NeverProcessed = true, true
	}
	if strings.EqualFold(resp.Header.Get("X-Should-Retry"), "true") {
		v.NeverProcessed = true
	}
	return v
}
