package openai

import (
	"net/http"
	"strings"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/usage"
	"github.com/pacer-go/pacer/usage/prices"
)

// meter is the preset's pacer.Meter: calls are reserved at the route's
// estimate; budgets in tokens or money (pacer.Budget.Spend) settle on the usage OpenAI
// reports (what it bills: input and output, the usage's Total), the tokens
// scopes do not.
//
// The tokens scopes keep the route's charge (pacer.Meter.KeepScopeCharges)
// because OpenAI's limiter does: its rate-limits guide says what a request
// is counted at before it runs — "Your rate limit is calculated as the
// maximum of `max_tokens` and the estimated number of tokens based on the
// character count of your request. Try to set the `max_tokens` value as
// close to your expected response size as possible." (see Estimate.Total
// for the address) — and nothing of a correction once the answer is known;
// its advice to bring max_tokens near the expected answer only makes sense
// if the unused part stays counted. Giving that part back to the bucket
// would make pacer believe it holds more than OpenAI counts, and the
// difference would come back as 429s. A rejected call still gives its
// charge back: OpenAI answered it without running it.
//
// The prices are prices.OpenAI(), the list prices of the models the
// presets and examples use, each with its source; a model it does not list
// needs a price from pacer.WithPrices, or a money budget refuses its calls
// with prices.ErrNoPrice.
func (r *router) meter() pacer.Option {
	return pacer.WithMeter(pacer.Meter{
		Estimate: func(req *http.Request) (pacer.CallEstimate, bool) {
			kind := endpointOf(req)
			if kind == notCharged {
				return pacer.CallEstimate{}, false
			}
			e := r.estimate(kind, req)
			return pacer.CallEstimate{Model: e.Model, Usage: usage.Usage{Input: e.Input, Output: e.Output},
				HiddenOutput: mayReason(e.Model)}, true
		},
		Usage:            usage.OpenAI,
		Prices:           prices.OpenAI(),
		KeepScopeCharges: true,
		Tokens: func(unit string, u usage.Usage) (int64, bool) {
			if unit == UnitTokens {
				return u.Total(), true
			}
			return 0, false
		},
	})
}

// mayReason reports whether a model may bill reasoning tokens that its
// stream does not show (pacer.CallEstimate.HiddenOutput): a chat
// completion's chunks carry no sign of them, and OpenAI bills them as
// output. A stream of such a model cut before its usage settles at its
// reservation, not on the text that passed. Every model is taken to
// reason but the families that do not (GPT-3.5, GPT-4, GPT-4o, GPT-4.1,
// their fine-tunes, and the "-chat" variants of GPT-5): an unknown model,
// or an Azure deployment's name, errs on the budget's side.
func mayReason(model string) bool {
	m := strings.TrimPrefix(strings.ToLower(model), "ft:")
	for _, p := range []string{"gpt-3.5", "gpt-4"} {
		if strings.HasPrefix(m, p) {
			return false
		}
	}
	return !(strings.HasPrefix(m, "gpt-5") && strings.Contains(m, "-chat"))
}
