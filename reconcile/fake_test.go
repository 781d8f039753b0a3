package reconcile_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// fakeBilling serves OpenAI's organization costs and usage reports and
// Anthropic's cost and usage reports, as their documentation shapes them
// (see the doc of reconcile.OpenAI and reconcile.Anthropic), from figures
// the test sets: dollars and tokens by group id, all in today's bucket.
// Each group's result comes on a page of its own, so that a Source must
// follow next_page to read them all. It checks the admin key's header.
type fakeBilling struct {
	srv *httptest.Server

	mu     sync.Mutex
	usd    map[string]float64 // by id: project, workspace, key or model
	tokens map[string]int64
	// answer, if set, answers instead of the report.
	answer func(w http.ResponseWriter, r *http.Request) bool
	seen   []string // the query of every request, in order
}

const adminKey = "admin-key-for-tests"

func newFakeBilling(t *testing.T) *fakeBilling {
	f := &fakeBilling{usd: map[string]float64{}, tokens: map[string]int64{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeBilling) bill(id string, usd float64, tokens int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.usd[id] += usd
	f.tokens[id] += tokens
}

func (f *fakeBilling) queries() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

func (f *fakeBilling) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, r.URL.Path+"?"+r.URL.RawQuery)
	if f.answer != nil && f.answer(w, r) {
		return
	}
	q := r.URL.Query()
	var field string
	openAI := r.URL.Path == "/v1/organization/costs" || r.URL.Path == "/v1/organization/usage/completions"
	switch {
	case openAI && r.Header.Get("Authorization") != "Bearer "+adminKey,
		!openAI && (r.Header.Get("X-Api-Key") != adminKey || r.Header.Get("Anthropic-Version") != "2023-06-01"):
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":{"message":"invalid admin key"}}`)
		return
	case openAI:
		field = q.Get("group_by")
	default:
		field = q.Get("group_by[]")
	}
	ids := []string{}
	for id := range f.usd {
		ids = append(ids, id)
	}
	for id := range f.tokens {
		if _, ok := f.usd[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	page := 0
	if p := q.Get("page"); p != "" {
		page, _ = strconv.Atoi(p)
	}
	var results []map[string]any
	if page < len(ids) {
		results = append(results, f.result(r.URL.Path, field, ids[page]))
	}
	day := time.Now().UTC().Truncate(24 * time.Hour)
	bucket := map[string]any{"results": results}
	if openAI {
		bucket["object"], bucket["start_time"], bucket["end_time"] = "bucket", day.Unix(), day.Add(24*time.Hour).Unix()
	} else {
		bucket["starting_at"], bucket["ending_at"] = day.Format(time.RFC3339), day.Add(24*time.Hour).Format(time.RFC3339)
	}
	out := map[string]any{"data": []any{bucket}, "has_more": page+1 < len(ids), "next_page": nil}
	if page+1 < len(ids) {
		out["next_page"] = strconv.Itoa(page + 1)
	}
	if openAI {
		out["object"] = "page"
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// result is one group's row of the report at path, grouped by field.
func (f *fakeBilling) result(path, field, id string) map[string]any {
	tokens := f.tokens[id]
	switch path {
	case "/v1/organization/costs":
		return map[string]any{"object": "organization.costs.result", "amount": map[string]any{"value": f.usd[id], "currency": "usd"},
			"line_item": nil, "project_id": id}
	case "/v1/organization/usage/completions":
		// Input counts its cached tokens: a tenth of it here.
		return map[string]any{"object": "organization.usage.completions.result", "input_tokens": tokens * 3 / 4, "output_tokens": tokens - tokens*3/4,
			"input_cached_tokens": tokens / 10, "num_model_requests": 1, field: id}
	case "/v1/organizations/cost_report":
		row := map[string]any{"currency": "USD", "amount": strconv.FormatFloat(f.usd[id]*100, 'f', -1, 64), "cost_type": "tokens"}
		if field == "description" {
			row["model"], row["description"] = id, "Claude, "+id
		} else {
			row[field] = id
		}
		return row
	default: // usage_report/messages
		in := tokens * 3 / 4
		return map[string]any{"uncached_input_tokens": in / 2, "cache_read_input_tokens": in / 4,
			"cache_creation": map[string]any{"ephemeral_5m_input_tokens": in - in/2 - in/4 - in/8, "ephemeral_1h_input_tokens": in / 8},
			"output_tokens":  tokens - in, field: id}
	}
}
