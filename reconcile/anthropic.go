package reconcile

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Anthropic returns the Source of Anthropic's usage and cost admin API,
// read with an admin key (sk-ant-admin…, not an API key).
//
// A budget in money is compared with the cost report,
// GET /v1/organizations/cost_report, grouped by workspace_id (ByProject)
// or by description, whose rows name their model (ByModel): it does not
// group by API key. A budget in tokens is compared with the messages
// usage report, GET /v1/organizations/usage_report/messages, grouped by
// workspace_id, api_key_id or model: its uncached_input_tokens,
// cache_read_input_tokens, cache_creation's ephemeral_5m_input_tokens and
// ephemeral_1h_input_tokens, and output_tokens, added up.
//
// The shapes, as read on 2026-12-02 in the stored copies of Anthropic's
// API reference (https://platform.claude.com/docs/en/api/admin/cost_report.md,
// https://platform.claude.com/docs/en/api/admin/usage_report/retrieve_messages.md):
// starting_at ("Time buckets that start on or after this RFC 3339
// timestamp will be returned. Each time bucket will be snapped to the
// start of the minute/hour/day in UTC"), ending_at ("Time buckets that end
// before this RFC 3339 timestamp will be returned"), bucket_width ("1d",
// the cost report's only width), group_by[] (cost: workspace_id,
// description; usage: api_key_id, workspace_id, model and more), limit
// (at most 31 buckets of a day), page (the previous page's next_page),
// the headers x-api-key and anthropic-version: 2023-06-01; a report is
// {"data": [{"starting_at", "ending_at", "results": [...]}], "has_more",
// "next_page"}. The copies read were cut short before the fields of a
// result: that a cost row's amount is a decimal string in cents ("123.45"
// is $1.23), with its currency, workspace_id, description and model, and
// that a usage row's cache writes are the object cache_creation, is read
// from public clients of the API (the docs.rs crates ai-usagebar,
// src/anthropic_api/types.rs, and claude-api, src/admin/usage_report.rs),
// not from Anthropic's page. A null workspace (the default workspace) is
// matched by a Group's ID "".
func Anthropic(adminKey string, opts ...SourceOption) Source {
	h := http.Header{"X-Api-Key": {adminKey}, "Anthropic-Version": {"2023-06-01"}}
	return &anthropicSource{newSource("Anthropic", "https://api.anthropic.com", h, adminKey,
		"an organization admin creates one in the Console (Settings, Admin keys)", opts)}
}

type anthropicSource struct{ *source }

type anthropicResult struct {
	Amount        *string `json:"amount"`
	Currency      string  `json:"currency"`
	WorkspaceID   *string `json:"workspace_id"`
	APIKeyID      *string `json:"api_key_id"`
	Model         *string `json:"model"`
	Uncached      int64   `json:"uncached_input_tokens"`
	CacheRead     int64   `json:"cache_read_input_tokens"`
	Output        int64   `json:"output_tokens"`
	CacheCreation struct {
		Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
		Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
	} `json:"cache_creation"`
}

// Billed implements Source.
func (s *anthropicSource) Billed(ctx context.Context, q Query) (map[string]float64, error) {
	if s.err != nil {
		return nil, fmt.Errorf("reconcile.Anthropic: %w", s.err)
	}
	path := "/v1/organizations/usage_report/messages"
	field := map[Level]string{ByProject: "workspace_id", ByAPIKey: "api_key_id", ByModel: "model"}[q.By]
	if q.Unit == UnitUSD {
		path = "/v1/organizations/cost_report"
		switch q.By {
		case ByAPIKey:
			return nil, fmt.Errorf("the cost report (Anthropic's) does not group by API key: reconcile a budget in money ByProject (workspace) or ByModel, or one in tokens ByAPIKey")
		case ByModel:
			field = "description"
		}
	}
	// A bucket that ends at the period's end ends before a minute after it.
	v := url.Values{"starting_at": {q.Start.Format(time.RFC3339)}, "ending_at": {q.End.Add(time.Minute).Format(time.RFC3339)},
		"bucket_width": {"1d"}, "group_by[]": {field}, "limit": {"31"}}
	var sum sums
	err := eachResult(ctx, s.source, path, v, func(r *anthropicResult) error {
		id := ids{r.WorkspaceID, r.APIKeyID, r.Model}.at(q.By)
		if q.Unit != UnitUSD {
			sum.tokens(id, r.Uncached+r.CacheRead+r.CacheCreation.Ephemeral1h+r.CacheCreation.Ephemeral5m+r.Output)
			return nil
		}
		m, err := r.micros()
		sum.micros(id, m)
		return err
	})
	return sum.in(q.Unit, err)
}

// micros reads a cost row's amount, in cents, as micro-dollars.
func (r *anthropicResult) micros() (int64, error) {
	if r.Amount == nil {
		return 0, fmt.Errorf("a cost row has no amount")
	}
	if c := r.Currency; c != "" && !strings.EqualFold(c, "usd") {
		return 0, fmt.Errorf("a cost row is in %q; pacer's budgets count US dollars", c)
	}
	cents, err := strconv.ParseFloat(*r.Amount, 64)
	if err != nil || math.IsNaN(cents) || math.Abs(cents) > 1<<40 {
		return 0, fmt.Errorf("a cost row's amount %q is not a number of cents a bill holds", *r.Amount)
	}
	return int64(math.Round(cents * 1e4)), nil
}
