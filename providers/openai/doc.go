// Package openai is pacer's preset for the OpenAI API: its published limits
// per model and usage tier, its routes, its token cost estimate, its header
// family and its retry and quota rules.
//
//	t := pacer.New(nil, openai.Preset(openai.Tier1))
//	client := openai.NewClient(option.WithHTTPClient(t.Client()), option.WithMaxRetries(0))
//
// # Prices
//
// Preset and PresetLimits bring OpenAI's list prices, prices.OpenAI(), in
// the Meter they set: a budget in money needs nothing more,
//
//	pacer.New(nil, openai.Preset(openai.Tier1),
//		pacer.WithWorkload("backfill", pacer.Workload{Budget: pacer.Budget{
//			Spend: prices.Dollars(0.50), Period: period.Daily(0, 0, time.UTC)}}))
//
// and pacer.WithPrices is only for a model that list lacks (a call to a
// model without a price is refused, never counted free) or a price of your
// own; a price given there wins over the preset's, model by model.
//
// # Limits
//
// OpenAI limits every model separately, in requests per minute (RPM) and
// tokens per minute (TPM), at figures that rise with the organization's
// usage tier. The preset paces each model of its table on its own pair of
// scopes, "openai/<model>/requests" and "openai/<model>/tokens"; any other
// model shares the scopes "openai/requests" and "openai/tokens", one bucket
// per model, at the Default figures. A dated snapshot ("gpt-4o-2024-08-06")
// is paced as its model ("gpt-4o"), with which it shares its limits.
//
// A tier's figures are OpenAI's defaults for the tier, its Default only a
// guess (the smallest figures of its table), and an organization's own
// limits may differ from both. So under Preset every scope is provisional:
// from the first response on, each model is paced by the limits OpenAI
// publishes for it, and for the organization, in x-ratelimit-limit-requests
// and x-ratelimit-limit-tokens, higher or lower than the tier's. Figures you
// give (WithModel, WithDefault, PresetLimits) are paced as given, and a
// published limit only ever lowers them.
//
// Last verified: 2026-12-01, in a mirror of OpenAI's own pages: the
// Markdown of developers.openai.com's rate-limits and error-codes guides as
// github.com/crasuna/openai-dev-docs-cn-mirror fetched it on 2026-06-27.
// What the preset reads from OpenAI's answers is verified there: the
// x-ratelimit-{limit,remaining,reset}-{requests,tokens} headers, their
// reset as a duration ("6m0s") until the limit is back to its initial
// state, 429 insufficient_quota as credits run out or a monthly spend
// reached, 503 "Slow Down" as a request rate to reduce. The per-model
// limits are not: OpenAI gives them on each model's page, which could not
// be read, so they are marked unverified in Figures ("pacer presets
// openai" prints them) with the copy they were read from (the model pages'
// tables as quoted on OpenAI's community forum). That is why the
// per-minute figures are provisional under Preset: the limits OpenAI
// reports for your organization in each response's headers replace them.
// Your organization's limits page
// (https://platform.openai.com/settings/organization/limits) is the source
// of truth; any figure can be overridden with WithModel, WithDefault or a
// Limits of your own.
//
// Some models also have daily limits: at tier 1, gpt-4o-mini has 10,000
// requests a day (ModelLimits.RPD; TPD for tokens), which its 500 a minute
// would spend in twenty minutes and then meet 429s for the rest of the day.
// A model with a daily limit gets a scope for it,
// "openai/<model>/requests-per-day", which spreads the day's requests over
// the day: a tenth at once, the rest as the bucket refills. No header
// reports a daily limit as such (x-ratelimit-*-requests report whichever
// requests limit binds, read as per minute), so the daily scopes keep
// their figures; when the daily limit binds, the remaining count in those
// headers still lowers the per-minute bucket.
//
// A project may have a token limit of its own, across every model: OpenAI's
// guide (its revision of 2026-06-26) documents
// x-ratelimit-{limit,remaining,reset}-project-tokens, which "may be present
// when a project-scoped token limit applies", and no figure. The preset
// charges every call's tokens to one more scope, "openai/project-tokens"
// (ScopeProjectTokens), one bucket for the whole project, which paces
// nothing until a response carries those headers and then follows them as
// the per-model scopes follow theirs: the published limit (read as per
// minute; the guide gives no window) and the remaining count. So a project
// limit below the sum of its models' limits is shared, not met with 429s;
// where no response carries the headers the scope stays idle.
//
// One more header family is not read. Responses also carry
// x-ratelimit-{limit,remaining,reset}-tokens_usage_based, which no OpenAI
// page or official SDK names; captured responses show it mostly equal to
// the tokens headers but not always, so the preset neither treats it as a
// scope nor as a second copy of the tokens one, and a different value in it
// changes nothing.
//
// # Token cost and settlement
//
// A tokens-per-minute limit charges a request before it runs, at the larger
// of its input and its max_tokens (or max_completion_tokens,
// max_output_tokens), not their sum. OpenAI's rate-limits guide, read
// 2026-12-01 in the mirror of 2026-06-27 (see Estimate.Total): "Your rate
// limit is calculated as the maximum of `max_tokens` and the estimated
// number of tokens based on the character count of your request." The
// preset estimates both from the request's JSON body, read through
// req.GetBody so the body itself is never consumed: a quarter token per
// character of the text it carries, a few tokens per message, a flat cost
// per image, and the output reservation (see EstimateTokens). A request
// that sets no maximum reserves DefaultOutputTokens (OpenAI does not say
// what it counts then), and one whose body cannot be read again (GetBody
// nil) costs DefaultRequestTokens, which WithDefaultRequestTokens changes.
//
// That charge stays on the tokens scopes when the answer comes: the guide
// says nothing of a correction by the usage, and advises setting max_tokens
// "as close to your expected response size as possible", which only helps
// if an unused reservation stays counted. Budgets in tokens or in money,
// which are billing, settle on the usage the response reports.
//
// The estimate is only the charge made before sending. Every response
// carries x-ratelimit-remaining-tokens, and the preset's tokens scopes
// declare the quota that header reports (Policy "tokens"), so pacer clamps
// its bucket to what OpenAI says is left: an estimate that ran low is
// settled by the next response, and a reported zero with
// x-ratelimit-reset-tokens pauses the model until the reset.
//
// A token bucket holds a whole minute's TPM, as OpenAI's does (its reset
// header is the time until the bucket is full again), so any request that
// fits the published limit is admitted in time; one estimated at more than
// the TPM fails at once with an error matching pacer.ErrExceedsCapacity,
// instead of waiting for a refill that can never be enough.
//
// # Errors and retries
//
// OpenAI's calls are POSTs without idempotency keys, which pacer never sends
// twice unless the failure shows the request was not processed. The preset
// supplies that knowledge (https://platform.openai.com/docs/guides/error-codes):
//
//   - 429 insufficient_quota (the account is out of credit or over its
//     monthly budget) is not retried and not paced around: RoundTrip returns
//     a *pacer.QuotaError, which matches pacer.ErrBudgetExhausted. Its
//     error.code says which quota is spent, and the error says what to do:
//     credit_balance_exhausted (add credits),
//     organization_spend_limit_exceeded, project_spend_limit_exceeded (only
//     this project's limit), organization_usage_limit_exceeded (the tier's
//     monthly limit); see QuotaCodes. These codes were read second-hand.
//   - Any other 429 is a rate limit, refused before processing: it pauses
//     the model's scopes and may be retried.
//   - 503 "slow down" is back-pressure: the scopes slow as for a 429.
//   - x-should-retry, which OpenAI sends on errors, decides: "false" is
//     never retried, "true" may be, whatever the status.
//
// The official SDKs retry by themselves as well: give them
// option.WithMaxRetries(0) so that pacer's paced retries are the only ones
// (the examples/sdk programs show it).
package openai
