package anthropic

import "strings"

// A Tier is a Claude API usage tier. The Console's Limits page shows an
// organization's tier and its limits.
type Tier int

// The tiers. Start, Build and Scale carry the figures Anthropic publishes
// for each model class; Evaluation, which Anthropic describes but publishes
// no figures for, carries conservative stand-ins (see Figures).
const (
	Evaluation Tier = 1 + iota
	Start
	Build
	Scale
)

// String returns the tier's name as Anthropic writes it: "Start".
func (t Tier) String() string {
	switch t {
	case Evaluation:
		return "Evaluation"
	case Start:
		return "Start"
	case Build:
		return "Build"
	case Scale:
		return "Scale"
	}
	return "unknown tier"
}

// ModelLimits are one model class's limits. A zero field sets no limit on
// that dimension.
type ModelLimits struct {
	RPM  int // requests per minute
	ITPM int // input tokens per minute (uncached input, with cache writes)
	OTPM int // output tokens per minute, counted as they are produced
}

// Limits are the figures the preset paces by.
type Limits struct {
	// Models holds limits of model classes paced on scopes of their own,
	// by class (ModelClass: "claude-opus-4" for every Opus 4.5 to 4.8).
	Models map[string]ModelLimits
	// Default applies to every other model class, each on a bucket of its own.
	Default ModelLimits
	// Concurrency caps the calls in flight per model class; zero sets no
	// cap. Anthropic publishes no concurrency limit.
	Concurrency int
	// OutputEstimate is the output tokens charged for a request before it
	// runs, at most its max_tokens; zero means DefaultOutputEstimate.
	OutputEstimate int
}

func (l Limits) clone() Limits {
	models := make(map[string]ModelLimits, len(l.Models))
	for name, m := range l.Models {
		models[name] = m
	}
	l.Models = models
	return l
}

// The model classes of Anthropic's rate-limit tables, as ModelClass names
// them. Opus 4.x and Sonnet 4.x are each "a total limit that applies to
// combined traffic" of their versions.
const (
	ClassFable5   = "claude-fable-5"
	ClassOpus4    = "claude-opus-4"    // Opus 4.5, 4.6, 4.7 and 4.8 together
	ClassSonnet5  = "claude-sonnet-5"  // a limit of its own, apart from Sonnet 4.x
	ClassSonnet4  = "claude-sonnet-4"  // Sonnet 4.5 and 4.6 together
	ClassHaiku45  = "claude-haiku-4-5" //
	ClassHaiku35  = "claude-3-5-haiku" // retired, except on Bedrock and Google Cloud
	anyOtherClass = ""
)

// classOf maps the start of a model ID to the class whose limit it counts
// against.
var classOf = []struct{ prefix, class string }{
	{"claude-fable-5", ClassFable5},
	{"claude-opus-4-5", ClassOpus4}, {"claude-opus-4-6", ClassOpus4}, {"claude-opus-4-7", ClassOpus4}, {"claude-opus-4-8", ClassOpus4},
	{"claude-sonnet-5", ClassSonnet5},
	{"claude-sonnet-4-5", ClassSonnet4}, {"claude-sonnet-4-6", ClassSonnet4},
	{"claude-haiku-4-5", ClassHaiku45},
	{"claude-3-5-haiku", ClassHaiku35},
}

// ModelClass returns the class whose limits a model counts against: the
// class of Anthropic's tables ("claude-opus-4-7" and
// "claude-opus-4-5-20251101" are both ClassOpus4), or, for a model the
// tables do not list, the model without a trailing snapshot date
// ("-YYYYMMDD") or "-latest".
func ModelClass(model string) string {
	for _, c := range classOf {
		if rest, ok := strings.CutPrefix(model, c.prefix); ok && (rest == "" || isSnapshot(rest)) {
			return c.class
		}
	}
	if i := strings.LastIndexByte(model, '-'); i > 0 && isSnapshot(model[i:]) {
		return model[:i]
	}
	return model
}

// isSnapshot reports whether s is "-YYYYMMDD" or "-latest".
func isSnapshot(s string) bool {
	if s == "-latest" {
		return true
	}
	if len(s) != len("-20060102") || s[0] != '-' {
		return false
	}
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// tierTables are the figures of the Messages API per tier and class, from
// https://platform.claude.com/docs/en/api/rate-limits, read 2026-12-01;
// Figures quotes each row. anyOtherClass is the Default of a model the
// tables do not list: the tier's lowest row of a current model (Fable 5's),
// since a new model is the likelier to have low limits; it is provisional,
// as every tier figure is, so the first response's headers correct it.
var tierTables = map[Tier]map[string]ModelLimits{
	Start: {
		ClassFable5: {1_000, 500_000, 100_000}, ClassOpus4: {1_000, 2_000_000, 400_000},
		ClassSonnet5: {1_000, 2_000_000, 400_000}, ClassSonnet4: {1_000, 2_000_000, 400_000},
		ClassHaiku45: {1_000, 2_000_000, 400_000}, ClassHaiku35: {1_000, 100_000, 20_000},
		anyOtherClass: {1_000, 500_000, 100_000},
	},
	Build: {
		ClassFable5: {2_000, 1_500_000, 300_000}, ClassOpus4: {5_000, 5_000_000, 1_000_000},
		ClassSonnet5: {5_000, 5_000_000, 1_000_000}, ClassSonnet4: {5_000, 5_000_000, 1_000_000},
		ClassHaiku45: {5_000, 5_000_000, 1_000_000}, ClassHaiku35: {2_000, 200_000, 40_000},
		anyOtherClass: {2_000, 1_500_000, 300_000},
	},
	Scale: {
		ClassFable5: {4_000, 4_000_000, 800_000}, ClassOpus4: {10_000, 10_000_000, 2_000_000},
		ClassSonnet5: {10_000, 10_000_000, 2_000_000}, ClassSonnet4: {10_000, 10_000_000, 2_000_000},
		ClassHaiku45: {10_000, 10_000_000, 2_000_000}, ClassHaiku35: {4_000, 400_000, 80_000},
		anyOtherClass: {4_000, 4_000_000, 800_000},
	},
	// Anthropic publishes no figures for Evaluation, only that its limits
	// are "below the standard tiers": these are the preset's own
	// conservative stand-ins, the same for every class (see Figures).
	Evaluation: {anyOtherClass: evaluationLimits},
}

// evaluationLimits are the stand-ins of the Evaluation tier: a twentieth of
// Start's lowest current row in requests, and under a tenth of it in tokens.
var evaluationLimits = ModelLimits{RPM: 50, ITPM: 30_000, OTPM: 8_000}

// Limits returns the tier's figures, a copy the caller may change: each
// class of the tier's table on scopes of its own, and Default for the
// rest. An unknown tier has none: Limits{}.
func (t Tier) Limits() Limits {
	table, ok := tierTables[t]
	if !ok {
		return Limits{}
	}
	l := Limits{Models: map[string]ModelLimits{}, Default: table[anyOtherClass]}
	for class, m := range table {
		if class != anyOtherClass {
			l.Models[class] = m
		}
	}
	return l
}
