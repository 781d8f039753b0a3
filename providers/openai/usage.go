package openai

import (
	"net/http"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/usage"
	"github.com/pacer-go/pacer/usage/prices"
)

// meter is the preset's pacer.Meter: calls are reserved at the route's
// estimate and settled on the usage OpenAI reports, on the tokens scopes
// and on budgets in tokens or pacer.UnitUSD.
//
// OpenAI's tokens-per-minute limit counts a call's input and output, so a
// tokens scope settles on the usage's Total. The prices are
// prices.OpenAI(), the list prices of the models the presets and examples
// use, each with its source; a model it does not list needs a price from
// pacer.WithPrices, or a money budget refuses its calls with
// pacer.ErrNoPrice.
func (r *router) meter() pacer.Option {
	return pacer.WithMeter(pacer.Meter{
		Estimate: func(req *http.Request) (pacer.CallEstimate, bool) {
			kind := endpointOf(req)
			if kind == notCharged {
				return pacer.CallEstimate{}, false
			}
			e := r.estimate(kind, req)
			return pacer.CallEstimate{Model: e.Model, Usage: usage.Usage{Input: e.Input, Output: e.Output}}, true
		},
		Usage:  usage.OpenAI,
		Prices: prices.OpenAI(),
		Tokens: func(unit string, u usage.Usage) (int64, bool) {
			if unit == UnitTokens {
				return u.Total(), true
			}
			return 0, false
		},
	})
}
