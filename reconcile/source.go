package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// A SourceOption changes a Source.
type SourceOption func(*source)

// WithBaseURL sends the Source's requests to base instead of the
// provider's API: a proxy, or a fake in a test. base is a URL such as
// "http://127.0.0.1:8080"; the report's path is added to it.
func WithBaseURL(base string) SourceOption {
	return func(s *source) { s.base = strings.TrimRight(base, "/") }
}

// WithHTTPClient makes the Source send its requests with c instead of
// http.DefaultClient. Give it a client of its own, not one that goes
// through a pacer Transport whose budgets it checks.
func WithHTTPClient(c *http.Client) SourceOption {
	return func(s *source) { s.client = c }
}

// source is what both providers' Sources share: where to send, with what.
type source struct {
	name   string // "OpenAI", "Anthropic", for errors
	base   string
	client *http.Client
	header http.Header // the admin key and any version
	err    error       // of the options, said by every Billed
}

// maxReport is the most of one page of a report a Source reads: a page
// holds at most a few hundred buckets of a few groups each.
const maxReport = 8 << 20

// maxPages is the most pages a Source follows for one report.
const maxPages = 100

// newSource returns the source of a provider's reports at base, sent with
// header, which holds key; hint says where to get a key.
func newSource(name, base string, header http.Header, key, hint string, opts []SourceOption) *source {
	s := &source{name: name, base: base, client: http.DefaultClient, header: header}
	for _, o := range opts {
		o(s)
	}
	if s.client == nil {
		s.client = http.DefaultClient
	}
	switch u, err := url.Parse(s.base); {
	case err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		s.err = fmt.Errorf("the base URL %q is not an http(s) URL", s.base)
	case key == "":
		s.err = fmt.Errorf("no admin key; %s", hint)
	}
	return s
}

// get fetches one page of a report at path with query q, and decodes it
// into page.
func (s *source) get(ctx context.Context, path string, q url.Values, page any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+path+"?"+q.Encode(), nil)
	if err != nil {
		return fmt.Errorf("%s %s: %w", s.name, path, err)
	}
	for k, v := range s.header {
		req.Header[k] = v
	}
	resp, err := s.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s's %s did not answer in time (%w); raise Config.Timeout if the report is large", s.name, path, ctx.Err())
		}
		return fmt.Errorf("%s's %s could not be reached: %w", s.name, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxReport+1))
	switch {
	case err != nil:
		return fmt.Errorf("reading %s's %s: %w", s.name, path, err)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%s's %s refused the key (%s): the usage and cost reports need an admin key%s", s.name, path, resp.Status, message(body))
	case resp.StatusCode/100 != 2:
		return fmt.Errorf("%s's %s answered %s%s", s.name, path, resp.Status, message(body))
	case len(body) > maxReport:
		return fmt.Errorf("%s's %s answered a page of more than %d bytes, more than a report holds", s.name, path, maxReport)
	}
	if err := json.Unmarshal(body, page); err != nil {
		return fmt.Errorf("%s's %s answered something that is not its documented report: %w", s.name, path, err)
	}
	return nil
}

// message returns the provider's error message in body, or "".
func message(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error.Message == "" {
		return ""
	}
	m := e.Error.Message
	if len(m) > 200 {
		m = m[:200] + "…"
	}
	return ": " + m
}

// errNoData is the error of a page without its data: a report that
// drifted from its documented shape must not read as no spend.
var errNoData = errors.New("the page has no \"data\" array")

// page is one page of a report of both providers: its buckets of
// results R, and its paging.
type page[R any] struct {
	Data *[]struct {
		Results []R `json:"results"`
	} `json:"data"`
	HasMore  bool    `json:"has_more"`
	NextPage *string `json:"next_page"`
}

// eachResult gives each result of every page of the report at path, from
// query v, to read, following next_page; a read's error ends it.
func eachResult[R any](ctx context.Context, s *source, path string, v url.Values, read func(*R) error) error {
	for pages := 1; ; pages++ {
		var p page[R]
		if err := s.get(ctx, path, v, &p); err != nil {
			return err
		}
		if p.Data == nil {
			return fmt.Errorf("%s's %s: %w", s.name, path, errNoData)
		}
		for _, b := range *p.Data {
			for i := range b.Results {
				if err := read(&b.Results[i]); err != nil {
					return fmt.Errorf("%s's %s: %w", s.name, path, err)
				}
			}
		}
		switch {
		case !p.HasMore:
			return nil
		case p.NextPage == nil || *p.NextPage == "":
			return fmt.Errorf("%s's %s says it has more pages, but gives no next_page", s.name, path)
		case pages >= maxPages:
			return fmt.Errorf("%s's %s has more than %d pages; reconcile a shorter period", s.name, path, maxPages)
		}
		v.Set("page", *p.NextPage)
	}
}

// ids is what a report says a result is of; nil when it says null.
type ids struct{ project, key, model *string }

// at is the id at level by, "" when null.
func (i ids) at(by Level) string {
	p := map[Level]*string{ByProject: i.project, ByAPIKey: i.key, ByModel: i.model}[by]
	if p == nil {
		return ""
	}
	return *p
}

// sums adds up a report's results by id: tokens, or micro-dollars, so
// that a sum of many costs is exact.
type sums struct {
	tokensBy map[string]int64
	microsBy map[string]int64
}

func (s *sums) tokens(id string, n int64) {
	if s.tokensBy == nil {
		s.tokensBy = map[string]int64{}
	}
	s.tokensBy[id] += n
}

func (s *sums) micros(id string, n int64) {
	if s.microsBy == nil {
		s.microsBy = map[string]int64{}
	}
	s.microsBy[id] += n
}

// in returns the sums in unit (dollars for UnitUSD), or err.
func (s *sums) in(unit string, err error) (map[string]float64, error) {
	if err != nil {
		return nil, err
	}
	by, scale := s.tokensBy, 1.0
	if unit == UnitUSD {
		by, scale = s.microsBy, 1e6
	}
	out := make(map[string]float64, len(by))
	for id, n := range by {
		out[id] = float64(n) / scale
	}
	return out, nil
}
