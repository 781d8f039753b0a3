// Package anthropic is pacer's preset for the Claude API (Anthropic's
// Messages API): its published limits per usage tier, its routes, its token
// cost estimate, its header family, and its overload and spend-limit rules.
//
//	t := pacer.New(nil, anthropic.Preset(anthropic.Start))
//	client := anthropic.NewClient(option.WithHTTPClient(t.Client()), option.WithMaxRetries(0))
//
// # Limits
//
// Anthropic limits each model class in requests per minute (RPM), input
// tokens per minute (ITPM) and output tokens per minute (OTPM), with token
// buckets that refill continuously. The preset paces each dimension on its
// own scope — "anthropic/requests", "anthropic/input-tokens" and
// "anthropic/output-tokens" — with one bucket per model class: the model
// name without its snapshot date, "claude-sonnet-4-5-20250929" being paced
// as "claude-sonnet-4-5". A model given its own figures with WithModel gets
// scopes of its own, "anthropic/<model>/requests" and so on.
//
// The figures were read on 2026-11-30 from
// https://platform.claude.com/docs/en/api/rate-limits, which since the
// tiers were consolidated on 2026-06-26 (release notes:
// https://platform.claude.com/docs/en/release-notes/overview) lists the
// Start, Build and Scale tiers, with Sonnet and Haiku aligned to Opus. The
// preset carries Start and Scale.
//
// Under Preset those figures are provisional (pacer.Scope.Provisional):
// every response carries the organization's own limits in
// anthropic-ratelimit-requests-limit and its input and output token
// counterparts, and from the first response on each model class is paced
// by them, higher or lower than the tier's. An organization on Build,
// Custom, or with an increase granted, is thus paced by its own limits
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
// The output is charged max_tokens, as Anthropic does when a request starts
// (the page above: "OTPM rate limits are estimated based on max_tokens at
// the beginning of each request"). Every response carries
// anthropic-ratelimit-input-tokens-remaining and
// anthropic-ratelimit-output-tokens-remaining, which the scopes declare as
// their Policy, so pacer clamps each bucket to what Anthropic reports; a
// reported zero pauses the class until the RFC 3339 reset.
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
//
// The official SDK retries 408, 409, 429 and 5xx by itself: give it
// option.WithMaxRetries(0) so that pacer's paced retries are the only ones.
package anthropic
