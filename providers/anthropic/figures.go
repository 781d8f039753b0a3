package anthropic

import "github.com/pacer-go/pacer/providers/figures"

const (
	ratePage    = "https://platform.claude.com/docs/en/api/rate-limits"
	supportPage = "https://support.claude.com/en/articles/8243635-our-approach-to-api-rate-limits"
	readOn      = "2026-12-01"
	poolReadOn  = "2026-12-02"
)

// rowQuotes are the rows of the page's tables, as the page writes them
// (the Markdown escapes of * dropped), by tier and class.
var rowQuotes = map[Tier]map[string]string{
	Start: {
		ClassFable5:  "Start tier: Claude Fable 5 | 1,000 | 500,000 | 100,000",
		ClassOpus4:   "Start tier: Claude Opus 4.x* | 1,000 | 2,000,000 | 400,000",
		ClassSonnet5: "Start tier: Claude Sonnet 5 | 1,000 | 2,000,000 | 400,000",
		ClassSonnet4: "Start tier: Claude Sonnet 4.x** | 1,000 | 2,000,000 | 400,000",
		ClassHaiku45: "Start tier: Claude Haiku 4.5 | 1,000 | 2,000,000 | 400,000",
		ClassHaiku35: "Start tier: Claude Haiku 3.5 | 1,000 | 100,000† | 20,000",
	},
	Build: {
		ClassFable5:  "Build tier: Claude Fable 5 | 2,000 | 1,500,000 | 300,000",
		ClassOpus4:   "Build tier: Claude Opus 4.x* | 5,000 | 5,000,000 | 1,000,000",
		ClassSonnet5: "Build tier: Claude Sonnet 5 | 5,000 | 5,000,000 | 1,000,000",
		ClassSonnet4: "Build tier: Claude Sonnet 4.x** | 5,000 | 5,000,000 | 1,000,000",
		ClassHaiku45: "Build tier: Claude Haiku 4.5 | 5,000 | 5,000,000 | 1,000,000",
		ClassHaiku35: "Build tier: Claude Haiku 3.5 | 2,000 | 200,000† | 40,000",
	},
	Scale: {
		ClassFable5:  "Scale tier: Claude Fable 5 | 4,000 | 4,000,000 | 800,000",
		ClassOpus4:   "Scale tier: Claude Opus 4.x* | 10,000 | 10,000,000 | 2,000,000",
		ClassSonnet5: "Scale tier: Claude Sonnet 5 | 10,000 | 10,000,000 | 2,000,000",
		ClassSonnet4: "Scale tier: Claude Sonnet 4.x** | 10,000 | 10,000,000 | 2,000,000",
		ClassHaiku45: "Scale tier: Claude Haiku 4.5 | 10,000 | 10,000,000 | 2,000,000",
		ClassHaiku35: "Scale tier: Claude Haiku 3.5 | 4,000 | 400,000† | 80,000",
	},
}

// classNotes are the tables' footnotes, by class.
var classNotes = map[string]string{
	ClassOpus4:   "\"* - Opus rate limit is a total limit that applies to combined traffic across Claude Opus 4.8, Opus 4.7, Opus 4.6, and Opus 4.5.\"",
	ClassSonnet5: "\"Claude Sonnet 5 has a separate rate limit and is not part of this combined bucket.\"",
	ClassSonnet4: "\"** - Sonnet 4.x rate limit is a total limit that applies to combined traffic across Sonnet 4.6 and Sonnet 4.5.\"",
	ClassHaiku35: "\"† - Limit counts cache_read_input_tokens toward ITPM usage.\" The preset's input estimate counts all input, cached or not, for every class",
}

// tableClasses are the classes in the tables' order.
var tableClasses = []string{ClassFable5, ClassOpus4, ClassSonnet5, ClassSonnet4, ClassHaiku45, ClassHaiku35}

// Figures returns every figure the preset uses, with its source.
func Figures() []figures.Figure {
	var out []figures.Figure
	for _, tier := range []Tier{Start, Build, Scale} {
		preset := "anthropic " + tier.String()
		for _, class := range tableClasses {
			m := tierTables[tier][class]
			for _, d := range []struct {
				dim, unit string
				v         int
			}{{"requests", "requests/min", m.RPM}, {UnitInputTokens, "tokens/min", m.ITPM}, {UnitOutputTokens, "tokens/min", m.OTPM}} {
				out = append(out, figures.Figure{Preset: preset, Name: class + " " + d.dim,
					Scope: "anthropic/" + class + "/" + d.dim, Value: float64(d.v), Unit: d.unit,
					Source: ratePage, Read: readOn, Quote: rowQuotes[tier][class], Note: classNotes[class]})
			}
		}
		d := tierTables[tier][anyOtherClass]
		for _, dim := range []struct {
			name, scope, unit string
			v                 int
		}{{"requests", ScopeRequests, "requests/min", d.RPM}, {UnitInputTokens, ScopeInputTokens, "tokens/min", d.ITPM}, {UnitOutputTokens, ScopeOutputTokens, "tokens/min", d.OTPM}} {
			out = append(out, figures.Figure{Preset: preset, Name: "any other model " + dim.name, Scope: dim.scope,
				Value: float64(dim.v), Unit: dim.unit, Source: ratePage, Read: readOn,
				Quote: rowQuotes[tier][ClassFable5],
				Note:  "a model the tables do not list is paced at the tier's lowest row of a current model, Fable 5's, until the first response's headers give its own limits"})
		}
	}
	for _, dim := range []struct {
		name, scope, unit string
		v                 int
	}{{"requests", ScopeRequests, "requests/min", evaluationLimits.RPM}, {UnitInputTokens, ScopeInputTokens, "tokens/min", evaluationLimits.ITPM}, {UnitOutputTokens, ScopeOutputTokens, "tokens/min", evaluationLimits.OTPM}} {
		out = append(out, figures.Figure{Preset: "anthropic Evaluation", Name: "every model " + dim.name, Scope: dim.scope,
			Value: float64(dim.v), Unit: dim.unit, Source: supportPage, Read: readOn,
			Quote:      "New organizations and organizations with limited usage history may start in the Evaluation tier, with limits below the standard tiers while account history is established.",
			Unverified: "Anthropic publishes no Evaluation figures, only that they are below the standard tiers. The preset's stand-in is conservative (a twentieth of Start's lowest current row in requests, under a tenth in tokens) and provisional: the first response's anthropic-ratelimit-*-limit headers replace it"})
	}
	out = append(out,
		figures.Figure{Preset: "anthropic", Name: "output tokens charged up front", Value: DefaultOutputEstimate, Unit: "tokens (at most max_tokens)",
			Source: ratePage, Read: readOn,
			Unverified: "not a provider figure but the preset's own estimate (WithOutputEstimate changes it): the page gives no typical answer length. When the response ends, the charge is settled on the output_tokens its usage reports",
			Note:       "what the estimate replaces: \"OTPM rate limits are evaluated in real time as output tokens are produced, counting only the actual tokens generated. The max_tokens parameter does not factor into OTPM rate limit calculations\""},
		figures.Figure{Preset: "anthropic", Name: "token headers' rounding", Value: 1000, Unit: "tokens",
			Source: ratePage, Read: readOn,
			Quote: "The number of output tokens remaining (rounded to the nearest thousand) before being rate limited."},
	)
	pool := func(name, scope, quote, note string) figures.Figure {
		return figures.Figure{Preset: "anthropic pool", Name: name, Scope: scope, Unit: "scope", Source: ratePage, Read: poolReadOn, Quote: quote, Note: note}
	}
	out = append(out,
		pool("limits per Workspace, the caller's", WorkspaceScope("<name>", "<unit>"),
			"To protect Workspaces in your Organization from potential overuse, you can set custom spend and rate limits per Workspace.",
			"The page gives no figure, since they are custom: WorkspaceKey.Limits takes them as the Console shows them. It adds \"Workspace limits are set per limiter type (such as requests per minute, input tokens per minute, or output tokens per minute).\" and \"You can't set limits on the default Workspace.\": a key of the Default Workspace has no scope of its own"),
		pool("organization-wide limits apply to every Workspace's key", "anthropic/<class>/<unit>",
			"Organization-wide limits always apply, even if Workspace limits add up to more.",
			"So WorkspaceKeys leaves the preset's scopes, the organization's, as its routes charge them: every key charges them, one bucket each, and a pool is paced at the organization's limits, never a multiple of them nor the sum of its Workspaces'"),
		pool("anthropic-ratelimit-tokens-* report the most restrictive limit", "",
			"The `anthropic-ratelimit-tokens-*` headers display the values for the most restrictive limit currently in effect. For instance, if you have exceeded the Workspace per-minute token limit, the headers will contain the Workspace per-minute token rate limit values.",
			"The preset reads none of that family (only the requests, input-tokens and output-tokens ones, which the page does not say report a Workspace's), and a Workspace's scopes read no header: they keep the caller's figures"),
	)
	return out
}
