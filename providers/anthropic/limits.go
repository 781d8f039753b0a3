package anthropic

// A Tier is a Claude API usage tier. The Console's Limits page shows an
// organization's tier and its limits.
type Tier int

// The tiers whose published figures the preset carries.
const (
	Start Tier = 1 + iota
	Scale
)

// ModelLimits are one model class's limits. A zero field sets no limit on
// that dimension.
type ModelLimits struct {
	RPM  int // requests per minute
	ITPM int // input tokens per minute (uncached input, with cache writes)
	OTPM int // output tokens per minute
}

// Limits are the figures the preset paces by.
type Limits struct {
	// Models holds limits of model classes paced on scopes of their own,
	// by class ("claude-sonnet-4-5": the model without a snapshot date).
	Models map[string]ModelLimits
	// Default applies to every other model class, each on a bucket of its own.
	Default ModelLimits
	// Concurrency caps the calls in flight per model class; zero sets no
	// cap. Anthropic publishes no concurrency limit.
	Concurrency int
}

func (l Limits) clone() Limits {
	models := make(map[string]ModelLimits, len(l.Models))
	for name, m := range l.Models {
		models[name] = m
	}
	l.Models = models
	return l
}

// The published figures of the Messages API, read on 2026-11-30 from
// https://platform.claude.com/docs/en/api/rate-limits (the same for every
// current model class since Sonnet and Haiku were aligned with Opus).
var tierDefaults = map[Tier]ModelLimits{
	Start: {RPM: 1_000, ITPM: 500_000, OTPM: 100_000},   // https://platform.claude.com/docs/en/api/rate-limits
	Scale: {RPM: 4_000, ITPM: 4_000_000, OTPM: 800_000}, // https://platform.claude.com/docs/en/api/rate-limits
}

// Limits returns the tier's published figures, a copy the caller may
// change. An unknown tier has none: Limits{}.
func (t Tier) Limits() Limits {
	d, ok := tierDefaults[t]
	if !ok {
		return Limits{}
	}
	return Limits{Models: map[string]ModelLimits{}, Default: d}
}

// modelClass returns the model without a trailing snapshot date: "-YYYYMMDD".
func modelClass(name string) string {
	const dateLen = len("-20060102")
	if len(name) <= dateLen || name[len(name)-dateLen] != '-' {
		return name
	}
	for _, c := range name[len(name)-dateLen+1:] {
		if c < '0' || c > '9' {
			return name
		}
	}
	return name[:len(name)-dateLen]
}
