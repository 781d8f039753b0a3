package prices

import (
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
			if p.Input <= 0 || p.Output <= 0 {
				t.Errorf("%s %s: %+v lacks an input or output price", name, model, p)
			}
		}
	}
	if err := (Price{Input: 1, Output: 1}).Validate(); err == nil {
		t.Error("a price without a source validated")
	}
	if err := (Price{Input: -1, Source: "https://x", Read: "2026-12-01"}).Validate(); err == nil {
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
		// per million: 10,475 + 5,000 + 6,250 + 20,000 + 12,575 micro-USD.
		{"every category", opus, usage.Usage{Input: 2095, CacheRead: 10000, CacheWrite: 1000, CacheWrite1h: 2000, Output: 503}, 54300},
		{"nothing", opus, usage.Usage{}, 0},
		{"rounded up", Price{Input: 1}, usage.Usage{Input: 1}, 1}, // a millionth of a micro-unit
		{"cache at input rate when unpriced", Price{Input: USD(2), Output: USD(8)}, usage.Usage{CacheRead: 1_000_000, CacheWrite: 1_000_000}, USD(4)},
		{"huge", Price{Input: math.MaxInt64}, usage.Usage{Input: math.MaxInt64}, math.MaxInt64},
		{"negative usage is nothing", opus, usage.Usage{Input: -5}, 0},
	} {
		if got := tc.p.Cost(tc.u); got != tc.want {
			t.Errorf("%s: %d micro-units, want %d", tc.name, got, tc.want)
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
		costs[i] = p.Cost(usage.Usage{Input: rng.Int64N(5000), CacheRead: rng.Int64N(5000), Output: rng.Int64N(2000)})
	}
	var forward, backward int64
	for i := range costs {
		forward += costs[i]
		backward += costs[len(costs)-1-i]
	}
	if forward != backward {
		t.Errorf("sums differ: %d and %d", forward, backward)
	}
}

func TestLookup(t *testing.T) {
	table := Table{
		"claude-opus-4-5": {Input: 1, Source: "https://x", Read: "2026-12-01"},
		"gpt-4o":          {Input: 2, Source: "https://x", Read: "2026-12-01"},
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
		if ok != (want != 0) || p.Input != want {
			t.Errorf("Lookup(%q) = %d, %v; want %d", model, p.Input, ok, want)
		}
	}
	if _, ok := Anthropic().Cost("claude-unknown", usage.Usage{Input: 1}); ok {
		t.Error("an unknown model has a cost")
	}
}

func TestUSD(t *testing.T) {
	for dollars, want := range map[float64]int64{3: 3_000_000, 0.3: 300_000, 6.25: 6_250_000, 0.075: 75_000} {
		if got := USD(dollars); got != want {
			t.Errorf("USD(%v) = %d, want %d", dollars, got, want)
		}
	}
}
