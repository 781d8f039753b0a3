package openai

import (
	"fmt"
	"slices"

	"github.com/pacer-go/pacer/providers/figures"
)

const (
	openaiReadOn = "2026-12-01"
	modelsPage   = "https://platform.openai.com/docs/models/"
	forumCopy    = "https://community.openai.com/t/don-see-any-option-to-request-increase-in-api-rate-limit-for-batch-api/1269349"
	forumTier1   = "https://community.openai.com/t/gpt-4o-rate-limits-being-30k-tpm-and-90k-tpd-does-that-mean-i-can-only-do-90k-tokens-in-a-day/1028595"
	errorsPage   = "https://platform.openai.com/docs/guides/error-codes"
	devProxyPage = "https://learn.microsoft.com/es-es/microsoft-cloud/dev/dev-proxy/concepts/openai-insufficient-quota"
)

// Figures returns every figure the preset uses, with its source. None is
// verified: OpenAI's own pages were not in the stored copies, and what is
// quoted is their copies on OpenAI's community forum and in Microsoft's
// docs. Under Preset every per-minute figure is provisional, so the
// limits OpenAI reports in each response's headers replace them; the
// daily ones are not, since no header reports a daily limit as such.
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
				why := fmt.Sprintf("OpenAI's model page (%s%s) was not in the stored copies; the figure is its table as quoted on OpenAI's community forum", modelsPage, name)
				src := forumTier1
				if name == "gpt-4o-mini" {
					src = forumCopy
				}
				if name == "gpt-4o" && tier != Tier1 || name == "text-embedding-3-small" && tier != Tier1 {
					why = fmt.Sprintf("OpenAI's model page (%s%s) was not in the stored copies, nor a copy of this tier's row; the figure is the preset's earlier one, kept provisional: the first response's headers replace it", modelsPage, name)
				}
				out = append(out, figures.Figure{Preset: fmt.Sprintf("openai tier %d", tier), Name: name + " " + d.dim,
					Scope: "openai/" + name + "/" + d.scope, Value: float64(d.v), Unit: d.unit,
					Source: src, Read: openaiReadOn, Unverified: why})
			}
		}
	}
	out = append(out, figures.Figure{Preset: "openai", Name: "x-ratelimit-*-tokens_usage_based", Unit: "header",
		Source: errorsPage, Read: openaiReadOn,
		Unverified: "no OpenAI page, and neither openai-python nor openai-go, names it; responses captured in public repositories show it beside x-ratelimit-*-tokens with the same limit, remaining and reset, and 429 messages say \"on tokens_usage_based per min\": a per-minute token limit counted on usage. pacer's header parser does not read it yet; the emulator sends it"})
	codes := make([]string, 0, len(quotaCodes))
	for c := range quotaCodes {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	for _, c := range codes {
		out = append(out, figures.Figure{Preset: "openai", Name: "insufficient_quota code " + c, Unit: "error.code",
			Source: devProxyPage, Read: openaiReadOn,
			Unverified: "OpenAI's error-codes page (" + errorsPage + ") was not in the stored copies; Microsoft's Dev Proxy docs quote it: \"OpenAI dice que volver a intentarlo tras errores de facturación, gasto o cuota no restaurará el acceso a la API y que debe inspeccionar error.code\", and list " + c + ": " + quotaCodes[c]})
	}
	return out
}
