// Package anthropic is pacer's preset for the Claude API (Anthropic's
// Messages API): its published limits per usage tier, its routes, its token
// cost estimate, its header family, and its overload and spend-limit rules.
//
//	t := pacer.New(nil, anthropic.Preset(anthropic.Start))
//	client := anthropic.NewClient(option.WithHTTPClient(t.Client()), option.WithMaxRetries(0))
//
// # Prices
//
// Preset and PresetLimits bring Anthropic's list prices,
// prices.Anthropic(), in the Meter they set: a budget in money needs
// nothing more,
//
//	pacer.New(nil, anthropic.Preset(anthropic.Start),
//		pacer.WithWorkload("backfill", pacer.Workload{Budget: pacer.Budget{
//			Spend: prices.Dollars(0.50), Period: period.Daily(0, 0, time.UTC)}}))
//
// and pacer.WithPrices is only for a model that list lacks (a call to a
// model without a price is refused, never counted free) or a price of your
// own; a price given there wins over the preset's, model by model.
//
// Last verified: 2026-12-01, against
// https://platform.claude.com/docs/en/api/rate-limits and
// https://support.claude.com/en/articles/8243635. Figures lists every
// figure with its source and quote; "pacer presets anthropic" prints them.
//
// # Limits
//
// Anthropic limits each model class in requests per minute (RPM), input
// tokens per minute (ITPM) and output tokens per minute (OTPM), with token
// buckets that refill continuously, and publishes a table of them per
// class for each of the Start, Build and Scale tiers. The classes are not
// the models: Opus 4.5 to 4.8 share one limit (ClassOpus4), Sonnet 4.5 and
// 4.6 another (ClassSonnet4), and Sonnet 5, Fable 5, Haiku 4.5 and Haiku
// 3.5 have one each; ModelClass maps a model ID to its class. The preset
// paces each class on three scopes of its own,
// "anthropic/<class>/requests", "…/input-tokens" and "…/output-tokens". A
// model the tables do not list is paced on "anthropic/requests",
// "anthropic/input-tokens" and "anthropic/output-tokens", one bucket per
// model, at the tier's lowest current row (Fable 5's).
//
// Anthropic also places new organizations in an Evaluation tier "with
// limits below the standard tiers", and publishes no figures for it. The
// Evaluation preset paces every model at 50 RPM, 30,000 ITPM and 8,000
// OTPM: stand-ins of the preset's own, below every published row, not
// Anthropic's figures.
//
// Under Preset every tier figure is provisional (pacer.Scope.Provisional):
// every response carries the organization's own limits in
// anthropic-ratelimit-requests-limit and its input and output token
// counterparts, and from the first response on each class is paced by
// them, higher or lower than the tier's. An organization on Custom, in
// Evaluation, or with an increase granted, is thus paced by its own limits
// after one call. Figures you give — what the Limits page of your Claude
// Console shows, with PresetLimits, WithModel or WithDefault — are paced as
// given, and a published limit only ever lowers them.
//
// # Token cost
//
// Input tokens are estimated from the request's JSON body, read through
// req.GetBody (the body itself is never consumed): a token per four ASCII
// characters and per other character of the system prompt, the messages
// and the tool definitions, plus a flat cost per image and per document.
// Cached input is counted too, though for every class but Haiku 3.5
// Anthropic does not count it: the estimate errs high.
//
// Output tokens are not charged at max_tokens. Anthropic's page: "OTPM rate
// limits are evaluated in real time as output tokens are produced, counting
// only the actual tokens generated. The max_tokens parameter does not
// factor into OTPM rate limit calculations". The preset charges an
// estimate up front — DefaultOutputEstimate, 1,000 tokens, or max_tokens
// when that is less; WithOutputEstimate sets the typical length of your
// answers, and pacer.ContextWithCost(ctx, UnitOutputTokens, n) one call's.
// A request with max_tokens above the class's whole OTPM is sent. Every
// response carries anthropic-ratelimit-input-tokens-remaining and
// anthropic-ratelimit-output-tokens-remaining (rounded to the nearest
// thousand), which the scopes declare as their Policy, so pacer lowers each
// bucket to what Anthropic reports. When the response ends, the call's
// charge on the output tokens scope is settled on the output_tokens its
// usage reports (message_delta's, in a stream): an answer longer than the
// estimate is charged the rest, and a shorter one gives back what it did
// not produce, so short answers do not leave throughput unused. The input
// tokens scope is settled on the input the usage reports likewise.
//
// # Errors and retries
//
// From https://platform.claude.com/docs/en/api/errors and the rate-limits page:
//
//   - 529 overloaded_error is back-pressure: the scopes slow down as for a
//     429, and the call — refused before it was processed — may be retried.
//   - 429 rate_limit_error is refused before processing and may be retried
//     after its retry-after.
//   - The monthly spend cap answers 429 rate_limit_error too, with
//     "error_code": "enforced_spend_limit_reached" and no retry-after; and a
//     spent credit balance answers 400 "credit balance is too low". Both
//     are surfaced as a *pacer.QuotaError, matching pacer.ErrBudgetExhausted,
//     and never retried: waiting will not restore them.
//   - x-should-retry, which the API sends on errors, decides: "false" is
//     never retried, "true" may be.
//   - A 429 whose retry-after lies beyond the Transport's maximum wait (a
//     5-hour window spent for hours yet) is surfaced at once as a
//     *pacer.QuotaError whose Reset says when the window reopens.
//
// # Long windows
//
// A subscription's answers carry anthropic-ratelimit-unified-* headers: the
// share used of a 5-hour and a weekly window, and when each reopens.
// Anthropic's rate-limits page does not document them; pacer reads them as
// public parsers show them (ratelimitheader.ParseUnified), shows them in
// each scope's pacer.ScopeStats.Windows, and spreads them to their resets
// for the workloads that set pacer.Workload.SpreadLongWindows.
//
// The official SDK retries 408, 409, 429 and 5xx by itself: give it
// option.WithMaxRetries(0) so that pacer's paced retries are the only ones.
package anthropic
