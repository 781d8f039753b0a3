package pacer

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"time"

	"github.com/pacer-go/pacer/internal/outputs"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/usage"
	"github.com/pacer-go/pacer/usage/prices"
)

// A Meter tells a Transport what LLM calls will cost before they are sent,
// and what they cost once they are answered; see Budget. The OpenAI and
// Anthropic presets set one.
type Meter struct {
	// Estimate returns the model a request calls and the usage it may
	// reach — its worst case: a budget admits the call only if that fits,
	// and reserves it until the Transport has learned what the model's
	// calls produce (see Budget) — or false for a request it does not
	// meter. It must not consume req.Body (read req.GetBody), and should
	// not allocate for a request it does not meter.
	//
	// The Transport calls it only with a request it is about to send:
	// never for a Permit, which has none and charges what its caller
	// states (see Permit). An Estimate must still be safe for a nil
	// request, and return false for it, as the presets' do: code of
	// yours may call it directly.
	Estimate func(req *http.Request) (CallEstimate, bool)
	// Usage returns the reader of a response's usage (see usage.Selector).
	Usage usage.Selector
	// Prices are the models' prices, for budgets in money (Budget.Spend).
	// WithPrices overrides them model by model.
	Prices prices.Table
	// Tokens returns how many of a call's tokens count on a scope or a
	// budget counted in unit, or false if unit is not one of the provider's
	// token units. A scope counted in such a unit, charged with the call's
	// estimate by the preset's route, is settled on usage like a budget,
	// unless KeepScopeCharges is set.
	Tokens func(unit string, u usage.Usage) (int64, bool)
	// KeepScopeCharges leaves a metered call's scopes at what the route
	// charged them, whatever its usage says; only budgets settle on usage.
	// A provider whose rate limiter counts a call at a charge made before
	// it runs and never corrects it by the tokens used (OpenAI's tokens
	// per minute) sets it: settling the scope down to the usage would make
	// the bucket hold more than the provider's, and the difference would
	// come back as 429s.
	KeepScopeCharges bool

	// outputs learns the output of the Transport's calls, per model
	// (outputestimate.go); each Transport has its own.
	outputs *outputLearner
}

// A CallEstimate is what a Meter expects of a request.
type CallEstimate struct {
	Model string
	Usage usage.Usage
	// HiddenOutput says the call may be billed output that its stream
	// does not show (a reasoning model's thinking): a stream of it cut
	// before its usage settles at its reservation, not on what it
	// streamed (see Budget).
	HiddenOutput bool
}

// WithMeter sets the Transport's Meter; a later one replaces it, but for
// its Prices, which are added to the earlier ones'.
func WithMeter(m Meter) Option {
	return func(c *config) {
		prior := c.meter
		c.meter = &m
		if prior != nil && len(prior.Prices) > 0 {
			c.meter.Prices = maps.Clone(prior.Prices)
			maps.Copy(c.meter.Prices, m.Prices)
		}
	}
}

// WithPrices sets the prices of models, over the Meter's (a price given here
// wins, whatever the order of the options). The OpenAI and Anthropic presets
// bring their provider's prices already (prices.OpenAI(), prices.Anthropic()):
// give WithPrices only for a model they lack or a price you negotiated.
// Each price needs its Source and the date it was Read: a price you set is
// as much a figure as a preset's.
func WithPrices(t prices.Table) Option {
	return func(c *config) {
		if err := t.Validate(); err != nil {
			c.errs = append(c.errs, fmt.Errorf("WithPrices: %w", err))
			return
		}
		if c.prices == nil {
			c.prices = prices.Table{}
		}
		maps.Copy(c.prices, t)
	}
}

// meterFor returns the Transport's meter with the user's prices merged, or
// nil when there is none.
func (c *config) meterFor() *Meter {
	if c.meter == nil {
		if len(c.prices) > 0 {
			c.errs = append(c.errs, errors.New("WithPrices: no Meter reads what calls cost; use a preset that sets one (openai.Preset, anthropic.Preset) or WithMeter"))
		}
		return nil
	}
	m := *c.meter
	m.outputs = &outputLearner{}
	if len(c.prices) > 0 {
		m.Prices = maps.Clone(m.Prices)
		if m.Prices == nil {
			m.Prices = prices.Table{}
		}
		maps.Copy(m.Prices, c.prices)
	}
	return &m
}

// meterCounts reports whether the Meter counts unit: a budget in it is
// spent by every metered call.
func (c *config) meterCounts(unit string) bool {
	if c.meter == nil || c.meter.Tokens == nil {
		return false
	}
	_, ok := c.meter.Tokens(unit, usage.Usage{})
	return ok
}

// checkMeter reports a budget the Transport cannot count.
func (t *Transport) checkMeter(w *workloadState) error {
	if w.Budget.money() && (t.meter == nil || t.meter.Estimate == nil) {
		return fmt.Errorf("workload %q: a Budget in money (Spend %v) needs a Meter to price calls; use a preset that sets one (openai.Preset, anthropic.Preset) or WithMeter", w.name, w.Budget.Spend)
	}
	return nil
}

// tokens is what u counts in unit, if unit is a token unit of the meter.
func (m *Meter) tokens(unit string, u usage.Usage) (int64, bool) {
	if m.Tokens == nil {
		return 0, false
	}
	return m.Tokens(unit, u)
}

// callMeter is what a metered call reserved, to settle when it ends.
type callMeter struct {
	on    bool // the Meter estimated the call: it settles on usage
	model string
	// est is what the call reserves: the Meter's estimate, its output
	// lowered to what the model's calls were learned to produce; worst is
	// the Meter's estimate.
	est, worst usage.Usage
	price      prices.Price // the model's, for a budget in money, when priced
	priced     bool
	hidden     bool // CallEstimate.HiddenOutput
	// periodStart is the start of the budget's period when the call spent
	// it, so that Stats count a settlement in the period it belongs to.
	periodStart time.Time
}

// meterFor estimates a call the Meter meters.
func (c *call) meterFor(req *http.Request, m *Meter) error {
	e, ok := m.Estimate(req)
	if !ok {
		return nil
	}
	c.metered = callMeter{on: true, model: e.Model, est: e.Usage, worst: e.Usage, hidden: e.HiddenOutput}
	if n, ok := m.outputs.estimate(e.Model); ok && n < e.Usage.Output {
		c.metered.est.Output = n
	}
	if !c.workload.Budget.money() {
		return nil
	}
	p, ok := m.Prices.Lookup(e.Model)
	if !ok {
		c.metered.on = false
		return fmt.Errorf("%w: workload %q has a budget in money, and model %q has no price in the Meter's table; "+
			"give its price WithPrices (from the provider's pricing page) so that its calls are counted, not free",
			prices.ErrNoPrice, c.workload.name, e.Model)
	}
	c.metered.price, c.metered.priced = p, true
	return nil
}

// usageReader returns the reader of a metered call's response, or nil.
func (c *call) usageReader(req *http.Request, resp *http.Response) usage.Reader {
	if !c.metered.on || c.t.meter.Usage == nil || resp.Body == nil {
		return nil
	}
	if _, ok := resp.Body.(io.Writer); ok {
		return nil // a 101's body: not an LLM's answer
	}
	return c.t.meter.Usage(req, resp)
}

// The ceilings of a plausible usage: pacer's own rule, not a provider's
// figure, set far above what one call to a model produces or reads, so
// that a count beyond them is an error of the provider's (or of a proxy's)
// and never a long answer.
const (
	plausibleOutput = 1 << 20 // 1,048,576 tokens
	plausibleInput  = 1 << 22 // 4,194,304 tokens
)

// implausible reports whether u is more than the call could have cost:
// more output than both its worst case (its max_tokens, where it sets one)
// and plausibleOutput, or more input than both twice its estimate and
// plausibleInput. Such a count is still charged to budgets in full (the
// provider may have billed it) and to buckets within boundSettlement, as
// every count is; it is also an observe.EventImplausibleUsage and a log line, so
// that a budget it exhausts is explained.
func (m *callMeter) implausible(u usage.Usage) bool {
	return u.Output > max(m.worst.Output, plausibleOutput) ||
		u.InputTotal() > max(2*m.worst.InputTotal(), plausibleInput)
}

// reportImplausible tells observers and the log of a usage implausible for
// the call, naming the call by its method, host and path alone: a query or
// userinfo may hold a credential.
func (c *call) reportImplausible(req *http.Request, u usage.Usage) {
	var host, path string
	if req.URL != nil {
		host, path = req.URL.Host, req.URL.Path
	}
	scope := ""
	if len(c.charges) > 0 {
		scope = c.charges[0].bucket.scope.Name
	}
	err := fmt.Errorf("%s %s%s (model %q) reported usage of %d input and %d output tokens, beyond what the call could cost "+
		"(estimated %d input, at most %d output): charged in full to the workload's budget, to each rate limit's bucket at most what it refills in MaxWait",
		req.Method, host, path, c.metered.model, u.InputTotal(), u.Output, c.metered.worst.InputTotal(), c.metered.worst.Output)
	c.t.emit(observe.Event{Kind: observe.EventImplausibleUsage, Scope: scope, Workload: c.workload.name, Err: err})
	c.t.log.Warn("pacer: implausible usage", "method", req.Method, "host", host, "path", path, "model", c.metered.model,
		"workload", c.workload.name, "input_tokens", u.InputTotal(), "output_tokens", u.Output, "err", err)
}

// outputLearner learns the output of a Transport's calls per model, so
// that a metered call reserves its likely cost (internal/outputs says
// how). It is outputs.Learner under the names the meter calls it by.
type outputLearner outputs.Learner

// estimate returns the learned output of model's calls, or false while
// there is none; see outputs.Learner.Estimate.
func (l *outputLearner) estimate(model string) (int64, bool) {
	return (*outputs.Learner)(l).Estimate(model)
}

// observe records that a call to model produced n output tokens.
func (l *outputLearner) observe(model string, n int64) {
	(*outputs.Learner)(l).Observe(model, n)
}
