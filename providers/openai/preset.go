package openai

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/internal/presetopt"
	"github.com/pacer-go/pacer/providers/internal/reqbody"
)

// The scopes of models the Limits do not list, one bucket per model.
// A listed model has its own scopes, "openai/<model>/requests" and
// "openai/<model>/tokens".
const (
	ScopeRequests = "openai/requests"
	ScopeTokens   = "openai/tokens"
)

// ScopeProjectTokens is the project's token limit, one bucket across every
// model, charged each call's tokens as the per-model tokens scopes are.
// OpenAI's rate-limits guide documents its headers,
// x-ratelimit-{limit,remaining,reset}-project-tokens, which "may be present
// when a project-scoped token limit applies", and no figure: the scope
// paces nothing until a response publishes a limit (its Limit is a
// placeholder no project reaches), then follows it, up or down, as the
// per-model scopes follow theirs.
const ScopeProjectTokens = "openai/project-tokens"

// projectPlaceholder is the project scope's Limit until a response
// publishes one: more tokens a minute than any project is given, so it
// paces nothing, and a bucket of a whole minute, whose shape a published
// limit keeps (as the per-model tokens scopes keep theirs), so that any
// request within the project's limit can be admitted. With no Limit, a
// learned one would get pacer's default burst, a tenth of a minute, and a
// request above it would fail with pacer.ErrExceedsCapacity.
var projectPlaceholder = pacer.Limit{Count: math.MaxInt32, Per: time.Minute, Burst: math.MaxInt32}

// UnitTokens is the unit of the tokens scopes.
const UnitTokens = "tokens"

// The quota names ratelimitheader.ParseQuotas gives OpenAI's x-ratelimit-*-requests
// and x-ratelimit-*-tokens headers; the preset's scopes declare them as their
// Policy so that each header settles its own bucket.
const (
	policyRequests      = "requests"
	policyTokens        = "tokens"
	policyProjectTokens = "project-tokens"
)

// Defaults of the estimate, changed with WithDefaultOutputTokens and
// WithDefaultRequestTokens.
const (
	// DefaultOutputTokens is the output reserved for a request that sets no
	// max_tokens. OpenAI does not publish what it reserves then; the first
	// response's x-ratelimit-remaining-tokens settles the difference.
	DefaultOutputTokens = 1024
	// DefaultRequestTokens is the charge of a request whose body cannot be
	// read without consuming it (req.GetBody is nil), or is not JSON.
	DefaultRequestTokens = 2048
	// maxEstimatedBody is the most of a body the estimate reads; a larger
	// body is charged by its size, a token per four bytes.
	maxEstimatedBody = 4 << 20
)

// An Option changes the preset.
type Option func(*settings)

type settings struct {
	limits               Limits
	defaultOutputTokens  int64
	defaultRequestTokens int64
	// tierFigures: the limits are a tier's, from OpenAI's docs, not the
	// organization's own (see Preset); given names what the caller set.
	tierFigures  bool
	given        map[string]bool // models set WithModel
	givenDefault bool            // Default set WithDefault
	errs         presetopt.Errors
}

// WithModel sets one model's limits, as the organization's limits page
// shows them. name is the model without a snapshot date.
func WithModel(name string, l ModelLimits) Option {
	return func(s *settings) {
		if !s.errs.Add(fmt.Sprintf("openai.WithModel(%q, %+v)", name, l), l.check()) {
			s.limits.Models[name], s.given[name] = l, true
		}
	}
}

// WithDefault sets the limits of every model the table does not list, as
// the organization's limits page shows them. They are paced as given, and
// a published limit only ever lowers them.
func WithDefault(l ModelLimits) Option {
	return func(s *settings) {
		if !s.errs.Add(fmt.Sprintf("openai.WithDefault(%+v)", l), l.check()) {
			s.limits.Default, s.givenDefault = l, true
		}
	}
}

// WithConcurrency caps the calls in flight per model at n; 0 sets no cap.
// A negative n is a configuration error.
func WithConcurrency(n int) Option {
	return func(s *settings) {
		if !s.errs.Add(fmt.Sprintf("openai.WithConcurrency(%d)", n), atLeast(int64(n), 0, "the cap on calls in flight", " (0 means no cap)")) {
			s.limits.Concurrency = n
		}
	}
}

// WithDefaultOutputTokens sets the output reserved for a request that sets
// no maximum. The default is DefaultOutputTokens; a negative n is a
// configuration error.
func WithDefaultOutputTokens(n int64) Option {
	return func(s *settings) {
		if !s.errs.Add(fmt.Sprintf("openai.WithDefaultOutputTokens(%d)", n), atLeast(n, 0, "the output reserved", "")) {
			s.defaultOutputTokens = n
		}
	}
}

// WithDefaultRequestTokens sets the charge of a request whose body the
// estimate cannot read. The default is DefaultRequestTokens; n below 1 is
// a configuration error.
func WithDefaultRequestTokens(n int64) Option {
	return func(s *settings) {
		if !s.errs.Add(fmt.Sprintf("openai.WithDefaultRequestTokens(%d)", n), atLeast(n, 1, "a request's charge", "")) {
			s.defaultRequestTokens = n
		}
	}
}

// atLeast returns what is wrong with n, what, below least; nil if nothing.
func atLeast(n, least int64, what, note string) error {
	if n >= least {
		return nil
	}
	return fmt.Errorf("%s must be at least %d%s", what, least, note)
}

// check returns what is wrong with m, nil if nothing.
func (m ModelLimits) check() error {
	return presetopt.Negative(presetopt.Field{Name: "RPM", N: m.RPM}, presetopt.Field{Name: "TPM", N: m.TPM},
		presetopt.Field{Name: "RPD", N: m.RPD}, presetopt.Field{Name: "TPD", N: m.TPD})
}

// check records what is wrong with l, given to PresetLimits, and leaves
// out what is, so that only the caller's words report it.
func (s *settings) check(l *Limits) {
	for name, m := range l.Models {
		if s.errs.Add(fmt.Sprintf("openai.PresetLimits: Limits.Models[%q]", name), m.check()) {
			delete(l.Models, name)
		}
	}
	if s.errs.Add("openai.PresetLimits: Limits.Default", l.Default.check()) {
		l.Default = ModelLimits{}
	}
	if s.errs.Add("openai.PresetLimits", atLeast(int64(l.Concurrency), 0, fmt.Sprintf("Limits.Concurrency %d", l.Concurrency), " (0 means no cap)")) {
		l.Concurrency = 0
	}
}

// Preset returns the options that pace calls to the OpenAI API at the
// published limits of the tier, changed by opts. Options given to pacer.New
// after it override what it sets.
//
// Its Meter prices calls at prices.OpenAI() (see Prices in the package doc):
// a budget in money (pacer.Budget.Spend) needs no pacer.WithPrices.
//
// The tier's figures are OpenAI's defaults for the tier, and a model the
// table does not list starts at a guess (the smallest figures the table
// holds); an organization's own limits may differ from both. So they are
// provisional (pacer.Scope.Provisional): the limits OpenAI publishes for
// each model in x-ratelimit-limit-requests and x-ratelimit-limit-tokens,
// which are the organization's, replace them from the first response on,
// higher or lower. Figures set WithModel or WithDefault are not.
//
// An unknown tier is a configuration error: it has no figures to pace by.
func Preset(tier Tier, opts ...Option) pacer.Option {
	o := presetLimits(tier.Limits(), true, opts)
	if _, ok := tierModels[tier]; !ok {
		var errs presetopt.Errors
		errs.Add(fmt.Sprintf("openai.Preset(%d)", int(tier)), fmt.Errorf("no such tier; use openai.Tier1 to openai.Tier5"))
		return pacer.Options(append([]pacer.Option{o}, errs.Options()...)...)
	}
	return o
}

// PresetLimits is Preset with figures of your own, such as those of your
// organization's limits page. They are paced as given, Default included,
// and a published limit only ever lowers them. A negative figure is a
// configuration error.
func PresetLimits(l Limits, opts ...Option) pacer.Option {
	return presetLimits(l, false, opts)
}

func presetLimits(l Limits, tierFigures bool, opts []Option) pacer.Option {
	s := &settings{limits: l.clone(), defaultOutputTokens: DefaultOutputTokens,
		defaultRequestTokens: DefaultRequestTokens, tierFigures: tierFigures, given: map[string]bool{}}
	s.check(&s.limits)
	for _, opt := range opts {
		if opt != nil {
			opt(s)
		}
	}
	models := make(map[string]bool, len(s.limits.Models))
	var o []pacer.Option
	for name, m := range s.limits.Models {
		models[name] = true
		o = append(o, s.scopes("openai/"+name+"/", m, s.tierFigures && !s.given[name])...)
	}
	o = append(o, s.scopes("openai/", s.limits.Default, s.tierFigures && !s.givenDefault)...)
	o = append(o, pacer.WithScope(pacer.Scope{Name: ScopeProjectTokens, Limit: projectPlaceholder, Unit: UnitTokens,
		Policy: policyProjectTokens, Provisional: true}))
	daily := map[string]ModelLimits{"": s.limits.Default}
	for name, m := range s.limits.Models {
		daily[name] = m
	}
	r := &router{settings: s, models: models, daily: daily}
	o = append(o, pacer.WithRoute(r.route), pacer.WithClassifier(classifyError), r.meter())
	return pacer.Options(append(o, s.errs.Options()...)...)
}

// The daily scopes' suffixes: "openai/gpt-4o-mini/requests-per-day".
const (
	perDayRequests = "requests-per-day"
	perDayTokens   = "tokens-per-day"
	// policyDaily names no quota OpenAI's headers report, so that they
	// never clamp a daily scope: x-ratelimit-*-requests report whichever
	// limit binds, and ParseQuotas reads them as per minute.
	policyDaily = "openai/daily"
)

// scopes declares a model's scopes under prefix: requests and tokens per
// minute, and per day where the model has daily limits. The tokens bucket
// holds a full minute of TPM, as OpenAI's own bucket does, so that any
// request within the published limit can be admitted; the requests bucket
// keeps pacer's default burst. Provisional scopes follow the limits OpenAI
// publishes, up or down; the daily scopes keep their figures, since no
// header reports a daily limit as such. A daily limit is spread over the
// day: at most its default burst (a tenth) at once, the rest as it
// refills, so that a busy hour cannot spend the day's requests and leave
// 429s until tomorrow.
func (s *settings) scopes(prefix string, m ModelLimits, provisional bool) []pacer.Option {
	tpm := perMinute(m.TPM)
	tpm.Burst = max(m.TPM, 0)
	o := []pacer.Option{
		pacer.WithScope(pacer.Scope{Name: prefix + "requests", Limit: perMinute(m.RPM), Unit: pacer.UnitRequests,
			Policy: policyRequests, Concurrency: s.limits.Concurrency, Provisional: provisional}),
		pacer.WithScope(pacer.Scope{Name: prefix + "tokens", Limit: tpm, Unit: UnitTokens, Policy: policyTokens,
			Provisional: provisional}),
	}
	if m.RPD != 0 {
		o = append(o, pacer.WithScope(pacer.Scope{Name: prefix + perDayRequests, Limit: perDay(m.RPD),
			Unit: pacer.UnitRequests, Policy: policyDaily}))
	}
	if m.TPD != 0 {
		o = append(o, pacer.WithScope(pacer.Scope{Name: prefix + perDayTokens, Limit: perDay(m.TPD),
			Unit: UnitTokens, Policy: policyDaily}))
	}
	return o
}

// perDay is the Limit of n a day.
func perDay(n int) pacer.Limit { return pacer.Limit{Count: n, Per: 24 * time.Hour} }

// perMinute is the Limit of n a minute; zero sets no limit, and a negative
// n is kept so that pacer.New reports it.
func perMinute(n int) pacer.Limit {
	if n == 0 {
		return pacer.Limit{}
	}
	return pacer.Limit{Count: n, Per: time.Minute}
}

type router struct {
	*settings
	models map[string]bool
	daily  map[string]ModelLimits // the daily limits by model; "" for Default's
}

// route charges a call to a token-counted endpoint to its model's requests
// and tokens scopes, and to the project's tokens scope, at the estimate of
// its body, instead of DefaultScope.
// Other calls keep the charges they had.
func (r *router) route(req *http.Request, charges []pacer.Charge) []pacer.Charge {
	kind := endpointOf(req)
	if kind == notCharged {
		return charges
	}
	e := r.estimate(kind, req)
	model := baseModel(e.Model)
	prefix, key, limits := "openai/", model, r.daily[""]
	if r.models[model] {
		prefix, key, limits = "openai/"+model+"/", "", r.daily[model]
	}
	// The model's scopes replace DefaultScope: a call to a model is paced
	// by the model's limits, and reported under its scopes.
	charges = slices.DeleteFunc(charges, func(c pacer.Charge) bool { return c.Scope == pacer.DefaultScope })
	cost := max(e.Total(), 1)
	charges = append(charges,
		pacer.Charge{Scope: prefix + "requests", Key: key},
		pacer.Charge{Scope: prefix + "tokens", Key: key, Cost: cost},
		pacer.Charge{Scope: ScopeProjectTokens, Cost: cost})
	if limits.RPD != 0 {
		charges = append(charges, pacer.Charge{Scope: prefix + perDayRequests, Key: key})
	}
	if limits.TPD != 0 {
		charges = append(charges, pacer.Charge{Scope: prefix + perDayTokens, Key: key, Cost: cost})
	}
	return charges
}

// estimate reads the request's body through GetBody, never req.Body.
func (r *router) estimate(kind endpoint, req *http.Request) Estimate {
	fallback := Estimate{Input: r.defaultRequestTokens}
	b, ok := reqbody.Read(req, maxEstimatedBody+1)
	if !ok {
		return fallback
	}
	if len(b) > maxEstimatedBody {
		size := max(req.ContentLength, int64(len(b)))
		return Estimate{Model: modelNear(b), Input: size / charsPerToken}
	}
	e, err := estimate(kind, b, r.defaultOutputTokens)
	if err != nil {
		return fallback
	}
	return e
}

// modelNear finds the "model" field of a JSON body too large to decode
// whole, where SDKs put it: near the start. "" when it is not there.
func modelNear(b []byte) string {
	head := string(b[:min(len(b), 4096)])
	i := strings.Index(head, `"model"`)
	if i < 0 {
		return ""
	}
	dec := json.NewDecoder(strings.NewReader(strings.TrimLeft(head[i+len(`"model"`):], " \t\r\n:")))
	var model string
	if dec.Decode(&model) != nil {
		return ""
	}
	return model
}
