package pacer

import (
	"context"
	"errors"
	"math"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/usage/prices"
)

// Money is a struct wherever it is meant, so that a plain number (0.50, or
// micro-dollars taken for dollars) does not compile as a budget or a price.
func TestMoneyIsNotAPlainNumber(t *testing.T) {
	for _, f := range []reflect.StructField{
		reflect.TypeFor[Budget]().Field(fieldIndex(t, reflect.TypeFor[Budget](), "Spend")),
		reflect.TypeFor[prices.Price]().Field(0),
		reflect.TypeFor[WorkloadStats]().Field(fieldIndex(t, reflect.TypeFor[WorkloadStats](), "SpentMoney")),
	} {
		if f.Type.Kind() != reflect.Struct {
			t.Errorf("%s is a %v: an untyped constant would convert to it", f.Name, f.Type.Kind())
		}
	}
}

func fieldIndex(t *testing.T, typ reflect.Type, name string) int {
	f, ok := typ.FieldByName(name)
	if !ok {
		t.Fatalf("%v has no field %s", typ, name)
	}
	return f.Index[0]
}

// Half a dollar a day is one line, and is half a dollar: each call bills
// $0.002, so 250 calls spend it exactly, to the micro-dollar, and the
// refusal and Stats say $0.50.
func TestHalfADollarBudget(t *testing.T) {
	backfill := ContextWithWorkload(context.Background(), "backfill")
	llm := &fakeLLM{reply: llmReply{input: 1000, output: 500}}
	roomy := WithScope(Scope{Name: "tokens", Unit: "tokens", Limit: Limit{Count: 1e9, Per: time.Second, Burst: 1e9}})
	tr := newMetered(t, llm, newFakeClock(), Budget{Spend: prices.Dollars(0.50), Per: 24 * time.Hour}, roomy)
	calls, err := callsUntilRefused(t, tr, backfill)
	var be *BudgetError
	if !errors.As(err, &be) || calls != 250 {
		t.Fatalf("after %d calls: %v, want a *BudgetError after 250", calls, err)
	}
	if !strings.Contains(be.Error(), "$0.50 per 24h0m0s") {
		t.Errorf("the refusal says %q, want it to name the $0.50 budget", be.Error())
	}
	w := tr.Stats().Workloads[0]
	if w.SpentMoney != prices.Micros(500_000) || !w.ReservedMoney.IsZero() || w.Unit != "usd" || w.Limit != 0.5 || w.Spent != 0.5 {
		t.Errorf("stats %+v, want $0.50 of a $0.50 limit spent, in usd, nothing reserved", w)
	}
}

// callsUntilRefused makes calls until one fails, at most 1,000, and
// returns how many succeeded and the error.
func callsUntilRefused(t *testing.T, tr *Transport, ctx context.Context) (int, error) {
	t.Helper()
	for calls := range 1000 {
		if err := chatAll(t, tr, ctx); err != nil {
			return calls, err
		}
	}
	return 1000, nil
}

// A Budget states money with Spend, counts with Limit: one or the other, in
// sizes the store counts exactly; a Spend so large it is most likely
// micro-dollars given as dollars is said in the log.
func TestMoneyBudgetMistakes(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    Budget
		want string
	}{
		{"both", Budget{Limit: 5, Spend: prices.Dollars(1), Per: time.Hour}, "both Limit (5) and Spend ($1.00)"},
		{"spend with a unit", Budget{Spend: prices.Dollars(1), Unit: "usd", Per: time.Hour}, "leave Unit"},
		{"negative", Budget{Spend: prices.Dollars(-1), Per: time.Hour}, "must not be negative"},
		{"not a number", Budget{Spend: prices.Dollars(math.NaN()), Per: time.Hour}, "must not be negative"},
		{"spend without a period", Budget{Spend: prices.Dollars(1)}, "Per"},
		{"beyond what the store counts", Budget{Spend: prices.Dollars(1e10), Per: time.Hour}, "2^53"},
	} {
		tr := New(nil, WithMeter(testMeter()), WithWorkload("backfill", Workload{Budget: tc.b}))
		if err := tr.Err(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Err() = %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	var log logLines
	tr := New(nil, WithMeter(testMeter()), WithLogger(slogTo(&log)),
		WithWorkload("backfill", Workload{Budget: Budget{Spend: prices.Dollars(500_000), Per: 24 * time.Hour}}))
	mustNotErr(t, tr.Err())
	if lines := log.lines("micro-dollars"); len(lines) != 1 || !strings.Contains(lines[0], "$500000.00") {
		t.Errorf("a $500,000 budget: logged %q, want one line saying it is most likely micro-dollars", lines)
	}
	log = logLines{}
	New(nil, WithMeter(testMeter()), WithLogger(slogTo(&log)),
		WithWorkload("backfill", Workload{Budget: Budget{Spend: prices.Dollars(99_999.99), Per: 24 * time.Hour}}))
	if lines := log.lines("micro-dollars"); len(lines) != 0 {
		t.Errorf("a $99,999.99 budget: logged %q, want nothing", lines)
	}
}

// A budget's unit must be one the Transport counts, whatever its case: a
// typo ("token", "request", "USD") is an error in Err(), not a budget every
// call passes free; a unit callers state is declared with Stated.
func TestBudgetUnitMustBeOneTheTransportCounts(t *testing.T) {
	tokens := WithScope(Scope{Name: "tpm", Unit: "tokens", Limit: PerMinute(1_000_000)})
	for _, tc := range []struct {
		name string
		opts []Option
		b    Budget
		want string // in Err(); "" for none
	}{
		{"requests", nil, Budget{Limit: 5, Per: time.Hour, Unit: "requests"}, ""},
		{"Requests", nil, Budget{Limit: 5, Per: time.Hour, Unit: "Requests"}, ""},
		{"request", nil, Budget{Limit: 5, Per: time.Hour, Unit: "request"}, `Did you mean "requests"?`},
		{"token", []Option{tokens}, Budget{Limit: 5, Per: time.Hour, Unit: "token"}, `Did you mean "tokens"?`},
		{"Tokens, a scope's", []Option{tokens}, Budget{Limit: 5, Per: time.Hour, Unit: "Tokens"}, ""},
		{"tokens, the Meter's", []Option{WithMeter(testMeter())}, Budget{Limit: 5, Per: time.Hour, Unit: "TOKENS"}, ""},
		{"token, near the Meter's", []Option{WithMeter(testMeter())}, Budget{Limit: 5, Per: time.Hour, Unit: "token"}, `Did you mean "tokens"?`},
		{"USD", []Option{WithMeter(testMeter())}, Budget{Limit: 5, Per: time.Hour, Unit: "USD"}, "set Spend: prices.Dollars"},
		{"credits", []Option{tokens}, Budget{Limit: 5, Per: time.Hour, Unit: "credits"}, `it counts "requests", "tokens"; for a unit callers state with ContextWithCost, set Budget.Stated`},
		{"credits, stated", nil, Budget{Limit: 5, Per: time.Hour, Unit: "credits", Stated: true}, ""},
	} {
		tr := New(nil, append(tc.opts, WithWorkload("agent", Workload{Budget: tc.b}))...)
		err := tr.Err()
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: Err() = %v, want nil", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `workload "agent"`) {
			t.Errorf("%s: Err() = %v, want an error naming the workload and saying %q", tc.name, err, tc.want)
		}
	}
}

// A unit matched whatever its case is spent as the scope spells it.
func TestBudgetUnitMatchesWhateverItsCase(t *testing.T) {
	api := &stubAPI{clock: clock.System}
	tr := New(api, WithScope(Scope{Name: "tpm", Unit: "tokens", Limit: PerMinute(1_000_000)}),
		WithRoute(func(req *http.Request, ch []Charge) []Charge { return append(ch, Charge{Scope: "tpm", Cost: 400}) }),
		WithWorkload("agent", Workload{Budget: Budget{Limit: 1000, Per: time.Hour, Unit: "Tokens"}}))
	mustNotErr(t, tr.Err())
	ctx := ContextWithWorkload(context.Background(), "agent")
	mustNotErr(t, get(tr, ctx, "http://api.test/"))
	mustNotErr(t, get(tr, ctx, "http://api.test/"))
	if err := get(tr, ctx, "http://api.test/"); !errors.Is(err, ErrBudgetExhausted) {
		t.Errorf("a third call of 400 tokens on a budget of 1,000: %v, want ErrBudgetExhausted", err)
	}
}

// A context naming a workload the Transport does not declare fails at once,
// nothing sent, naming the workload and the declared ones: a typo must not
// send calls past its workload's budget.
func TestUndeclaredWorkloadFailsClosed(t *testing.T) {
	api := &stubAPI{clock: clock.System}
	tr := New(api, WithWorkload("backfill", Workload{Budget: Budget{Limit: 5, Per: time.Hour}}), WithWorkload("interactive", Workload{}))
	mustNotErr(t, tr.Err())
	typo := ContextWithWorkload(context.Background(), "backfil")
	for range 10 {
		err := get(tr, typo, "http://api.test/")
		if err == nil || !strings.Contains(err.Error(), `"backfil"`) || !strings.Contains(err.Error(), `"backfill", "default", "interactive"`) {
			t.Fatalf("a call of the undeclared workload %q: %v, want an error naming it and the declared ones", "backfil", err)
		}
	}
	if _, err := tr.Acquire(typo); err == nil || !strings.Contains(err.Error(), `"backfil"`) {
		t.Errorf("a permit of the undeclared workload: %v, want the same error", err)
	}
	if n := api.count(); n != 0 {
		t.Errorf("%d calls sent, want none", n)
	}
	// Refused, and still said in Stats: the typo is seen without a log.
	if st := tr.Stats(); st.Undeclared["backfil"] != 11 || len(st.Undeclared) != 1 {
		t.Errorf("Stats.Undeclared = %v, want the 11 refused calls of %q", st.Undeclared, "backfil")
	}
}

// A workload that TakesUndeclared takes their calls, budget and all; Stats
// counts them by name, within a bound, and the log says each name once.
func TestTakesUndeclaredCountsByName(t *testing.T) {
	var log logLines
	api := &stubAPI{clock: clock.System}
	tr := New(api, WithLogger(slogTo(&log)),
		WithWorkload(DefaultWorkload, Workload{TakesUndeclared: true, Budget: Budget{Limit: 1000, Per: time.Hour}}),
		WithWorkload("backfill", Workload{}), WithWorkload("interactive", Workload{}))
	mustNotErr(t, tr.Err())
	for range 3 {
		mustNotErr(t, get(tr, ContextWithWorkload(context.Background(), "backfil"), "http://api.test/"))
	}
	mustNotErr(t, get(tr, ContextWithWorkload(context.Background(), "batch"), "http://api.test/"))
	mustNotErr(t, get(tr, ContextWithWorkload(context.Background(), "backfill"), "http://api.test/"))
	st := tr.Stats()
	if !reflect.DeepEqual(st.Undeclared, map[string]int64{"backfil": 3, "batch": 1}) {
		t.Errorf("Stats.Undeclared = %v, want backfil 3 and batch 1", st.Undeclared)
	}
	for _, w := range st.Workloads {
		if w.Name == DefaultWorkload && w.Spent != 4 {
			t.Errorf("the default workload spent %v of its budget, want the 4 undeclared calls", w.Spent)
		}
	}
	lines := log.lines("not declared")
	if len(lines) != 2 || !strings.Contains(lines[0], `backfil`) || !strings.Contains(lines[1], "batch") {
		t.Fatalf("logged %q, want one line for each unknown name", lines)
	}
	for _, name := range []string{"backfill", "interactive", DefaultWorkload} {
		if !strings.Contains(lines[0], name) {
			t.Errorf("%q does not list the declared workload %q", lines[0], name)
		}
	}
	// However many names a caller makes up, what is remembered is bounded.
	for i := range 2 * maxUnknownWorkloads {
		mustNotErr(t, get(tr, ContextWithWorkload(context.Background(), strings.Repeat("w", i+1)), "http://api.test/"))
	}
	if n := len(log.lines("not declared")); n != maxUnknownWorkloads {
		t.Errorf("logged %d unknown names, want at most %d", n, maxUnknownWorkloads)
	}
	st = tr.Stats()
	if len(st.Undeclared) != maxUnknownWorkloads+1 || st.Undeclared[undeclaredOthers] != maxUnknownWorkloads+2 {
		t.Errorf("Stats.Undeclared holds %d names, %d calls under %q; want %d names and the rest, %d calls, under %[3]q",
			len(st.Undeclared), st.Undeclared[undeclaredOthers], undeclaredOthers, maxUnknownWorkloads, maxUnknownWorkloads+2)
	}

	tr = New(nil, WithWorkload("a", Workload{TakesUndeclared: true}), WithWorkload("b", Workload{TakesUndeclared: true}))
	if err := tr.Err(); err == nil || !strings.Contains(err.Error(), "TakesUndeclared") {
		t.Errorf("two workloads taking undeclared names: %v, want a configuration error", err)
	}
}
