package openai

import "strings"

// A Tier is an OpenAI usage tier. An organization moves up the tiers as it
// spends; its tier is shown on its limits page.
// https://platform.openai.com/docs/guides/rate-limits#usage-tiers
type Tier int

// The usage tiers whose published figures the preset carries.
const (
	Tier1 Tier = 1 + iota
	Tier2
	Tier3
	Tier4
	Tier5
)

// ModelLimits are one model's limits: requests and tokens per minute, and
// per day where OpenAI sets a daily limit too. A zero field sets no limit
// on that dimension.
type ModelLimits struct {
	RPM int // requests per minute
	TPM int // tokens per minute, each request counted at the larger of its input and its reserved output
	RPD int // requests per day
	TPD int // tokens per day, counted as TPM is
}

// Limits are the figures the preset paces by.
type Limits struct {
	// Models holds the limits of the models OpenAI limits separately, by
	// model name without a snapshot date ("gpt-4o", not "gpt-4o-2024-08-06").
	Models map[string]ModelLimits
	// Default applies to every other model, each on a bucket of its own.
	Default ModelLimits
	// Concurrency caps the calls in flight per model; zero sets no cap.
	// OpenAI publishes no concurrency limit; a cap protects your own process.
	Concurrency int
}

// clone returns a copy of l whose map the caller may change.
func (l Limits) clone() Limits {
	models := make(map[string]ModelLimits, len(l.Models))
	for name, m := range l.Models {
		models[name] = m
	}
	l.Models = models
	return l
}

// The figures of each tier, by model. None could be read on OpenAI's own
// pages (see Figures): they are the per-model tables of
// https://platform.openai.com/docs/models as quoted on OpenAI's community
// forum, unverified, and provisional under Preset.
var tierModels = map[Tier]map[string]ModelLimits{
	Tier1: {
		"gpt-4o":                 {RPM: 500, TPM: 30_000},
		"gpt-4o-mini":            {RPM: 500, TPM: 200_000, RPD: 10_000},
		"text-embedding-3-small": {RPM: 3_000, TPM: 1_000_000},
	},
	Tier2: {
		"gpt-4o":                 {RPM: 5_000, TPM: 450_000},
		"gpt-4o-mini":            {RPM: 5_000, TPM: 2_000_000},
		"text-embedding-3-small": {RPM: 5_000, TPM: 1_000_000},
	},
	Tier3: {
		"gpt-4o":                 {RPM: 5_000, TPM: 800_000},
		"gpt-4o-mini":            {RPM: 5_000, TPM: 4_000_000},
		"text-embedding-3-small": {RPM: 5_000, TPM: 5_000_000},
	},
	Tier4: {
		"gpt-4o":                 {RPM: 10_000, TPM: 2_000_000},
		"gpt-4o-mini":            {RPM: 10_000, TPM: 10_000_000},
		"text-embedding-3-small": {RPM: 10_000, TPM: 5_000_000},
	},
	Tier5: {
		"gpt-4o":                 {RPM: 10_000, TPM: 30_000_000},
		"gpt-4o-mini":            {RPM: 30_000, TPM: 150_000_000},
		"text-embedding-3-small": {RPM: 10_000, TPM: 10_000_000},
	},
}

// Limits returns the tier's published figures, a copy the caller may change.
// Default is the smallest RPM and the smallest TPM of the tier's models, so
// that a model the table does not list is paced no faster than any it does;
// it has no daily limits, which only some models have: a daily limit that
// binds is reported in x-ratelimit-*-requests, whose remaining count then
// lowers the model's bucket.
// An unknown tier has no figures: Limits{}.
func (t Tier) Limits() Limits {
	models, ok := tierModels[t]
	if !ok {
		return Limits{}
	}
	l := Limits{Models: models}.clone()
	for _, m := range models {
		if l.Default.RPM == 0 || m.RPM < l.Default.RPM {
			l.Default.RPM = m.RPM
		}
		if l.Default.TPM == 0 || m.TPM < l.Default.TPM {
			l.Default.TPM = m.TPM
		}

	}
	return l
}

// baseModel returns the model a name refers to: the name without a trailing
// snapshot date, "-YYYY-MM-DD", since a snapshot shares its model's limits.
func baseModel(name string) string {
	const dateLen = len("-2006-01-02")
	if len(name) <= dateLen {
		return name
	}
	suffix := name[len(name)-dateLen:]
	for i := range len(suffix) {
		c := suffix[i]
		switch i {
		case 0, 5, 8:
			if c != '-' {
				return name
			}
		default:
			if c < '0' || c > '9' {
				return name
			}
		}
	}
	return strings.TrimSuffix(name, suffix)
}
