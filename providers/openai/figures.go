package openai

import (
	"fmt"
	"slices"

	"github.com/pacer-go/pacer/providers/figures"
)

const (
	openaiReadOn = "2026-12-01"
	modelsPage   = "https://developers.openai.com/api/docs/models/"
	forumCopy    = "https://community.openai.com/t/don-see-any-option-to-request-increase-in-api-rate-limit-for-batch-api/1269349"
	forumTier1   = "https://community.openai.com/t/gpt-4o-rate-limits-being-30k-tpm-and-90k-tpd-does-that-mean-i-can-only-do-90k-tokens-in-a-day/1028595"
	devProxyPage = "https://learn.microsoft.com/es-es/microsoft-cloud/dev/dev-proxy/concepts/openai-insufficient-quota"

	// OpenAI's own pages, read in a mirror: the stored copies hold no copy
	// of developers.openai.com's guides, but github.com/crasuna/openai-dev-docs-cn-mirror
	// keeps, under sources/en, the Markdown that developers.openai.com
	// serves (its manifest names each page's address, the time it was
	// fetched and its checksum). The rate-limits and error-codes pages were
	// fetched on 2026-06-27 (05:54 UTC) and committed in a86c1ba. That
	// revision of the rate-limits page is the one SpyBara's change history
	// dates 2026-06-26 17:57 UTC (https://spybara.com/openai/api/history/docs/en/2026-06-24-2202..2026-06-26-1757/:
	// "guides/rate-limits.md +6 −1", its header table at the same lines).
	rateLimitsPage   = "https://developers.openai.com/api/docs/guides/rate-limits"
	errorsPage       = "https://developers.openai.com/api/docs/guides/error-codes"
	mirrorCommit     = "https://github.com/crasuna/openai-dev-docs-cn-mirror/blob/a86c1ba4443e6f6a6e218d314f19ac54428392ce/sources/en/api/docs/"
	rateLimitsMirror = mirrorCommit + "guides/rate-limits.md"
	errorsMirror     = mirrorCommit + "guides/error-codes.md"
	spybaraDiff      = "https://spybara.com/openai/api/history/docs/en/2026-06-24-2202..2026-06-26-1757/"
	mirrorNote       = "read in a mirror of OpenAI's own page: %s is the Markdown of %s.md as developers.openai.com served it on 2026-06-27 05:54 UTC (the mirror's manifest gives that fetch time and the page's checksum); no copy of OpenAI's page itself is stored"
)

// tier1Rows are the rows of the tier-1 table on forumTier1, which copies
// the model pages' tables: "| Model | RPM | RPD | TPM | Batch Queue Limit |".
var tier1Rows = map[string]string{
	"gpt-4o":                 "gpt-4o | 500 | - | 30,000 | 90,000",
	"gpt-4o-mini":            "gpt-4o-mini | 500 | 10,000 | 200,000 | 2,000,000",
	"text-embedding-3-small": "text-embedding-3-small | 3,000 | - | 1,000,000",
}

// Figures returns every figure the preset uses, with its source.
//
// What the preset reads from OpenAI's answers is verified, in a mirror of
// OpenAI's own pages (see mirrorNote): the names of the rate-limit headers
// and the form of their reset, the meaning of 429 insufficient_quota and of
// 503 "Slow Down". The per-model limits are not: OpenAI publishes them on
// each model's page (https://developers.openai.com/api/docs/models/<model>),
// which neither the stored copies nor the mirror hold for these models, so
// they are the model pages' tables as quoted on OpenAI's community forum.
// Under Preset every per-minute figure is provisional, so the limits
// OpenAI reports in each response's headers replace them; the daily ones
// are not, since no header reports a daily limit as such.
func Figures() []figures.Figure {
	var out []figures.Figure
	for _, tier := range []Tier{Tier1, Tier2, Tier3, Tier4, Tier5} {
		models := tierModels[tier]
		names := make([]string, 0, len(models))
		for name := range models {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			m := models[name]
			for _, d := range []struct {
				dim, scope, unit string
				v                int
			}{{"requests per minute", "requests", "requests/min", m.RPM}, {"tokens per minute", "tokens", "tokens/min", m.TPM},
				{"requests per day", perDayRequests, "requests/day", m.RPD}, {"tokens per day", perDayTokens, "tokens/day", m.TPD}} {
				if d.v == 0 {
					continue
				}
				const searched = "OpenAI's model page (%s%s, and its .md) is not in the stored copies (searched 2026-12-01 by its address and its table's words), nor in the mirror of OpenAI's docs, which holds the guides but no model page"
				why := fmt.Sprintf(searched+"; the figure is its table as quoted on OpenAI's community forum", modelsPage, name)
				src, quote := forumTier1, tier1Rows[name]
				if tier != Tier1 {
					quote = ""
					if name == "gpt-4o-mini" {
						src = forumCopy
					}
				}
				if name == "gpt-4o" && tier != Tier1 || name == "text-embedding-3-small" && tier != Tier1 {
					why = fmt.Sprintf(searched+", nor a copy of this tier's row; the figure is the preset's earlier one, kept provisional: the first response's headers replace it", modelsPage, name)
				}
				out = append(out, figures.Figure{Preset: fmt.Sprintf("openai tier %d", tier), Name: name + " " + d.dim,
					Scope: "openai/" + name + "/" + d.scope, Value: float64(d.v), Unit: d.unit,
					Source: src, Read: openaiReadOn, Quote: quote, Unverified: why})
			}
		}
	}
	// read returns a figure read at src, the mirror of OpenAI's page at page.
	read := func(name, scope, unit, src, page, quote, note string) figures.Figure {
		note = fmt.Sprintf(mirrorNote, src, page) + note
		return figures.Figure{Preset: "openai", Name: name, Scope: scope, Unit: unit, Source: src, Read: openaiReadOn, Quote: quote, Note: note}
	}
	out = append(out,
		read("x-ratelimit-{limit,remaining,reset}-requests", "openai/<model>/requests", "header", rateLimitsMirror, rateLimitsPage,
			"x-ratelimit-limit-requests | 60 | The maximum number of requests that are permitted before exhausting the rate limit. | x-ratelimit-remaining-requests | 59 | The remaining number of requests that are permitted before exhausting the rate limit.",
			". The page does not give the window; pacer reads the limit as per minute (RPM), and when a daily limit binds the same headers report it"),
		read("x-ratelimit-{limit,remaining,reset}-tokens", "openai/<model>/tokens", "header", rateLimitsMirror, rateLimitsPage,
			"x-ratelimit-limit-tokens | 150000 | The maximum number of tokens that are permitted before exhausting the rate limit. | x-ratelimit-remaining-tokens | 149984 | The remaining number of tokens that are permitted before exhausting the rate limit.",
			""),
		read("x-ratelimit-reset-* format", "", "duration", rateLimitsMirror, rateLimitsPage,
			"x-ratelimit-reset-requests | 1s | The time until the rate limit (based on requests) resets to its initial state. | x-ratelimit-reset-tokens | 6m0s | The time until the rate limit (based on tokens) resets to its initial state.",
			". A reset is a duration (\"1s\", \"6m0s\"), the time until the bucket is full again, not until one more call fits"),
		read("tokens charged per request: the larger of max_tokens and the input", "openai/<model>/tokens", "tokens", rateLimitsMirror, rateLimitsPage,
			"Your rate limit is calculated as the maximum of `max_tokens` and the estimated number of tokens based on the character count of your request. Try to set the `max_tokens` value as close to your expected response size as possible.",
			". The page says nothing of a correction by the usage once the answer is known, and its advice only helps if an unused reservation stays counted: the tokens scopes keep the charge (budgets, which are billing, settle on usage)"),
		read("x-ratelimit-{limit,remaining,reset}-project-tokens", ScopeProjectTokens, "header", rateLimitsMirror, rateLimitsPage,
			"x-ratelimit-limit-project-tokens | 60000 | The token limit for the project. […] Project-token headers may be present when a project-scoped token limit applies.",
			". Added in the revision of 2026-06-26 ("+spybaraDiff+"). Read as the quota \"project-tokens\" (unit tokens) of the scope "+ScopeProjectTokens+": one bucket across every model, charged each call's tokens, provisional with no figure of its own (the page gives none: its Limit is a placeholder of 2^31−1 tokens a minute, which paces nothing, in a bucket of a whole minute whose shape a published limit keeps), so it paces nothing until these headers publish a limit, then follows them. The page gives no window either: the limit is read as per minute, as the tokens one is"),
		figures.Figure{Preset: "openai", Name: "x-ratelimit-*-tokens_usage_based", Unit: "header",
			Source: rateLimitsMirror, Read: openaiReadOn,
			Unverified: "not read, on purpose: no page of OpenAI's names it. Searched: the rate-limits page (" + rateLimitsPage + ") in the mirror's copy of 2026-06-27 and in SpyBara's change history of it (the one stored change, 2026-06-26, adds the project-tokens headers, not these), " +
				"the error-codes page, and the official SDKs openai-python, openai-go and openai-node (fetched; none reads any x-ratelimit header by name). " +
				"Only captured responses and forum threads show it: equal to x-ratelimit-*-tokens in most captures, but not in all (https://community.openai.com/t/what-is-new-field-in-rate-limits-x-ratelimit-reset-tokens-usage-based/541210, 2023: \"x-ratelimit-remaining-tokens\": \"43244\" beside \"x-ratelimit-remaining-tokens_usage_based\": \"1212010\" on a model with a daily token limit), so it is neither a documented scope nor a proven second copy of the tokens one. " +
				"The preset paces tokens by x-ratelimit-*-tokens alone, and a different value in these headers changes nothing (TestUsageBasedHeadersAreNotRead)"},
		read("429 insufficient_quota is a spent quota, not a rate limit", "", "status", errorsMirror, errorsPage,
			"429 - You exceeded your current quota, please check your plan and billing details | Cause: You have run out of credits or hit your maximum monthly spend. Solution: Buy more credits or learn how to increase your limits.",
			". Waiting does not lift it, so the preset neither retries nor paces around it: RoundTrip returns a *pacer.QuotaError"),
		read("503 Slow Down is back-pressure", "", "status", errorsMirror, errorsPage,
			"503 - Slow Down | Cause: A sudden increase in your request rate is impacting service reliability. Solution: Please reduce your request rate to its original level, maintain a consistent rate for at least 15 minutes, and then gradually increase it.",
			""),
	)
	pooled := read("limits are the organization's and the project's, none per key", "", "scope", rateLimitsMirror, rateLimitsPage,
		"Rate limits are defined at the [organization level](https://developers.openai.com/api/docs/guides/production-best-practices) and at the project level, not user level.",
		". So ProjectKeys gives a key no scope of its own: every key is charged the preset's per-model scopes and "+ScopeProjectTokens+", one bucket each, and a pool of keys is paced at the project's and the organization's limits, never a multiple")
	pooled.Preset, pooled.Read = "openai pool", "2026-12-02"
	out = append(out, pooled)
	out = append(out, azureFigures()...)
	codes := make([]string, 0, len(quotaCodes))
	for c := range quotaCodes {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	for _, c := range codes {
		out = append(out, figures.Figure{Preset: "openai", Name: "insufficient_quota code " + c, Unit: "error.code",
			Source: devProxyPage, Read: openaiReadOn,
			Quote:      "OpenAI dice que volver a intentarlo tras errores de facturación, gasto o cuota no restaurará el acceso a la API y que debe inspeccionar error.code",
			Unverified: "OpenAI's error-codes page (" + errorsPage + ", read in the mirror " + errorsMirror + ") describes 429 insufficient_quota (\"You have run out of credits or hit your maximum monthly spend\") but names no error.code under it; Microsoft's Dev Proxy docs, quoting OpenAI, list " + c + ": " + quotaCodes[c] + ". The code only words the error: every insufficient_quota 429 is a spent quota, whatever its code"})
	}
	return out
}
