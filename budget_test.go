package pacer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/iotest"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/internal/fakeclock"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/period"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/usage"
	"github.com/pacer-go/pacer/usage/prices"
)

// llmReply is what the fake LLM answers one call with.
type llmReply struct {
	status int
	stream bool
	// input and output are the usage it reports; a stream cut before its
	// usage (cut) reports none.
	input, output int64
	cut           bool
	refused       bool // the connection is refused
}

// fakeLLM answers chat completions like OpenAI: JSON or an event stream
// whose last chunk carries the usage.
type fakeLLM struct {
	mu    sync.Mutex
	reply llmReply
	sent  int
}

func (f *fakeLLM) RoundTrip(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	r := f.reply
	f.sent++
	f.mu.Unlock()
	if req.Body != nil {
		req.Body.Close()
	}
	if r.refused {
		return nil, fmt.Errorf("dial tcp: %w", syscall.ECONNREFUSED)
	}
	resp := &http.Response{StatusCode: r.status, Header: http.Header{}, Request: req}
	if r.status == 0 {
		resp.StatusCode = 200
	}
	usageJSON := fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`, r.input, r.output, r.input+r.output)
	var body string
	switch {
	case resp.StatusCode >= 400:
		resp.Header.Set("Content-Type", "application/json")
		body = `{"error":{"message":"rate limited"}}`
	case r.stream:
		resp.Header.Set("Content-Type", "text/event-stream")
		body = `data: {"id":"c","object":"chat.completion.chunk","choices":[{"delta":{"content":"hi"}}],"usage":null}` + "\n\n"
		if !r.cut {
			body += `data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":` + usageJSON + "}\n\ndata: [DONE]\n\n"
		}
	default:
		resp.Header.Set("Content-Type", "application/json")
		body = `{"id":"c","object":"chat.completion","choices":[{"message":{"content":"hi"}}],"usage":` + usageJSON + `}`
	}
	resp.Body = io.NopCloser(strings.NewReader(body))
	return resp, nil
}

// The test meter estimates every chat completion at 100 tokens in and 200
// out, on model "m" (or the X-Model header), and counts "tokens" as all of
// them.
const estIn, estOut = 100, 200

var testPrices = prices.Table{"m": {Input: prices.Dollars(1), Output: prices.Dollars(2), Source: "https://example.test/prices", Read: "2026-12-01"}}

func testMeter() Meter {
	return Meter{
		Estimate: func(req *http.Request) (CallEstimate, bool) {
			if !strings.HasSuffix(req.URL.Path, "/chat/completions") {
				return CallEstimate{}, false
			}
			model := cmpOr(req.Header.Get("X-Model"), "m")
			return CallEstimate{Model: model, Usage: usage.Usage{Input: estIn, Output: estOut}}, true
		},
		Usage:  usage.OpenAI,
		Prices: testPrices,
		Tokens: func(unit string, u usage.Usage) (int64, bool) {
			if unit == "tokens" {
				return u.Total(), true
			}
			return 0, false
		},
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// tokensRoute charges a chat completion to the "tokens" scope at the
// meter's estimate, as a preset's route does.
func tokensRoute(req *http.Request, charges []Charge) []Charge {
	if strings.HasSuffix(req.URL.Path, "/chat/completions") {
		charges = append(charges, Charge{Scope: "tokens", Cost: estIn + estOut})
	}
	return charges
}

func chat(t *testing.T, tr *Transport, ctx context.Context, model string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://llm.test/v1/chat/completions", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if model != "" {
		req.Header.Set("X-Model", model)
	}
	return tr.RoundTrip(req)
}

// chatAll makes a call and reads its body to the end.
func chatAll(t *testing.T, tr *Transport, ctx context.Context) error {
	t.Helper()
	resp, err := chat(t, tr, ctx, "")
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

func tokensLevel(tr *Transport, now time.Time) float64 {
	l, _ := tr.store.(*store.Memory).Level(context.Background(), now, store.Demand{Scope: "tokens", Rate: 1e-9, Burst: 10_000})
	return l
}

func budgetLevel(tr *Transport, name string, now time.Time) float64 {
	l, _ := tr.store.(*store.Memory).Level(context.Background(), now, tr.workloads[name].budgetAt(now))
	return l
}

func newMetered(t *testing.T, llm *fakeLLM, clock clock.Clock, b Budget, opts ...Option) *Transport {
	t.Helper()
	opts = append([]Option{withClock(clock), WithMeter(testMeter()), WithRoute(tokensRoute),
		// Levels are read at the time of the settlement, so they show what
		// was settled. The rate refills in MaxWait more than any test's
		// overrun, which a settlement then charges in full (boundSettlement).
		WithScope(Scope{Name: "tokens", Unit: "tokens", Limit: Limit{Count: 10_000, Per: time.Hour, Burst: 10_000}}),
		WithHeadroom(1), WithWorkload("backfill", Workload{Budget: b})}, opts...)
	tr := New(llm, opts...)
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestUsageSettlesTokenScopesAndBudgets(t *testing.T) {
	backfill := ContextWithWorkload(context.Background(), "backfill")
	for _, stream := range []bool{false, true} {
		for _, c := range []struct {
			name          string
			input, output int64
		}{{"billed less than reserved", 40, 60}, {"billed more than reserved", 250, 250}} {
			t.Run(fmt.Sprintf("%s/stream=%v", c.name, stream), func(t *testing.T) {
				clock := newFakeClock()
				llm := &fakeLLM{reply: llmReply{stream: stream, input: c.input, output: c.output}}
				tr := newMetered(t, llm, clock, Budget{Limit: 10_000, Per: time.Hour, Unit: "tokens"})
				resp, err := chat(t, tr, backfill, "")
				mustNotErr(t, err)
				now := clock.Now()
				if got := tokensLevel(tr, now); got != 10_000-estIn-estOut {
					t.Fatalf("while the body is read, the tokens scope holds %v, want the estimate reserved: %v", got, 10_000-estIn-estOut)
				}
				if w := tr.Stats().Workloads[0]; w.Reserved != estIn+estOut || w.Spent != 0 {
					t.Fatalf("in flight: %+v, want %d reserved and nothing settled", w, estIn+estOut)
				}
				io.Copy(io.Discard, resp.Body) // EOF settles; Close after it does nothing more
				resp.Body.Close()
				billed := float64(c.input + c.output)
				if got := tokensLevel(tr, now); got != 10_000-billed {
					t.Errorf("after the body, the tokens scope holds %v, want %v: what was billed", got, 10_000-billed)
				}
				if got := budgetLevel(tr, "backfill", now); got != 10_000-billed {
					t.Errorf("after the body, the budget holds %v, want %v", got, 10_000-billed)
				}
				if w := tr.Stats().Workloads[0]; w.Reserved != 0 || w.Spent != billed {
					t.Errorf("settled: %+v, want %v spent and nothing reserved", w, billed)
				}
			})
		}
	}
}

func TestUsageSettlement(t *testing.T) {
	backfill := ContextWithWorkload(context.Background(), "backfill")
	full := 10_000.0
	reserved := full - estIn - estOut
	for _, c := range []struct {
		name  string
		reply llmReply
		close bool // close without reading
		want  float64
		// wantTokens is what the tokens scope holds, when not want: a 429
		// is the provider saying its bucket is empty, which pacer learns
		// after the settlement.
		wantTokens float64
		// keep sets Meter.KeepScopeCharges: the scope keeps what the route
		// charged whatever the usage (a limiter that never corrects its
		// charge), while the budget settles; a rejected call still gives
		// its charge back.
		keep bool
	}{
		{"a rejected call settles at zero", llmReply{status: 429}, false, full, 0, false},
		{"a server error settles at zero", llmReply{status: 503}, false, full, full, false},
		{"a refused connection settles at zero", llmReply{refused: true}, false, full, full, false},
		// Its one delta, "hi", is a token; the input is the estimate's.
		{"a stream cut before its usage settles on what it streamed", llmReply{stream: true, cut: true}, false, full - estIn - 1 - cutMargin, reserved, false},
		{"an early close before any event settles at the estimate", llmReply{stream: true, input: 1, output: 1}, true, reserved, reserved, false},
		{"kept charges: billed less than charged", llmReply{input: 40, output: 60}, false, full - 100, reserved, true},
		{"kept charges: billed more than charged", llmReply{input: 250, output: 250}, false, full - 500, reserved, true},
		{"kept charges: a server error settles at zero", llmReply{status: 503}, false, full, full, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := newFakeClock()
			llm := &fakeLLM{reply: c.reply}
			m := testMeter()
			m.KeepScopeCharges = c.keep
			tr := newMetered(t, llm, clock, Budget{Limit: 10_000, Per: time.Hour, Unit: "tokens"}, WithoutRetry(), WithMeter(m))
			resp, err := chat(t, tr, backfill, "")
			if err == nil {
				if !c.close {
					io.Copy(io.Discard, resp.Body)
				}
				resp.Body.Close()
			}
			now := clock.Now()
			if got := tokensLevel(tr, now); got != c.wantTokens {
				t.Errorf("the tokens scope holds %v, want %v", got, c.wantTokens)
			}
			if got := budgetLevel(tr, "backfill", now); got != c.want {
				t.Errorf("the budget holds %v, want %v", got, c.want)
			}
			if w := tr.Stats().Workloads[0]; w.Reserved != 0 || w.Spent != full-c.want {
				t.Errorf("stats %+v, want %v spent, nothing reserved", w, full-c.want)
			}
		})
	}
}

func TestMoneyBudget(t *testing.T) {
	backfill := ContextWithWorkload(context.Background(), "backfill")
	clock := newFakeClock()
	// Each call is billed 1000 in and 500 out: $1 × 1000/1M + $2 × 500/1M =
	// $0.002; the estimate reserves 100 in and 200 out, $0.0005.
	llm := &fakeLLM{reply: llmReply{input: 1000, output: 500}}
	roomy := WithScope(Scope{Name: "tokens", Unit: "tokens", Limit: Limit{Count: 1e9, Per: time.Second, Burst: 1e9}})
	tr := newMetered(t, llm, clock, Budget{Spend: prices.Dollars(1), Per: 24 * time.Hour}, roomy)
	calls, err := callsUntilRefused(t, tr, backfill)
	var be *BudgetError
	if !errors.As(err, &be) {
		t.Fatalf("after %d calls: %v, want a *BudgetError", calls, err)
	}
	// $1 buys 500 calls at $0.002; the last one admitted may overdraw by
	// what it cost beyond its reservation.
	if calls != 500 {
		t.Errorf("%d calls were admitted, want 500", calls)
	}
	w := tr.Stats().Workloads[0]
	if w.Spent != float64(calls)*0.002 || w.Spent > 1+0.002 {
		t.Errorf("spent $%v in %d calls, want $%v, within $1 and one call", w.Spent, calls, float64(calls)*0.002)
	}
	if be.ResetIn != 24*time.Hour {
		t.Errorf("ResetIn = %v, want 24h", be.ResetIn)
	}

	// A model without a price is refused, not counted as free.
	_, err = chat(t, tr, ContextWithWorkload(context.Background(), "backfill"), "unpriced")
	if !errors.Is(err, prices.ErrNoPrice) || !strings.Contains(err.Error(), "WithPrices") {
		t.Errorf("a call to a model without a price: %v, want prices.ErrNoPrice saying to give one WithPrices", err)
	}
	// The user's price is used.
	tr2 := newMetered(t, llm, clock, Budget{Spend: prices.Dollars(1), Per: 24 * time.Hour}, roomy,
		WithPrices(prices.Table{"unpriced": {Input: prices.Dollars(1), Output: prices.Dollars(2), Source: "https://example.test/mine", Read: "2026-12-01"}}))
	resp, err := chat(t, tr2, backfill, "unpriced")
	mustNotErr(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if w := tr2.Stats().Workloads[0]; w.Spent != 0.002 {
		t.Errorf("a call at the user's price spent $%v, want $0.002", w.Spent)
	}
}

func TestMoneyBudgetNeedsAMeter(t *testing.T) {
	tr := New(nil, WithWorkload("backfill", Workload{Budget: Budget{Spend: prices.Dollars(5), Per: time.Hour}}))
	if err := tr.Err(); err == nil || !strings.Contains(err.Error(), "needs a Meter") {
		t.Errorf("a money budget without a meter: %v, want a configuration error", err)
	}
	tr = New(nil, WithPrices(testPrices))
	if err := tr.Err(); err == nil || !strings.Contains(err.Error(), "no Meter") {
		t.Errorf("prices without a meter: %v, want a configuration error", err)
	}
	tr = New(nil, WithMeter(testMeter()), WithPrices(prices.Table{"x": {Input: prices.Micros(1)}}))
	if err := tr.Err(); err == nil || !strings.Contains(err.Error(), "Source") {
		t.Errorf("a price without its source: %v, want a configuration error", err)
	}
}

// A calendar budget resets at midnight in its zone, a day of 25 hours when
// the clocks fall back: America/Los_Angeles left daylight time on
// 2026-11-01 at 02:00 PDT.
func TestCalendarBudgetAcrossDST(t *testing.T) {
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	clock := fakeClock{fakeclock.New(time.Date(2026, 10, 31, 23, 0, 0, 0, la))}
	llm := &fakeLLM{reply: llmReply{input: 100, output: 200}}
	tr := newMetered(t, llm, clock, Budget{Limit: 600, Period: period.Daily(0, 0, la), Unit: "tokens"},
		WithScope(Scope{Name: "tokens", Unit: "tokens", Limit: Limit{Count: 1e9, Per: time.Second, Burst: 1e9}}))
	backfill := ContextWithWorkload(context.Background(), "backfill")
	spend := func(want int) {
		t.Helper()
		n := 0
		for ; n < 10; n++ {
			if err := chatAll(t, tr, backfill); err != nil {
				var be *BudgetError
				if !errors.As(err, &be) {
					t.Fatal(err)
				}
				break
			}
		}
		if n != want {
			t.Fatalf("at %v: %d calls admitted, want %d", clock.Now(), n, want)
		}
	}
	spend(2) // Saturday 31 October, 23:00 PDT
	clock.Advance(time.Hour)
	// Sunday 1 November, 00:00 PDT: a new day, which lasts 25 hours.
	spend(2)
	w := tr.Stats().Workloads[0]
	if want := time.Date(2026, 11, 2, 0, 0, 0, 0, la); !w.PeriodEnd.Equal(want) || w.ResetIn != 25*time.Hour {
		t.Errorf("the day ends %v, in %v; want %v, in 25h", w.PeriodEnd, w.ResetIn, want)
	}
	_, err = chat(t, tr, backfill, "")
	var be *BudgetError
	if !errors.As(err, &be) || be.ResetIn != 25*time.Hour || !strings.Contains(be.Error(), "daily at 00:00 America/Los_Angeles") {
		t.Fatalf("exhausted: %v, want a BudgetError resetting in 25h", err)
	}
	clock.Advance(24*time.Hour + 59*time.Minute) // 23:59 PST: still Sunday
	spend(0)
	clock.Advance(time.Minute) // Monday, midnight PST
	spend(2)
}

// adjustGate is a shared store whose adjustments wait at a gate.
type adjustGate struct {
	*store.Memory
	gate     chan struct{}
	mu       sync.Mutex
	adjusted []store.Demand
}

func (s *adjustGate) Adjust(ctx context.Context, now time.Time, ds []store.Demand) error {
	<-s.gate
	s.mu.Lock()
	s.adjusted = append(s.adjusted, ds...)
	s.mu.Unlock()
	return s.Memory.Adjust(ctx, now, ds)
}

// The settlement's round trip to a shared store is not made on the caller's
// last Read: the caller gets its EOF while the store has yet to answer.
func TestSettlementIsOffTheCallersRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := &adjustGate{Memory: store.NewMemory(), gate: make(chan struct{})}
		llm := &fakeLLM{reply: llmReply{stream: true, input: 10, output: 20}}
		tr := newMetered(t, llm, clock.System, Budget{Limit: 10_000, Per: time.Hour, Unit: "tokens"},
			WithStore(gate, store.Policy{Timeout: time.Hour}))
		resp, err := chat(t, tr, ContextWithWorkload(context.Background(), "backfill"), "")
		mustNotErr(t, err)
		read := make(chan struct{})
		go func() {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			close(read)
		}()
		synctest.Wait()
		select {
		case <-read:
		default:
			t.Fatal("the caller's last Read waits for the store to settle the call")
		}
		close(gate.gate)
		synctest.Wait()
		gate.mu.Lock()
		defer gate.mu.Unlock()
		var costs []float64
		for _, d := range gate.adjusted {
			costs = append(costs, d.Cost)
		}
		// 300 reserved, 30 billed: 270 back on the tokens scope and on the budget.
		if len(costs) != 2 || costs[0] != -270 || costs[1] != -270 {
			t.Errorf("adjusted %v, want -270 on the tokens scope and on the budget", costs)
		}
	})
}

// A budget's 50, 80 and 100 % are told once each per period, to observers
// and through WithAlerts, and once for the fleet: a second Transport on the
// same store, spending the same budget, tells none of them again.
func TestBudgetThresholds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := store.NewMemory()
		var mu sync.Mutex
		var alerts []string
		thresholds := &recorder{}
		notify := func(a observe.Alert) {
			if a.Percent > 0 {
				mu.Lock()
				alerts = append(alerts, a.String())
				mu.Unlock()
			}
		}
		b := Budget{Limit: 10, Per: time.Hour}
		newTr := func() *Transport {
			tr := New(&stubAPI{clock: clock.System}, WithStore(shared, store.Policy{}), WithObserver(thresholds), WithAlerts(time.Minute, notify),
				WithWorkload("nightly", Workload{Budget: b}))
			mustNotErr(t, tr.Err())
			return tr
		}
		a, other := newTr(), newTr()
		nightly := ContextWithWorkload(context.Background(), "nightly")
		took := func(tr *Transport, n int) []string {
			for range n {
				get(tr, nightly, "http://api.test/")
			}
			synctest.Wait()
			return thresholds.thresholds()
		}
		want := func(got []string, want ...string) {
			t.Helper()
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("events %q, want %q", got, want)
			}
		}
		want(took(a, 4))                    // 40 %
		want(took(other, 1), "nightly 50%") // the fleet's fifth
		want(took(a, 2))                    // 70 %
		want(took(a, 1), "nightly 80%")
		want(took(other, 1))
		want(took(a, 1), "nightly 100%")
		want(took(a, 3)) // refused: no more
		want(took(other, 3))
		mu.Lock()
		if n := len(alerts); n != 3 || !strings.Contains(alerts[2], `workload "nightly" has spent 100% of its budget`) {
			t.Errorf("alerts %q, want three, the last at 100%%", alerts)
		}
		alerts = nil
		mu.Unlock()
		time.Sleep(time.Hour) // a new period
		want(took(other, 5), "nightly 50%")
	})
}

// A budget in a unit the Meter does not count keeps what the call stated,
// and its Stats do not show it reserved forever.
func TestBudgetInAnotherUnitSettlesAtItsCost(t *testing.T) {
	clock := newFakeClock()
	llm := &fakeLLM{reply: llmReply{input: 1, output: 1}}
	tr := newMetered(t, llm, clock, Budget{Limit: 100, Per: time.Hour, Unit: "credits", Stated: true})
	ctx := ContextWithCost(ContextWithWorkload(context.Background(), "backfill"), "credits", 7)
	mustNotErr(t, chatAll(t, tr, ctx))
	if w := tr.Stats().Workloads[0]; w.Spent != 7 || w.Reserved != 0 {
		t.Errorf("stats %+v, want 7 spent, nothing reserved", w)
	}
}

// BenchmarkMeteredCall is what reading usage and settling costs a streamed
// chat completion, against the same call on a Transport without a Meter.
func BenchmarkMeteredCall(b *testing.B) {
	for _, metered := range []bool{false, true} {
		b.Run(fmt.Sprintf("metered=%v", metered), func(b *testing.B) {
			llm := &fakeLLM{reply: llmReply{stream: true, input: 40, output: 60}}
			opts := []Option{WithRoute(tokensRoute), WithHeadroom(1),
				WithScope(Scope{Name: "tokens", Unit: "tokens", Limit: Limit{Count: 1e12, Per: time.Second, Burst: 1e12}}),
				WithWorkload("backfill", Workload{Budget: Budget{Limit: 1e15, Per: time.Hour, Unit: "tokens"}})}
			if metered {
				opts = append(opts, WithMeter(testMeter()))
			}
			tr := New(llm, opts...)
			ctx := ContextWithWorkload(context.Background(), "backfill")
			t := &testing.T{}
			b.ReportAllocs()
			for b.Loop() {
				if err := chatAll(t, tr, ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A caller that reads a byte at a time settles on the same usage as one
// that reads it all at once: the reader sees the stream in any pieces.
func TestUsageReadByteByByte(t *testing.T) {
	clock := newFakeClock()
	llm := &fakeLLM{reply: llmReply{stream: true, input: 33, output: 44}}
	tr := newMetered(t, llm, clock, Budget{Limit: 10_000, Per: time.Hour, Unit: "tokens"})
	resp, err := chat(t, tr, ContextWithWorkload(context.Background(), "backfill"), "")
	mustNotErr(t, err)
	io.Copy(io.Discard, iotest.OneByteReader(resp.Body))
	resp.Body.Close()
	if w := tr.Stats().Workloads[0]; w.Spent != 77 || w.Reserved != 0 {
		t.Errorf("stats %+v, want the 77 billed", w)
	}
}
