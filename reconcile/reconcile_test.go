package reconcile_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/period"
	"github.com/pacer-go/pacer/reconcile"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/usage/prices"
)

// The provider: every call answers 200 at once, in this process.
type llm struct{}

func (llm) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}")), Request: req, Header: http.Header{}}, nil
}

func noEstimate(*http.Request) (pacer.CallEstimate, bool) { return pacer.CallEstimate{}, false }

var daily = period.Daily(0, 0, time.UTC)

// newTransport returns a Transport of workloads "chat" and "batch", each
// with a daily budget in unit: $10 or ten million tokens.
func newTransport(t *testing.T, unit string, opts ...pacer.Option) *pacer.Transport {
	b := pacer.Budget{Limit: 10_000_000, Unit: "tokens", Stated: true, Period: daily}
	if unit == reconcile.UnitUSD {
		b = pacer.Budget{Spend: prices.Dollars(10), Period: daily}
	}
	opts = append([]pacer.Option{pacer.WithMeter(pacer.Meter{Estimate: noEstimate}),
		pacer.WithWorkload("chat", pacer.Workload{Budget: b}), pacer.WithWorkload("batch", pacer.Workload{Budget: b})}, opts...)
	tr := pacer.New(llm{}, opts...)
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	return tr
}

// spend makes n calls of workload, each charged a cent or 1000 tokens.
func spend(t *testing.T, tr *pacer.Transport, unit, workload string, n int) error {
	t.Helper()
	ctx := pacer.ContextWithWorkload(context.Background(), workload)
	if unit == reconcile.UnitUSD {
		ctx = pacer.ContextWithSpend(ctx, prices.Dollars(0.01))
	} else {
		ctx = pacer.ContextWithCost(ctx, "tokens", 1000)
	}
	for range n {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://llm.test/v1/x", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
	}
	return nil
}

// events keeps what a Reconciler tells, by kind.
type events struct {
	mu     sync.Mutex
	byKind map[observe.EventKind][]observe.Event
}

func (e *events) Observe(ev observe.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byKind == nil {
		e.byKind = map[observe.EventKind][]observe.Event{}
	}
	e.byKind[ev.Kind] = append(e.byKind[ev.Kind], ev)
}

func (e *events) of(kind observe.EventKind) []observe.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.byKind[kind])
}

func (e *events) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return fmt.Sprint(e.byKind)
}

type sourceCase struct {
	name   string
	source func(base string) reconcile.Source
	by     reconcile.Level
	id     string
	unit   string
	query  string // what every request of the report asks, as encoded
}

var sources = []sourceCase{
	{"openai costs by project", openAI, reconcile.ByProject, "proj_1", reconcile.UnitUSD, "/v1/organization/costs?bucket_width=1d&end_time="},
	{"openai usage by key", openAI, reconcile.ByAPIKey, "key_1", reconcile.UnitTokens, "/v1/organization/usage/completions?bucket_width=1d&end_time="},
	{"openai usage by model", openAI, reconcile.ByModel, "gpt-4o-mini", reconcile.UnitTokens, "&group_by=model&limit=31"},
	{"anthropic cost by workspace", anthropic, reconcile.ByProject, "wrkspc_1", reconcile.UnitUSD,
		"/v1/organizations/cost_report?bucket_width=1d&ending_at="},
	{"anthropic cost by model", anthropic, reconcile.ByModel, "claude-sonnet-4-5", reconcile.UnitUSD, "&group_by%5B%5D=description&limit=31"},
	{"anthropic usage by key", anthropic, reconcile.ByAPIKey, "apikey_1", reconcile.UnitTokens,
		"/v1/organizations/usage_report/messages?bucket_width=1d&ending_at="},
}

func openAI(base string) reconcile.Source {
	return reconcile.OpenAI(adminKey, reconcile.WithBaseURL(base), reconcile.WithHTTPClient(closing()))
}

func anthropic(base string) reconcile.Source {
	return reconcile.Anthropic(adminKey, reconcile.WithBaseURL(base), reconcile.WithHTTPClient(closing()))
}

// closing is a client that keeps no connection idle: a goroutine reading
// an idle connection is never durably blocked, and synctest.Wait would
// wait for it for ever. For the same reason, each test's fake is started
// outside its bubble: its listener's goroutine waits on the network.
func closing() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9*max(1, math.Abs(b)) }

// A drift between the bill and the charges of two workloads sharing a
// group is reported by the next poll, for the group, as an event and in
// Stats; corrected, it is spread over the workloads by their charges, and
// corrected once.
func TestDriftIsReportedWithinOneInterval(t *testing.T) {
	for _, c := range sources {
		t.Run(c.name, func(t *testing.T) {
			fake := newFakeBilling(t)
			synctest.Test(t, func(t *testing.T) {
				tr := newTransport(t, c.unit)
				ev := &events{}
				r, err := reconcile.New(reconcile.Config{Source: c.source(fake.srv.URL), Transports: []*pacer.Transport{tr},
					Groups: []reconcile.Group{{By: c.by, ID: c.id, Workloads: []string{"chat", "batch"}}},
					Every:  time.Minute, Correct: true, Observers: []observe.Observer{ev}})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				go r.Run(ctx)
				synctest.Wait() // the first poll: nothing spent, nothing billed
				if n := len(ev.of(observe.EventBudgetDrift)); n != 0 {
					t.Fatalf("%d drift events before any call", n)
				}
				// 30 calls of chat, 10 of batch; the provider bills them a
				// quarter more, and another group's calls too.
				if err := spend(t, tr, c.unit, "chat", 30); err != nil {
					t.Fatal(err)
				}
				if err := spend(t, tr, c.unit, "batch", 10); err != nil {
					t.Fatal(err)
				}
				fake.bill(c.id, 0.50, 50_000)
				fake.bill("other", 3, 300_000)
				want, charged := 0.10, 0.40
				if c.unit == reconcile.UnitTokens {
					want, charged = 10_000, 40_000
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				drifts := ev.of(observe.EventBudgetDrift)
				if len(drifts) != 1 {
					t.Fatalf("%d drift events one interval after the drift, want 1: %v", len(drifts), ev)
				}
				e := drifts[0]
				if e.Scope != string(c.by)+":"+c.id || !near(e.Amount, want) || e.Percent != 25 || e.Err == nil {
					t.Errorf("the drift event: %+v, want the group %s:%s, %v (+25 %%) and what happened", e, c.by, c.id, want)
				}
				st := r.Stats()
				g := st.Groups[0]
				if st.Polls != 2 || st.Failures != 0 || !near(g.Drift, want) || !near(g.Charged, charged) || !near(g.Corrected, want) || !g.Reported {
					t.Errorf("Stats %+v, want 2 polls, a drift of %v on %v charged, corrected", st, want, charged)
				}
				shares := map[string]float64{}
				for _, w := range g.Workloads {
					shares[w.Name] = w.Share
				}
				if !near(shares["chat"], want*3/4) || !near(shares["batch"], want/4) {
					t.Errorf("shares %v, want chat 3/4 and batch 1/4 of %v, as they were charged", shares, want)
				}
				spent := map[string]float64{}
				for _, w := range tr.Stats().Workloads {
					spent[w.Name] = w.Spent
				}
				if !near(spent["chat"], (charged+want)*3/4) || !near(spent["batch"], (charged+want)/4) {
					t.Errorf("the budgets spent %v after the correction, want the bill spread by the charges", spent)
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				if n := len(ev.of(observe.EventBudgetDrift)); n != 1 {
					t.Errorf("%d drift events after the correction, want it corrected once", n)
				}
				if g := r.Stats().Groups[0]; !near(g.Drift, 0) || !near(g.Corrected, want) {
					t.Errorf("after the correction, Stats %+v: want no drift, the correction kept", g)
				}
				for _, q := range fake.queries() {
					if !strings.Contains(q, c.query) {
						t.Errorf("the report was asked %q, want it to ask %q", q, c.query)
					}
				}
			})
		})
	}
}

// Without Correct, a drift is reported and the budgets stay as charged.
func TestDriftIsOnlyReportedByDefault(t *testing.T) {
	fake := newFakeBilling(t)
	synctest.Test(t, func(t *testing.T) {
		tr, r, _, err := chargedAndBilled(t, fake, store.NewMemory(), false, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		if g := r.Stats().Groups[0]; !near(g.Drift, -0.05) || g.Corrected != 0 || !g.Reported {
			t.Errorf("Stats %+v, want a drift of -$0.05 reported, not corrected", g)
		}
		if w := tr.Stats().Workloads; !near(w[len(w)-1].Spent, 0.10) {
			t.Errorf("the budget spent %v, want $0.10 as charged", w[len(w)-1].Spent)
		}
		// The query asks for the budget's day, by project, in days.
		q := fake.queries()[0]
		day := time.Now().UTC().Truncate(24 * time.Hour)
		for _, want := range []string{"/v1/organization/costs?", "bucket_width=1d", "group_by=project_id",
			"start_time=" + itoa(day.Unix()), "end_time=" + itoa(day.Add(24*time.Hour).Unix())} {
			if !strings.Contains(q, want) {
				t.Errorf("the query %q lacks %q", q, want)
			}
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A report that fails, answers garbage or never answers is an event that
// says why, and a count in Stats; a call made meanwhile goes at once, and
// the budgets stay as they were.
func TestAFailingReportNeverBlocksACall(t *testing.T) {
	for _, c := range []struct {
		name   string
		answer func(w http.ResponseWriter, r *http.Request) bool
		slow   bool
		key    string
		want   string
	}{
		{name: "500", answer: status(500, `{"error":{"message":"internal error"}}`), want: "answered 500 Internal Server Error: internal error"},
		{name: "garbage", answer: status(200, `<html>oops</html>`), want: "not its documented report"},
		{name: "no data", answer: status(200, `{"object":"page","has_more":false}`), want: `no "data" array`},
		{name: "more without a cursor", answer: status(200, `{"data":[],"has_more":true}`), want: "gives no next_page"},
		{name: "wrong key", key: "sk-proj-not-admin", want: "need an admin key"},
		{name: "slow", slow: true, want: "did not answer in time"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fake := newFakeBilling(t)
			synctest.Test(t, func(t *testing.T) {
				fake.answer = c.answer
				fake.bill("proj_1", 5, 0)
				client := closing()
				if c.slow {
					client.Transport = never{}
				}
				key := adminKey
				if c.key != "" {
					key = c.key
				}
				tr := newTransport(t, reconcile.UnitUSD)
				ev := &events{}
				r, err := reconcile.New(reconcile.Config{Source: reconcile.OpenAI(key, reconcile.WithBaseURL(fake.srv.URL), reconcile.WithHTTPClient(client)),
					Transports: []*pacer.Transport{tr}, Correct: true, Observers: []observe.Observer{ev},
					Groups: []reconcile.Group{{By: reconcile.ByProject, ID: "proj_1", Workloads: []string{"chat"}}}})
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error)
				go func() { done <- r.Poll(context.Background()) }()
				start := time.Now()
				if err := spend(t, tr, reconcile.UnitUSD, "chat", 3); err != nil {
					t.Fatalf("a call during the poll: %v", err)
				}
				if waited := time.Since(start); waited != 0 {
					t.Errorf("calls during the poll waited %v", waited)
				}
				err = <-done
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "calls go on as before") {
					t.Fatalf("Poll: %v, want an error saying %q", err, c.want)
				}
				failed := ev.of(observe.EventReconcileFailed)
				if len(failed) != 1 || failed[0].Err.Error() != err.Error() || failed[0].Scope != "project:proj_1" {
					t.Errorf("events %v, want one EventReconcileFailed with the error", ev)
				}
				if st := r.Stats(); st.Failures != 1 || st.LastError == nil || len(st.Groups) != 0 {
					t.Errorf("Stats %+v, want the failure counted and no figure", st)
				}
				if w := tr.Stats().Workloads; !near(w[len(w)-1].Spent, 0.03) {
					t.Errorf("the budget spent %v, want what the calls cost, nothing corrected", w[len(w)-1].Spent)
				}
			})
		})
	}
}

func status(code int, body string) func(w http.ResponseWriter, r *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool {
		w.WriteHeader(code)
		io.WriteString(w, body)
		return true
	}
}

// never is a usage API that never answers: it waits for the request's end.
type never struct{}

func (never) RoundTrip(req *http.Request) (*http.Response, error) {
	<-req.Context().Done()
	return nil, req.Context().Err()
}

func TestConfigMistakes(t *testing.T) {
	usd := newTransport(t, reconcile.UnitUSD,
		pacer.WithWorkload("hourly", pacer.Workload{Budget: pacer.Budget{Spend: prices.Dollars(1), Per: time.Hour}}),
		pacer.WithWorkload("requests", pacer.Workload{Budget: pacer.Budget{Limit: 100, Period: daily}}),
		pacer.WithWorkload("paris", pacer.Workload{Budget: pacer.Budget{Spend: prices.Dollars(1), Period: period.Daily(0, 0, time.FixedZone("CET", 3600))}}),
		pacer.WithWorkload("free", pacer.Workload{}))
	src := reconcile.OpenAI(adminKey)
	group := func(ws ...string) []reconcile.Group {
		return []reconcile.Group{{By: reconcile.ByProject, ID: "p", Workloads: ws}}
	}
	for _, c := range []struct {
		name string
		cfg  reconcile.Config
		want string
	}{
		{"no source", reconcile.Config{Transports: []*pacer.Transport{usd}, Groups: group("chat")}, "Config.Source is nil"},
		{"no transport", reconcile.Config{Source: src, Groups: group("chat")}, "Config.Transports"},
		{"no group", reconcile.Config{Source: src, Transports: []*pacer.Transport{usd}}, "Config.Groups is empty"},
		{"tolerance", reconcile.Config{Source: src, Transports: []*pacer.Transport{usd}, Groups: group("chat"), Tolerance: 1.5}, "Tolerance 1.5"},
		{"unknown workload", reconcile.Config{Source: src, Transports: []*pacer.Transport{usd}, Groups: group("caht")}, `declares no workload "caht"`},
		{"no budget", reconcile.Config{Source: src, Transports: []*pacer.Transport{usd}, Groups: group("free")}, "has no budget"},
		{"a window", reconcile.Config{Source: src, Transports: []*pacer.Transport{usd}, Groups: group("hourly")}, "no calendar period"},
		{"requests", reconcile.Config{Source: src, Transports: []*pacer.Transport{usd}, Groups: group("requests")}, "count dollars and tokens"},
		{"not UTC", reconcile.Config{Source: src, Transports: []*pacer.Transport{usd}, Groups: group("paris")}, "not at midnight UTC"},
		{"twice", reconcile.Config{Source: src, Transports: []*pacer.Transport{usd}, Groups: append(group("chat"), group("chat")...)}, "corrected twice"},
		{"no level", reconcile.Config{Source: src, Transports: []*pacer.Transport{usd},
			Groups: []reconcile.Group{{By: "team", ID: "p", Workloads: []string{"chat"}}}}, "not a level"},
	} {
		if _, err := reconcile.New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: New = %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// A level the report does not group by, or a Source without its key,
// fails the poll with an error that says what to do.
func TestSourceMistakes(t *testing.T) {
	ctx := context.Background()
	q := reconcile.Query{Start: time.Unix(0, 0), End: time.Unix(86400, 0), Now: time.Unix(100, 0), Unit: reconcile.UnitUSD}
	for _, c := range []struct {
		src  reconcile.Source
		by   reconcile.Level
		want string
	}{
		{reconcile.OpenAI(adminKey), reconcile.ByAPIKey, "groups by project only"},
		{reconcile.Anthropic(adminKey), reconcile.ByAPIKey, "does not group by API key"},
		{reconcile.OpenAI(""), reconcile.ByProject, "no admin key"},
		{reconcile.Anthropic(""), reconcile.ByProject, "no admin key"},
		{reconcile.OpenAI(adminKey, reconcile.WithBaseURL("ftp:/x")), reconcile.ByProject, "not an http(s) URL"},
	} {
		q.By = c.by
		if _, err := c.src.Billed(ctx, q); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Billed by %s: %v, want an error saying %q", c.by, err, c.want)
		}
	}
}

// A report read as the period ends is not corrected into the next one.
func TestADriftOfAPeriodOverIsNotCorrected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newTransport(t, reconcile.UnitUSD)
		if err := spend(t, tr, reconcile.UnitUSD, "chat", 10); err != nil {
			t.Fatal(err)
		}
		ev := &events{}
		r, err := reconcile.New(reconcile.Config{Source: pastMidnight{}, Transports: []*pacer.Transport{tr}, Correct: true,
			Timeout: 48 * time.Hour, Observers: []observe.Observer{ev},
			Groups: []reconcile.Group{{By: reconcile.ByProject, ID: "proj_1", Workloads: []string{"chat"}}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Poll(context.Background()); err != nil {
			t.Fatal(err)
		}
		drifts := ev.of(observe.EventBudgetDrift)
		if len(drifts) != 1 || !strings.Contains(drifts[0].Err.Error(), "not corrected: the period ended") {
			t.Fatalf("events %v, want the drift reported, not corrected", ev)
		}
		if g := r.Stats().Groups[0]; g.Corrected != 0 {
			t.Errorf("Stats %+v, want nothing corrected", g)
		}
		if w := tr.Stats().Workloads; w[len(w)-1].Spent != 0 {
			t.Errorf("the new day's budget spent %v, want nothing: the last day's drift is not its own", w[len(w)-1].Spent)
		}
	})
}

// pastMidnight bills a dollar, once the day is over.
type pastMidnight struct{}

func (pastMidnight) Billed(ctx context.Context, q reconcile.Query) (map[string]float64, error) {
	time.Sleep(time.Until(q.End) + time.Second)
	return map[string]float64{"proj_1": 1}, nil
}
