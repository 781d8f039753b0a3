// Package prices turns a call's usage into what it cost, as Money: integer
// micro-dollars (1 micro-dollar = $0.000001), so that the spend of a fleet
// adds up exactly, whatever the order of its calls.
//
// Every price in this package's tables was read from the provider's own
// pricing page, and carries that page's address and the date it was read.
// A price that could not be read from a primary source is not in the
// tables: a model without a price has no cost, and Lookup says so, so that
// the caller can refuse a money budget for it rather than count it free.
// Prices change; give your own with a Table of your own, or by adding to a
// copy of Anthropic() or OpenAI().
package prices

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strings"

	"github.com/pacer-go/pacer/usage"
)

// ErrNoPrice is matched by the error of a call that a money budget
// (pacer.Budget.Spend) refused because its model has no price in the
// Meter's table: give the model's price (pacer.WithPrices), so that its
// calls are counted, not free.
var ErrNoPrice = errors.New("pacer: the model has no price")

// A Price is what a model charges per million tokens, in US dollars:
// Price{Input: Dollars(3)} is $3 per million input tokens, 3 micro-dollars a
// token.
//
// A zero price for a cache category means that category is billed at the
// Input rate: no provider gives cache reads or writes away, and a budget
// errs on the side of spending.
type Price struct {
	Input        Money // per million uncached input tokens
	CacheRead    Money // per million input tokens read from the prompt cache
	CacheWrite   Money // per million input tokens written to the cache (Anthropic: 5-minute)
	CacheWrite1h Money // per million input tokens written to Anthropic's 1-hour cache
	Output       Money // per million output tokens

	// Source is the address of the page the price was read from, and Read
	// the date it was read (YYYY-MM-DD).
	Source, Read string
}

// Cost returns what u costs at p, rounded up to a whole micro-dollar: a
// budget never counts a call as cheaper than it was. A cost too large for
// an int64 of micro-dollars is the largest Money.
func (p Price) Cost(u usage.Usage) Money {
	orInput := func(price Money) int64 {
		if price.IsZero() {
			return p.Input.micros
		}
		return price.micros
	}
	var hi, lo uint64
	add := func(tokens, price int64) {
		if tokens <= 0 || price <= 0 {
			return
		}
		h, l := bits.Mul64(uint64(tokens), uint64(price))
		var carry uint64
		lo, carry = bits.Add64(lo, l, 0)
		hi += h + carry
	}
	add(u.Input, p.Input.micros)
	add(u.CacheRead, orInput(p.CacheRead))
	add(u.CacheWrite, orInput(p.CacheWrite))
	add(u.CacheWrite1h, orInput(p.CacheWrite1h))
	add(u.Output, p.Output.micros)
	// Divide the micro-dollars-times-a-million by a million, rounding up.
	if hi >= 1_000_000 {
		return Money{math.MaxInt64}
	}
	q, r := bits.Div64(hi, lo, 1_000_000)
	if r > 0 {
		q++
	}
	if q > math.MaxInt64 {
		return Money{math.MaxInt64}
	}
	return Money{int64(q)}
}

// Validate reports what is wrong with p: a negative price, or a price
// without its source.
func (p Price) Validate() error {
	for _, m := range [...]Money{p.Input, p.CacheRead, p.CacheWrite, p.CacheWrite1h, p.Output} {
		if m.micros == math.MaxInt64 || m.micros == math.MinInt64 { // what Dollars saturates to
			return fmt.Errorf("prices: %+v has a price that is not a number of dollars: Dollars was given NaN, an infinity or a figure beyond ±9.2 trillion dollars", p)
		}
	}
	if p.Input.micros < 0 || p.CacheRead.micros < 0 || p.CacheWrite.micros < 0 || p.CacheWrite1h.micros < 0 || p.Output.micros < 0 {
		return fmt.Errorf("prices: %+v has a negative price", p)
	}
	if p.Source == "" || p.Read == "" {
		return fmt.Errorf("prices: a price needs its Source (the page it was read from) and the date it was Read")
	}
	return nil
}

// A Table holds the prices of a provider's models, by model ID.
type Table map[string]Price

// Lookup returns the price of model: the price of its ID, or of its ID
// without a trailing snapshot date — "-20251101" (Anthropic) or
// "-2024-08-06" (OpenAI) — with which a snapshot shares its price.
func (t Table) Lookup(model string) (Price, bool) {
	if p, ok := t[model]; ok {
		return p, true
	}
	p, ok := t[withoutDate(model)]
	return p, ok
}

// Cost returns what u cost on model, and whether the model has a price.
func (t Table) Cost(model string, u usage.Usage) (Money, bool) {
	p, ok := t.Lookup(model)
	if !ok {
		return Money{}, false
	}
	return p.Cost(u), true
}

// Validate reports the first price of t that does not Validate.
func (t Table) Validate() error {
	for model, p := range t {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("model %q: %w", model, err)
		}
	}
	return nil
}

// withoutDate returns model without a trailing "-YYYYMMDD" or
// "-YYYY-MM-DD".
func withoutDate(model string) string {
	for _, layout := range []string{"-20060102", "-2006-01-02"} {
		n := len(model) - len(layout)
		if n <= 0 || model[n] != '-' {
			continue
		}
		date := model[n+1:]
		if strings.Trim(date, "0123456789-") == "" && strings.Count(date, "-") == strings.Count(layout, "-")-1 {
			return model[:n]
		}
	}
	return model
}

// Anthropic returns the prices of Claude models on the Claude API, a copy
// the caller may change.
//
// Read on 2026-12-01 from https://platform.claude.com/docs/en/about-claude/pricing
// ("Model pricing": base input tokens, 5m cache writes, 1h cache writes,
// cache hits and refreshes, output tokens), and for Claude Sonnet 5 from its
// model page https://platform.claude.com/docs/zh-CN/models/sonnet-5/overview
// ("Pricing": input, output, 5m cache write, 1h cache write, cache read).
// Model IDs as github.com/anthropics/anthropic-sdk-go message.go names them.
//
// Left out, for want of a primary source read in full: Claude Opus 5.5,
// Sonnet 5.5 (its model page says cache reads cost $0.20 / MTok, reports of
// a cut to $0.10 from 2026-10-07 could not be checked on Anthropic's pages),
// Haiku 4.5 and 5.5 (cache prices not found on a stored Anthropic page),
// Fable 5.1 and Mythos 5.1 (a footnote on their cache price could not be
// read), Opus 5 (no model ID in the SDK), and models the page marks retired.
// The long-context and batch prices are not modelled.
func Anthropic() Table {
	const pricing = "https://platform.claude.com/docs/en/about-claude/pricing"
	const read = "2026-12-01"
	opus := Price{Input: Dollars(5), CacheWrite: Dollars(6.25), CacheWrite1h: Dollars(10), CacheRead: Dollars(0.50), Output: Dollars(25), Source: pricing, Read: read}
	fable := Price{Input: Dollars(10), CacheWrite: Dollars(12.50), CacheWrite1h: Dollars(20), CacheRead: Dollars(1), Output: Dollars(50), Source: pricing, Read: read}
	return Table{
		"claude-fable-5":  fable,
		"claude-mythos-5": fable,
		"claude-opus-4-8": opus,
		"claude-opus-4-7": opus,
		"claude-opus-4-6": opus,
		"claude-opus-4-5": opus,
		"claude-sonnet-5": {Input: Dollars(2), CacheWrite: Dollars(2.50), CacheWrite1h: Dollars(4), CacheRead: Dollars(0.20), Output: Dollars(10),
			Source: "https://platform.claude.com/docs/zh-CN/models/sonnet-5/overview", Read: read},
	}
}

// OpenAI returns the prices of OpenAI models on the OpenAI API, Standard
// processing, a copy the caller may change.
//
// OpenAI's pricing page, https://developers.openai.com/api/docs/pricing, is
// not in the stored copies; it was read on 2026-12-01 in a mirror of its
// Markdown, as developers.openai.com served it on 2026-06-27 (05:54 UTC):
// https://github.com/crasuna/openai-dev-docs-cn-mirror/blob/a86c1ba4443e6f6a6e218d314f19ac54428392ce/sources/en/api/docs/pricing.md
// (the mirror's manifest gives the fetch time and the page's checksum).
// Prices may have changed since that revision. Under "Flagship models —
// Prices per 1M tokens", the Standard pane lists rows such as
//
//	["gpt-4o-mini", 0.15, 0.075, 0.6],
//
// The Markdown does not label the three numbers; they are read as input,
// cached input and output: the embedding rows fill only the first
// (["text-embedding-3-small", 0.02, "-", "-"]), and the models without
// prompt caching (gpt-4o-2024-05-13, the -pro models) leave only the
// second empty. TestOpenAIPricesAreThePagesRows holds each price to its
// row. The embedding prices agree with OpenAI's model page
// https://developers.openai.com/api/docs/models/text-embedding-3-large
// ("Quick comparison Cost text-embedding-3-large $0.13
// text-embedding-3-small $0.02"), read in the stored copies.
//
// Not modelled: gpt-5.4's price above 272K tokens of context (the page
// gives only "gpt-5.4 (<272K context length)"), the Batch, Flex and Priority
// prices (a call made with service_tier "priority" costs more than this
// counts), and the 10% uplift of regional processing endpoints. Left out:
// the -pro models (no cached price, long-context price not given) and
// models the page lists only by snapshot, except gpt-4o-2024-05-13, which
// is priced apart from gpt-4o and would otherwise be looked up as gpt-4o.
func OpenAI() Table {
	const pricing = "https://github.com/crasuna/openai-dev-docs-cn-mirror/blob/a86c1ba4443e6f6a6e218d314f19ac54428392ce/sources/en/api/docs/pricing.md"
	const read = "2026-12-01"
	tok := func(input, cached, output float64) Price {
		return Price{Input: Dollars(input), CacheRead: Dollars(cached), Output: Dollars(output), Source: pricing, Read: read}
	}
	embedding := func(input float64) Price {
		return Price{Input: Dollars(input), Source: "https://developers.openai.com/api/docs/models/text-embedding-3-large", Read: read}
	}
	return Table{
		"gpt-5.4":                tok(2.5, 0.25, 15),
		"gpt-5.4-mini":           tok(0.75, 0.075, 4.5),
		"gpt-5.4-nano":           tok(0.2, 0.02, 1.25),
		"gpt-5":                  tok(1.25, 0.125, 10),
		"gpt-5-mini":             tok(0.25, 0.025, 2),
		"gpt-5-nano":             tok(0.05, 0.005, 0.4),
		"gpt-4.1":                tok(2, 0.5, 8),
		"gpt-4.1-mini":           tok(0.4, 0.1, 1.6),
		"gpt-4.1-nano":           tok(0.1, 0.025, 0.4),
		"gpt-4o":                 tok(2.5, 1.25, 10),
		"gpt-4o-2024-05-13":      tok(5, 0, 15), // no cached price: cache reads count at the input rate
		"gpt-4o-mini":            tok(0.15, 0.075, 0.6),
		"o3":                     tok(2, 0.5, 8),
		"o3-mini":                tok(1.1, 0.55, 4.4),
		"o4-mini":                tok(1.1, 0.275, 4.4),
		"text-embedding-3-small": embedding(0.02),
		"text-embedding-3-large": embedding(0.13),
	}
}
