package reconcile

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// OpenAI returns the Source of OpenAI's organization usage and cost
// reports, read with an admin key (not a project's API key).
//
// A budget in money is compared with the costs report,
// GET /v1/organization/costs, grouped by project_id: that report groups
// by project and line item only, so a group of a budget in money must be
// ByProject. A budget in tokens is compared with the completions usage
// report, GET /v1/organization/usage/completions, grouped by project_id,
// api_key_id or model: its input_tokens (which count cached ones) plus
// its output_tokens.
//
// The shapes, as read on 2026-12-02 in the stored copies of OpenAI's API
// reference (https://share.apidog.com/apidoc/docs-site/370474/api-12405880
// for costs, .../api-12401171 for usage, and the parameters as the
// openai-openapi-derived client OpenAPI::Client::OpenAI 0.21 documents
// them, https://metacpan.org/source/OVID/OpenAPI-Client-OpenAI-0.21/lib/OpenAPI/Client/OpenAI/Path/organization-costs.pod):
// start_time (Unix seconds, inclusive), end_time (exclusive),
// bucket_width ("1d", the only width of costs), group_by, limit (costs: 1
// to 180 buckets), page (the previous page's next_page); a page is
// {"object": "page", "data": [buckets], "has_more", "next_page"}, a
// bucket {"start_time", "end_time", "results": [...]}, a cost result
// {"amount": {"value": 0.06, "currency": "usd"}, "line_item",
// "project_id"}, a usage result {"input_tokens", "output_tokens",
// "input_cached_tokens", "num_model_requests", "project_id", "api_key_id",
// "model", ...}. An id not grouped by, or of calls outside every project,
// is null, which a Group's ID "" matches.
func OpenAI(adminKey string, opts ...SourceOption) Source {
	h := http.Header{"Authorization": {"Bearer " + adminKey}}
	return &openAISource{newSource("OpenAI", "https://api.openai.com", h, adminKey,
		"create one at https://platform.openai.com/settings/organization/admin-keys", opts)}
}

type openAISource struct{ *source }

type openAIResult struct {
	Amount *struct {
		Value    float64 `json:"value"`
		Currency string  `json:"currency"`
	} `json:"amount"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	ProjectID    *string `json:"project_id"`
	APIKeyID     *string `json:"api_key_id"`
	Model        *string `json:"model"`
}

// Billed implements Source.
func (s *openAISource) Billed(ctx context.Context, q Query) (map[string]float64, error) {
	if s.err != nil {
		return nil, fmt.Errorf("reconcile.OpenAI: %w", s.err)
	}
	path := "/v1/organization/usage/completions"
	field := map[Level]string{ByProject: "project_id", ByAPIKey: "api_key_id", ByModel: "model"}[q.By]
	limit := "31" // buckets of a day: a month's
	if q.Unit == UnitUSD {
		if q.By != ByProject {
			return nil, fmt.Errorf("OpenAI's costs report groups by project only, not by %s: reconcile a budget in money ByProject, or one in tokens by %s", q.By, q.By)
		}
		path, limit = "/v1/organization/costs", "180"
	}
	v := url.Values{"start_time": {strconv.FormatInt(q.Start.Unix(), 10)}, "end_time": {strconv.FormatInt(q.End.Unix(), 10)},
		"bucket_width": {"1d"}, "group_by": {field}, "limit": {limit}}
	var sum sums
	err := eachResult(ctx, s.source, path, v, func(r *openAIResult) error {
		id := ids{r.ProjectID, r.APIKeyID, r.Model}.at(q.By)
		if q.Unit != UnitUSD {
			sum.tokens(id, r.InputTokens+r.OutputTokens)
			return nil
		}
		switch {
		case r.Amount == nil:
			return fmt.Errorf("a cost result has no amount")
		case !strings.EqualFold(r.Amount.Currency, "usd"):
			return fmt.Errorf("a cost is in %q; pacer's budgets count US dollars", r.Amount.Currency)
		case math.IsNaN(r.Amount.Value) || math.Abs(r.Amount.Value) > 1<<33:
			return fmt.Errorf("a cost of %v is more than any bill holds", r.Amount.Value)
		}
		sum.micros(id, int64(math.Round(r.Amount.Value*1e6)))
		return nil
	})
	return sum.in(q.Unit, err)
}
