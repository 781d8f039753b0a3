package prices

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pacer-go/pacer/usage"
)

// Every price the package ships names its page and the date it was read.
func TestEveryPriceHasASource(t *testing.T) {
	for name, table := range map[string]Table{"Anthropic": Anthropic(), "OpenAI": OpenAI()} {
		if err := table.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		for model, p := range table {
			if !strings.HasPrefix(p.Source, "https://") {
				t.Errorf("%s %s: source %q is not an address", name, model, p.Source)
			}
			if len(p.Read) != len("2006-01-02") {
				t.Errorf("%s %s: read %q is not a date", name, model, p.Read)
			}
			// An embedding model writes no output tokens, and has no output price.
			if p.Input.Micros() <= 0 || p.Output.Micros() <= 0 && !strings.HasPrefix(model, "text-embedding-") {
				t.Errorf("%s %s: %+v lacks an input or output price", name, model, p)
			}
		}
	}
	if err := (Price{Input: Micros(1), Output: Micros(1)}).Validate(); err == nil {
		t.Error("a price without a source validated")
	}
	if err := (Price{Input: Micros(-1), Source: "https://x", Read: "2026-12-01"}).Validate(); err == nil {
		t.Error("a negative price validated")
	}
}

func TestCost(t *testing.T) {
	opus := Anthropic()["claude-opus-4-5"]
	for _, tc := range []struct {
		name string
		p    Price
		u    usage.Usage
		want int64
	}{
		// 2,095 × $5 + 10,000 × $0.50 + 1,000 × $6.25 + 2,000 × $10 + 503 × $25,
		// per million: 10,475 + 5,000 + 6,250 + 20,000 + 12,575 micro-dollars.
		{"every category", opus, usage.Usage{Input: 2095, CacheRead: 10000, CacheWrite: 1000, CacheWrite1h: 2000, Output: 503}, 54300},
		{"nothing", opus, usage.Usage{}, 0},
		{"rounded up", Price{Input: Micros(1)}, usage.Usage{Input: 1}, 1}, // a millionth of a micro-dollar
		{"cache at input rate when unpriced", Price{Input: Dollars(2), Output: Dollars(8)}, usage.Usage{CacheRead: 1_000_000, CacheWrite: 1_000_000}, 4_000_000},
		{"huge", Price{Input: Micros(math.MaxInt64)}, usage.Usage{Input: math.MaxInt64}, math.MaxInt64},
		{"negative usage is nothing", opus, usage.Usage{Input: -5}, 0},
	} {
		if got := tc.p.Cost(tc.u); got.Micros() != tc.want {
			t.Errorf("%s: %d micro-dollars, want %d", tc.name, got.Micros(), tc.want)
		}
	}
}

// Integer micro-units add up exactly: a fleet's spend, summed call by call
// in any order, is the same; a float sum of dollars is not.
func TestCostsAddExactly(t *testing.T) {
	p := Anthropic()["claude-sonnet-5"]
	rng := rand.New(rand.NewPCG(4, 5))
	costs := make([]int64, 100000)
	for i := range costs {
		costs[i] = p.Cost(usage.Usage{Input: rng.Int64N(5000), CacheRead: rng.Int64N(5000), Output: rng.Int64N(2000)}).Micros()
	}
	var forward, backward Money
	for i := range costs {
		forward = forward.Add(Micros(costs[i]))
		backward = backward.Add(Micros(costs[len(costs)-1-i]))
	}
	if forward != backward {
		t.Errorf("sums differ: %d and %d", forward, backward)
	}
}

func TestLookup(t *testing.T) {
	table := Table{
		"claude-opus-4-5": {Input: Micros(1), Source: "https://x", Read: "2026-12-01"},
		"gpt-4o":          {Input: Micros(2), Source: "https://x", Read: "2026-12-01"},
	}
	for model, want := range map[string]int64{
		"claude-opus-4-5":          1,
		"claude-opus-4-5-20251101": 1,
		"gpt-4o-2024-08-06":        2,
		"gpt-4o":                   2,
		"gpt-4o-mini":              0,
		"claude-opus-4-5-2025":     0,
		"claude-opus-4-5-2025110x": 0,
		"":                         0,
	} {
		p, ok := table.Lookup(model)
		if ok != (want != 0) || p.Input.Micros() != want {
			t.Errorf("Lookup(%q) = %v, %v; want %d micro-dollars", model, p.Input, ok, want)
		}
	}
	if _, ok := Anthropic().Cost("claude-unknown", usage.Usage{Input: 1}); ok {
		t.Error("an unknown model has a cost")
	}
}

// Dollars keeps an amount as written to the micro-dollar, and never rounds
// it up into more money than was said.
func TestDollars(t *testing.T) {
	for dollars, want := range map[float64]int64{
		3: 3_000_000, 0.3: 300_000, 6.25: 6_250_000, 0.075: 75_000, 0.5: 500_000,
		0.0000019:          1, // 1.9 micro-dollars: 1, not 2
		0.00000099:         0,
		-1.25:              -1_250_000,
		1e30:               math.MaxInt64,
		math.Inf(1):        math.MaxInt64,
		9223372036854.7759: math.MaxInt64,
	} {
		if got := Dollars(dollars).Micros(); got != want {
			t.Errorf("Dollars(%v) = %d micro-dollars, want %d", dollars, got, want)
		}
	}
	tenth, fifth := 0.1, 0.2
	if got := Dollars(tenth + fifth).Micros(); got != 300_000 { // 0.30000000000000004
		t.Errorf("Dollars(0.1 + 0.2) = %d micro-dollars, want 300000: the digits past the sixth place are dropped", got)
	}
	if got := Dollars(math.NaN()).Micros(); got != math.MinInt64 {
		t.Errorf("Dollars(NaN) = %d, want the most negative amount", got)
	}
	for m, want := range map[Money]string{
		Dollars(0.5): "$0.50", Dollars(12): "$12.00", Micros(222): "$0.000222", Dollars(-1.25): "-$1.25",
		{}: "$0.00", Micros(math.MinInt64): "-$9223372036854.775808", Dollars(1.5).Add(Micros(1)): "$1.500001",
	} {
		if got := m.String(); got != want {
			t.Errorf("%d micro-dollars print %q, want %q", m.Micros(), got, want)
		}
	}
	if got := Micros(math.MaxInt64 - 1).Add(Micros(2)); got.Micros() != math.MaxInt64 {
		t.Errorf("Add overflowed to %d, want it saturated", got.Micros())
	}
	if got := Micros(math.MinInt64 + 1).Add(Micros(-2)); got.Micros() != math.MinInt64 {
		t.Errorf("Add underflowed to %d, want it saturated", got.Micros())
	}
	if got := Micros(1_500_000).Dollars(); got != 1.5 {
		t.Errorf("Dollars() = %v, want 1.5", got)
	}
}

// Each OpenAI price is its row of the pricing page, as the page's Markdown
// writes it: [model, input, cached input, output] in dollars per million
// tokens, "-" or null where the page gives no price. A price mistyped in
// OpenAI() fails here, and so does a row left out of either.
func TestOpenAIPricesAreThePagesRows(t *testing.T) {
	rows := []string{ // copied from the page's Standard pane, https://developers.openai.com/api/docs/pricing
		`["gpt-5.4 (<272K context length)", 2.5, 0.25, 15]`,
		`["gpt-5.4-mini", 0.75, 0.075, 4.5]`,
		`["gpt-5.4-nano", 0.2, 0.02, 1.25]`,
		`["gpt-5", 1.25, 0.125, 10]`,
		`["gpt-5-mini", 0.25, 0.025, 2]`,
		`["gpt-5-nano", 0.05, 0.005, 0.4]`,
		`["gpt-4.1", 2, 0.5, 8]`,
		`["gpt-4.1-mini", 0.4, 0.1, 1.6]`,
		`["gpt-4.1-nano", 0.1, 0.025, 0.4]`,
		`["gpt-4o", 2.5, 1.25, 10]`,
		`["gpt-4o-2024-05-13", 5, null, 15]`,
		`["gpt-4o-mini", 0.15, 0.075, 0.6]`,
		`["o3", 2, 0.5, 8]`,
		`["o4-mini", 1.1, 0.275, 4.4]`,
		`["o3-mini", 1.1, 0.55, 4.4]`,
		`["text-embedding-3-small", 0.02, "-", "-"]`,
		`["text-embedding-3-large", 0.13, "-", "-"]`,
	}
	table := OpenAI()
	dollars := func(v any) Money {
		if f, ok := v.(float64); ok {
			return Dollars(f)
		}
		return Money{} // "-" or null: no price
	}
	for _, row := range rows {
		var r []any
		if err := json.Unmarshal([]byte(row), &r); err != nil || len(r) != 4 {
			t.Fatalf("row %s: %v", row, err)
		}
		model, _, _ := strings.Cut(r[0].(string), " (")
		want := Price{Input: dollars(r[1]), CacheRead: dollars(r[2]), Output: dollars(r[3])}
		got, ok := table[model]
		if !ok {
			t.Errorf("%s: not in OpenAI()", model)
			continue
		}
		if got.Input != want.Input || got.CacheRead != want.CacheRead || got.Output != want.Output {
			t.Errorf("%s: input %v, cached %v, output %v per million tokens; the page's row %s", model, got.Input, got.CacheRead, got.Output, row)
		}
		delete(table, model)
	}
	for model := range table {
		t.Errorf("%s: in OpenAI() but not among the page's rows quoted here", model)
	}
	// 1,000 input, 2,000 cached and 500 output tokens of gpt-4o-mini:
	// 1,000 × $0.15 + 2,000 × $0.075 + 500 × $0.60 per million = 600 micro-dollars.
	if got := OpenAI()["gpt-4o-mini"].Cost(usage.Usage{Input: 1000, CacheRead: 2000, Output: 500}); got != Micros(600) {
		t.Errorf("gpt-4o-mini call: %v, want $0.000600", got)
	}
	// A dated snapshot shares its model's price, but gpt-4o-2024-05-13 has its own.
	if p, _ := OpenAI().Lookup("gpt-4o-2024-08-06"); p.Input != Dollars(2.5) {
		t.Errorf("gpt-4o-2024-08-06: %+v, want gpt-4o's", p)
	}
	if p, _ := OpenAI().Lookup("gpt-4o-2024-05-13"); p.Input != Dollars(5) {
		t.Errorf("gpt-4o-2024-05-13: %+v, want its own $5 input", p)
	}
}
