// Package outputs learns what a model's calls produce (Learner), so that a
// budget reserves what a call will likely cost instead of its worst case.
//
// A call's worst case is its max_tokens of output: a ceiling the caller
// sets for safety, often ten times what the model writes. Reserving it
// makes a fleet's calls in flight hold far more of a budget than they will
// spend, and refuse calls the budget could pay for. So each metered call
// reserves min(its worst case, the 99th percentile of the output of the
// model's recent calls), once the model has MinSamples settled calls;
// before that, its worst case. Settlement charges whatever the call cost
// beyond its reservation, and the admission still requires the call's
// worst case to fit what the budget has left (see pacer.Budget), so the
// learned figure changes how much calls in flight hold, not what one call
// may spend.
//
// The 99th percentile, not the 95th: a call that produces more than its
// reservation is settled up after the fact, and the calls in flight when a
// budget runs out may each overshoot by that much; at p99 one call in a
// hundred does, at p95 one in twenty, and the two percentiles of an LLM's
// answer lengths are close beside the gap to max_tokens.
//
// Contract:
//   - No I/O and no clock: the estimate follows the model's last calls,
//     counted, not timed. The caller says what a call produced (Observe)
//     once it is settled, and asks before the next (Estimate).
//   - No pointer back to the Transport or its meter: a Learner is a field
//     of the meter of one Transport, and knows models only by name.
//   - Concurrency: a Learner is safe for concurrent use. Estimate neither
//     locks nor allocates; Observe locks its model's sketch, and the first
//     Observe of a model copies the map of models under the Learner's lock.
//   - The zero Learner is ready, and knows no model; a nil *Learner learns
//     nothing and has no estimate, for a Transport without a meter.
//
// Costs: each model's sketch is fixed memory (two histograms of a few
// hundred counters); at most maxModels models are learned, and a model
// beyond them reserves its worst case.
package outputs
