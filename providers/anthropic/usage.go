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
// money (pacer.Budget.Spend), at prices.Anthropic() (override with pacer.WithPrices).
//
// The input tokens scope settles on all the input, cache reads included:
// whether Anthropic counts cache reads against its input limit was not read
// from its own pages, and counting them errs on the side of waiting, never
// of a 429.
//
// The output tokens scope is charged the preset's output estimate up front
// and settles on the output the call produced, as Anthropic counts it. Its
// rate-limits page, https://platform.claude.com/docs/en/api/rate-limits
// (read 2026-12-01, from a stored copy of
// https://docs.anthropic.com/en/api/rate-limits, where it redirects): "OTPM
// rate limits are evaluated in real time as output tokens are produced,
// counting only the actual tokens generated. The max_tokens parameter does
// not factor into OTPM rate limit calculations, so there is no rate limit
// downside to setting a higher max_tokens value." (Earlier translations of
// the page said the output was estimated from max_tokens and "adjusted at
// the end of the request to reflect the actual number of output tokens
// used": either way, what the call produced is what counts.)
//
// A budget reserves a call's worst case, its max_tokens of output, until
// pacer has learned what the model's calls produce (see pacer.Budget): the
// route's estimate paces the rate limit, which a long answer only delays,
// but a budget is a cap on money.
func meter() pacer.Option {
	return pacer.WithMeter(pacer.Meter{
		Estimate: func(req *http.Request) (pacer.CallEstimate, bool) {
			if req == nil || req.Method != http.MethodPost || req.URL == nil || !strings.HasSuffix(strings.TrimSuffix(req.URL.Path, "/"), "/messages") {
				return pacer.CallEstimate{}, false
			}
			e := estimateRequest(req)
			out := e.Output
			if e.MaxTokens > 0 {
				out = e.MaxTokens // the worst case, not the route's typical answer
			}
			return pacer.CallEstimate{Model: e.Model, Usage: usage.Usage{Input: e.Input, Output: out}, HiddenOutput: e.Thinking}, true
		},
		Usage:  usage.Anthropic,
		Prices: prices.Anthropic(),
		Tokens: func(unit string, u usage.Usage) (int64, bool) {
			switch unit {
			case UnitInputTokens:
				return u.InputTotal(), true
			case UnitOutputTokens:
				return u.Output, true
			}
			return 0, false
		},
	})
}
