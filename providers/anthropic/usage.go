package anthropic

import (
	"net/http"
	"strings"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/usage"
	"github.com/pacer-go/pacer/usage/prices"
)

// meter is the preset's pacer.Meter: calls are reserved at the route's
// estimate and settled on the usage the Messages API reports, on the input
// and output tokens scopes and on budgets in those units or in
// pacer.UnitUSD, at prices.Anthropic() (override with pacer.WithPrices).
//
// The input tokens scope settles on all the input, cache reads included:
// whether Anthropic counts cache reads against its input limit was not read
// from its own pages, and counting them errs on the side of waiting, never
// of a 429. The output tokens scope keeps its reservation, max_tokens:
// whether Anthropic gives back on its output limit what a call reserved and
// did not produce was not read from its own pages either, and keeping it
// cannot cause a 429. A budget in money settles on everything billed.
func meter() pacer.Option {
	return pacer.WithMeter(pacer.Meter{
		Estimate: func(req *http.Request) (pacer.CallEstimate, bool) {
			if req.Method != http.MethodPost || req.URL == nil || !strings.HasSuffix(strings.TrimSuffix(req.URL.Path, "/"), "/messages") {
				return pacer.CallEstimate{}, false
			}
			e := estimateRequest(req)
			return pacer.CallEstimate{Model: e.Model, Usage: usage.Usage{Input: e.Input, Output: e.Output}}, true
		},
		Usage:  usage.Anthropic,
		Prices: prices.Anthropic(),
		Tokens: func(unit string, u usage.Usage) (int64, bool) {
			switch unit { // output-tokens: not settled, see above
			case UnitInputTokens:
				return u.InputTotal(), true
			}
			return 0, false
		},
	})
}
