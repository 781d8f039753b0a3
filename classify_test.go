package pacer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/classify"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/retry"
)

// insufficientQuota is how OpenAI answers when the account's credit is gone.
var insufficientQuota = WithClassifier(func(resp *http.Response, body []byte) classify.Verdict {
	if resp.StatusCode == http.StatusTooManyRequests && strings.Contains(string(body), `"insufficient_quota"`) {
		return classify.Verdict{Quota: "the account's quota is spent (insufficient_quota)"}
	}
	return classify.Verdict{}
})

func TestSpentQuotaIsAClearErrorAndNotRetried(t *testing.T) {
	api := &failingAPI{status: http.StatusTooManyRequests}
	body := `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`
	tr := New(roundTripFunc(func(req *http.Request) (*http.Response, error) {
		api.RoundTrip(req)
		return &http.Response{StatusCode: 429, Body: io.NopCloser(strings.NewReader(body)), Request: req, Header: http.Header{}}, nil
	}), insufficientQuota, fastRetries)
	err := get(tr, context.Background(), "http://api.test/")
	var qe *QuotaError
	if !errors.As(err, &qe) || !errors.Is(err, ErrBudgetExhausted) || !strings.Contains(err.Error(), "insufficient_quota") {
		t.Fatalf("err = %v, want a QuotaError matching ErrBudgetExhausted", err)
	}
	if api.calls != 1 {
		t.Errorf("attempted %d times, want once", api.calls)
	}
	// The attempt got an answer: the retry.Error says which, as its doc
	// says, and reads as one sentence, its cause's words first.
	var re *retry.Error
	if !errors.As(err, &re) || re.LastStatus != 429 || re.Attempts != 1 {
		t.Fatalf("err = %#v, want a retry.Error of 1 attempt, last status 429", err)
	}
	want := "pacer: the provider refused the call with status 429 for a spent quota, which waiting will not restore: " +
		"the account's quota is spent (insufficient_quota); 1 attempt sent, no other: a spent quota does not come back on a retry"
	if msg := err.Error(); msg != want {
		t.Errorf("err = %q\nwant  %q", msg, want)
	}
	// It did not pause or slow the scope: the next call goes at once.
	if f := tr.scopes[DefaultScope].shared.rateFactor(); f != 1 {
		t.Errorf("a spent quota cut the rate to %v", f)
	}
}

func TestClassifiedBodyIsKeptForTheCaller(t *testing.T) {
	body := strings.Repeat("x", 3*maxClassifiedBody)
	var seen int
	tr := New(roundTripFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 400, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
	}), WithClassifier(func(_ *http.Response, b []byte) classify.Verdict { seen = len(b); return classify.Verdict{} }))
	resp, err := tr.RoundTrip(mustRequest(t))
	mustNotErr(t, err)
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(got) != body || seen != maxClassifiedBody {
		t.Errorf("the caller read %d bytes (want %d); the classifier saw %d (want %d)", len(got), len(body), seen, maxClassifiedBody)
	}
}

func TestBackPressureStatusSlowsDownLikeA429(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &scriptedAPI{steps: []scripted{{529, map[string]string{"Retry-After": "2"}}}}
		tr := New(api, WithLimit(PerSecond(100)), WithClassifier(classify.BackPressure(529)), fastRetries)
		start := time.Now()
		mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
		sent := api.sentTimes()
		if len(sent) != 2 || sent[1].Sub(start) < 2*time.Second {
			t.Fatalf("sent at %v, want a retry after the 2 s the 529 asked for", sent)
		}
		if f := tr.scopes[DefaultScope].shared.rateFactor(); f >= 1 {
			t.Errorf("a 529 left the rate factor at %v, want it cut", f)
		}
	})
}

func TestNeverProcessedPostIsRetried(t *testing.T) {
	api := &failingAPI{status: http.StatusTooManyRequests}
	tr := New(roundTripFunc(func(req *http.Request) (*http.Response, error) {
		api.RoundTrip(req)
		return &http.Response{StatusCode: 429, Body: io.NopCloser(strings.NewReader(`{"code":20429}`)), Request: req, Header: http.Header{}}, nil
	}), fastRetries, WithClassifier(func(resp *http.Response, body []byte) classify.Verdict {
		return classify.Verdict{NeverProcessed: strings.Contains(string(body), `"code":20429`)}
	}))
	req, _ := http.NewRequest(http.MethodPost, "http://api.test/Messages.json", strings.NewReader("To=1&Body=hi"))
	resp, err := tr.RoundTrip(req)
	mustNotErr(t, err)
	resp.Body.Close()
	if api.calls != 3 {
		t.Errorf("a POST refused before processing was attempted %d times, want 3", api.calls)
	}
}

// recorder is an observe.Observer that keeps what it hears.
type recorder struct {
	mu     sync.Mutex
	events []observe.Event
}

func (r *recorder) Observe(e observe.Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// of returns the events of kind heard so far.
func (r *recorder) of(kind observe.EventKind) []observe.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []observe.Event
	for _, e := range r.events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// thresholds returns the budget thresholds heard since it was last called,
// as "workload percent%", and forgets every event heard until now.
func (r *recorder) thresholds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if e.Kind == observe.EventBudgetThreshold {
			out = append(out, fmt.Sprintf("%s %d%%", e.Workload, e.Percent))
		}
	}
	r.events = nil
	return out
}

func (r *recorder) kinds() map[observe.EventKind]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := map[observe.EventKind]int{}
	for _, e := range r.events {
		n[e.Kind]++
	}
	return n
}

func TestObserverHearsEveryKindOfEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		api := &scriptedAPI{steps: []scripted{
			{http.StatusOK, nil},
			{http.StatusTooManyRequests, map[string]string{"Retry-After": "1"}},
		}}
		tr := New(api, WithObserver(rec), WithLimit(Limit{Count: 2, Per: time.Second, Burst: 1}), fastRetries,
			WithWorkload("nightly", Workload{Budget: Budget{Limit: 3, Per: time.Hour}}))
		nightly := ContextWithWorkload(context.Background(), "nightly")
		mustNotErr(t, get(tr, nightly, "http://api.test/")) // admitted
		mustNotErr(t, get(tr, nightly, "http://api.test/")) // waited, 429, cooldown, retried, cooldown ended
		short, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		get(tr, short, "http://api.test/") // throttled
		if err := get(tr, nightly, "http://api.test/"); !errors.Is(err, ErrBudgetExhausted) {
			t.Fatalf("err = %v, want the budget spent", err)
		}
		got := rec.kinds()
		for _, k := range []observe.EventKind{observe.EventAdmitted, observe.EventWaited, observe.EventThrottled, observe.EventRejected, observe.EventCooldownStarted, observe.EventCooldownEnded, observe.EventRetried, observe.EventBudgetExhausted, observe.EventBudgetThreshold} {
			if got[k] == 0 {
				t.Errorf("no %v event; heard %v", k, got)
			}
		}
		for _, e := range rec.events {
			budget := e.Kind == observe.EventBudgetExhausted || e.Kind == observe.EventBudgetThreshold // a workload's, not a scope's
			if !budget && e.Scope != DefaultScope || e.Workload != "nightly" && e.Kind != observe.EventThrottled {
				t.Errorf("event %+v: want scope %q and workload nightly", e, DefaultScope)
			}
		}
	})
}

// A classifier's Wait stands in for a Retry-After the response lacks: it
// pauses the scope and delays the retry; a Retry-After header wins over it.
func TestVerdictWaitPausesWhenTheHeadersNameNoTime(t *testing.T) {
	cases := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"no header: the verdict's wait", nil, time.Minute},
		{"Retry-After wins", map[string]string{"Retry-After": "5"}, 5 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := &scriptedAPI{steps: []scripted{{403, c.header}}}
				var pauses []time.Duration
				var mu sync.Mutex
				observe := WithObserver(observe.Func(func(e observe.Event) {
					if e.Kind == observe.EventCooldownStarted {
						mu.Lock()
						pauses = append(pauses, e.Wait)
						mu.Unlock()
					}
				}))
				tr := New(api, WithLimit(PerSecond(100)), fastRetries, observe, WithClassifier(func(resp *http.Response, _ []byte) classify.Verdict {
					if resp.StatusCode == 403 {
						return classify.Verdict{BackPressure: true, Wait: time.Minute}
					}
					return classify.Verdict{}
				}))
				start := time.Now()
				mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
				sent := api.sentTimes()
				// The pause empties the bucket too, so the retry waits for one
				// token more: a few milliseconds at 100/s.
				if len(sent) != 2 || sent[1].Sub(start) < c.want || sent[1].Sub(start) > c.want+100*time.Millisecond {
					t.Fatalf("sent at %v, want a retry %v later", sent, c.want)
				}
				// The scope was paused for every caller, not only the retry.
				mu.Lock()
				defer mu.Unlock()
				if len(pauses) != 1 || pauses[0] != c.want {
					t.Errorf("the scope's pauses: %v, want one of %v", pauses, c.want)
				}
			})
		})
	}
}

// Verdicts that name the scopes they concern combine into the union of the
// names; one that slows every scope wins over them.
func TestVerdictScopesCombine(t *testing.T) {
	// A classifier's slice with room to spare, as a package-level one may
	// have: merging must not write into it.
	pair := classify.Verdict{BackPressure: true, Scopes: append(make([]string, 0, 4), "pair")}
	number := classify.Verdict{BackPressure: true, Scopes: []string{"number"}}
	for _, tc := range []struct {
		name string
		in   []classify.Verdict
		want []string
	}{
		{"one names a scope", []classify.Verdict{{}, pair, {}}, []string{"pair"}},
		{"two name theirs", []classify.Verdict{pair, number}, []string{"pair", "number"}},
		{"one slows every scope", []classify.Verdict{pair, {BackPressure: true}}, nil},
		{"a wait for every scope", []classify.Verdict{{Wait: time.Minute}, pair}, nil},
		{"nothing to slow", []classify.Verdict{{}, {NeverProcessed: true}}, nil},
	} {
		var v classify.Verdict
		for _, o := range tc.in {
			v = mergeVerdicts(v, o)
		}
		if !slices.Equal(v.Scopes, tc.want) {
			t.Errorf("%s: scopes %q, want %q", tc.name, v.Scopes, tc.want)
		}
	}
	mergeVerdicts(pair, number)
	if spare := pair.Scopes[1:cap(pair.Scopes)]; !slices.Equal(spare, make([]string, len(spare))) {
		t.Errorf("merging wrote into a classifier's own slice: %q", pair.Scopes[:cap(pair.Scopes)])
	}
}

// stalledBody is a response body that sends its first bytes only after a
// stall, and ends at once when closed, as a connection's body does.
type stalledBody struct {
	stall     time.Duration
	rest      io.Reader
	once      sync.Once
	done      chan struct{}
	closeOnce sync.Once
	closes    atomic.Int32
}

func newStalledBody(stall time.Duration, text string) *stalledBody {
	return &stalledBody{stall: stall, rest: strings.NewReader(text), done: make(chan struct{})}
}

func (b *stalledBody) Read(p []byte) (int, error) {
	b.once.Do(func() {
		select {
		case <-time.After(b.stall):
		case <-b.done:
		}
	})
	select {
	case <-b.done:
		return 0, os.ErrClosed
	default:
		return b.rest.Read(p)
	}
}

func (b *stalledBody) Close() error {
	b.closes.Add(1)
	b.closeOnce.Do(func() { close(b.done) })
	return nil
}

// A classifier reads an error body inside RoundTrip, where a plain
// transport would have returned at the headers: a body that stalls must not
// hold the call past its deadline, nor, without one, past classifyWait. The
// caller still reads every byte.
func TestClassifyingAStalledBodyHonoursTheDeadline(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline time.Duration // 0: none
		want     time.Duration
	}{{"deadline", 200 * time.Millisecond, 200 * time.Millisecond}, {"no deadline", 0, classifyWait}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				classified := false
				tr := New(roundTripFunc(func(req *http.Request) (*http.Response, error) {
					body := newStalledBody(3*time.Second, `{"error":"bad request"}`)
					return &http.Response{StatusCode: 400, Body: body, Request: req, Header: http.Header{}}, nil
				}), WithClassifier(func(_ *http.Response, body []byte) classify.Verdict { classified = true; return classify.Verdict{} }))
				ctx := context.Background()
				if tc.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.deadline)
					defer cancel()
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
				start := time.Now()
				resp, err := tr.RoundTrip(req)
				if took := time.Since(start); took != tc.want || err != nil {
					t.Fatalf("RoundTrip returned %v after %v, want the response at %v", err, took, tc.want)
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(got) != `{"error":"bad request"}` || !classified {
					t.Errorf("the caller read %q, classified %v; want the whole body, classified", got, classified)
				}
			})
		})
	}
}

// A response whose body stalled for the classifiers is closed, not drained,
// before a retry: draining it would wait out the stall.
func TestStalledErrorBodyDoesNotHoldTheRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sent []time.Time
		var bodies []*stalledBody
		tr := New(roundTripFunc(func(req *http.Request) (*http.Response, error) {
			sent = append(sent, time.Now())
			body := newStalledBody(3*time.Second, "overloaded")
			bodies = append(bodies, body)
			return &http.Response{StatusCode: 503, Body: body, Request: req, Header: http.Header{}}, nil
		}), WithClassifier(func(*http.Response, []byte) classify.Verdict { return classify.Verdict{} }),
			WithRetry(retry.Policy{MaxAttempts: 2, InitialBackoff: 100 * time.Millisecond}))
		start := time.Now()
		resp, err := tr.RoundTrip(mustRequest(t))
		mustNotErr(t, err)
		resp.Body.Close()
		if len(sent) != 2 || sent[1].Sub(start) > classifyWait+200*time.Millisecond {
			t.Errorf("attempts sent at %v after the start, want the second about %v after the first", sent, classifyWait+100*time.Millisecond)
		}
		for i, b := range bodies {
			if b.closes.Load() == 0 {
				t.Errorf("body %d was not closed", i+1)
			}
		}
	})
}
