package openai

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/pool"
	"github.com/pacer-go/pacer/providers/figures"
	"github.com/pacer-go/pacer/providers/internal/presetopt"
	"github.com/pacer-go/pacer/providers/internal/reqbody"
)

// An AzureDeployment is one deployment of a model on Azure OpenAI, a
// member of a pool (AzureDeployments).
type AzureDeployment struct {
	// Name identifies the deployment in events, logs, errors and Stats.
	Name string
	// Deployment is the deployment's name, as the path names it:
	// /openai/deployments/{Deployment}/chat/completions.
	Deployment string
	// TPM is the tokens a minute assigned to the deployment, as the
	// Foundry portal's deployment page shows it.
	TPM int
	// RPM is the deployment's requests a minute, when the portal shows
	// another figure than the ratio's; 0 means TPM×6/1000 (AzureRPM).
	RPM int
	// Endpoint, when set, is the deployment's resource
	// ("https://my-resource.openai.azure.com"): the call is sent there,
	// whatever host the caller's request names. "" keeps the caller's.
	Endpoint string
	// Key, when set, is the resource's key, sent as the api-key header.
	// "" keeps the caller's header (one resource, or Entra ID tokens).
	Key string
}

// AzureRequestsPerThousandTPM is the requests a minute Azure OpenAI gives
// a deployment per 1,000 tokens a minute assigned to it (see Figures).
const AzureRequestsPerThousandTPM = 6

// AzureRPM returns the requests a minute of a deployment of tpm tokens a
// minute: tpm×6/1000, rounded down.
func AzureRPM(tpm int) int { return tpm * AzureRequestsPerThousandTPM / 1000 }

// AzureTokensScope names the scope that paces the tokens of the pool's
// deployment called name: "azure-openai/" + name + "/tokens".
func AzureTokensScope(name string) string { return "azure-openai/" + name + "/tokens" }

// AzureRequestsScope names the scope that paces the requests of the
// pool's deployment called name: "azure-openai/" + name + "/requests".
func AzureRequestsScope(name string) string { return "azure-openai/" + name + "/requests" }

// ScopeAzureEstimate carries each Azure call's token estimate, which each
// deployment's tokens scope is charged. It paces nothing: Azure sets no
// limit above the deployments' own.
const ScopeAzureEstimate = "azure-openai/estimate"

// policyAzureRequests names no quota Azure's headers report, so that they
// never set a deployment's requests scope: Azure's
// x-ratelimit-remaining-requests counts a window shorter than a minute
// (see Figures), which pacer would read as per minute.
const policyAzureRequests = "azure-openai/requests"

// AzureDeployments returns the options that send calls to Azure OpenAI
// through a pool of deployments of one model: each call goes through one
// of them, its deployment put in the path in place of the one the
// caller's request names (pool.URL), and, for a deployment with a Key or
// an Endpoint of its own, its resource's key and host. Give it to
// pacer.New alone: Preset's figures are OpenAI's, not Azure's, and would
// pace these calls too.
//
// What is per deployment: everything. Azure assigns each deployment its
// own tokens a minute, and its requests a minute in proportion: "デプロイ
// が作成されると、割り当てられた TPM は、推論要求で適用される TPM
// (Tokens-per-Minute) のレート制限に直接マップされます。 1 分あたりの要求
// (RPM) レート制限も適用され、その値は次の比率を使用して TPM 割り当てに比
// 例して設定されます。 1000 TPM あたり 6 RPM。"
// (https://learn.microsoft.com/ja-jp/azure/ai-services/openai/how-to/quota,
// read 2026-12-02; the English copy is not stored, see Figures). So each
// deployment has two scopes of its own: AzureTokensScope, at TPM in a
// bucket of a whole minute, charged each call's estimate (its input and
// its reserved output, EstimateTokens), and AzureRequestsScope, at RPM in
// a bucket of one request, so that they are evenly spaced, since Azure
// may count them on 1-second intervals. The tokens scope learns from the deployment's
// x-ratelimit-remaining-tokens, as the preset's do; the requests scope
// keeps its figure.
//
// What is shared: nothing at run time. A subscription's quota, per region
// and model, is what its deployments' TPM may add up to, set when they
// are deployed, not a limit on calls: pooling deployments raises the
// pool's throughput to the sum of theirs.
//
// A deployment with no Name or Deployment, a TPM that gives no request a
// minute (below 167), a negative RPM, an Endpoint that is not an https
// address, or two with one name, is a configuration error.
func AzureDeployments(deployments ...AzureDeployment) pacer.Option {
	var errs presetopt.Errors
	o := []pacer.Option{pacer.WithScope(pacer.Scope{Name: ScopeAzureEstimate, Unit: UnitTokens, Policy: ScopeAzureEstimate})}
	members := make([]pool.Member, 0, len(deployments))
	for i, d := range deployments {
		what := fmt.Sprintf("openai.AzureDeployments: deployment %d (%q)", i+1, d.Name)
		rpm := d.RPM
		if rpm == 0 {
			rpm = AzureRPM(d.TPM)
		}
		var host *url.URL
		switch {
		case d.Deployment == "" || strings.Contains(d.Deployment, "/"):
			errs.Add(what, fmt.Errorf("the Deployment %q is not a deployment's name", d.Deployment))
		case d.RPM < 0:
			errs.Add(what, fmt.Errorf("RPM %d is negative; 0 means TPM×6/1000", d.RPM))
		case d.TPM <= 0 || rpm < 1:
			errs.Add(what, fmt.Errorf("TPM %d gives the deployment no request a minute (6 per 1,000 TPM); set the TPM its deployment page shows", d.TPM))
		case d.Endpoint != "":
			u, err := url.Parse(d.Endpoint)
			if err != nil || u.Scheme != "https" || u.Host == "" {
				errs.Add(what, fmt.Errorf("the Endpoint is not an https address such as https://my-resource.openai.azure.com"))
				break
			}
			host = u
		}
		tokens, requests := AzureTokensScope(d.Name), AzureRequestsScope(d.Name)
		o = append(o,
			pacer.WithScope(pacer.Scope{Name: tokens, Unit: UnitTokens, Policy: policyTokens,
				Limit: pacer.Limit{Count: d.TPM, Per: time.Minute, Burst: max(d.TPM, 0)}}),
			pacer.WithScope(pacer.Scope{Name: requests, Unit: pacer.UnitRequests, Policy: policyAzureRequests,
				Limit: pacer.Limit{Count: rpm, Per: time.Minute, Burst: 1}}))
		members = append(members, pool.Member{Name: d.Name, Apply: d.apply(host), Scopes: []string{tokens, requests}})
	}
	o = append(o, pacer.WithRoute(azureRoute), pacer.WithPool(pool.Config{Members: members}))
	return pacer.Options(append(o, errs.Options()...)...)
}

// apply returns the deployment's Apply: its name in the path, its host
// and its key, each where set.
func (d AzureDeployment) apply(host *url.URL) func(*http.Request) error {
	rewrite := pool.URL(func(u *url.URL) {
		parts := strings.Split(u.Path, "/")
		for i := 1; i+1 < len(parts); i++ {
			if parts[i-1] == "openai" && parts[i] == "deployments" {
				parts[i+1] = d.Deployment
				u.Path, u.RawPath = strings.Join(parts, "/"), ""
				break
			}
		}
		if host != nil {
			u.Scheme, u.Host = host.Scheme, host.Host
		}
	})
	key := pool.Header("api-key", d.Key)
	return func(r *http.Request) error {
		if err := rewrite(r); err != nil {
			return err
		}
		if d.Key != "" {
			return key(r)
		}
		return nil
	}
}

// azureRoute charges a call to a token-counted endpoint its estimate on
// ScopeAzureEstimate, which the deployment's tokens scope is then
// charged, in place of DefaultScope: the deployment's scopes pace it.
// Azure counts "the prompt text and count, the max_tokens setting and the
// best_of setting" (see Figures), so the estimate is the input and the
// reserved output together, not the larger of them as on OpenAI.
func azureRoute(req *http.Request, charges []pacer.Charge) []pacer.Charge {
	kind := endpointOf(req)
	if kind == notCharged {
		return charges
	}
	e := Estimate{Input: DefaultRequestTokens}
	if b, ok := reqbody.Read(req, maxEstimatedBody+1); ok && len(b) <= maxEstimatedBody {
		if got, err := estimate(kind, b, DefaultOutputTokens); err == nil {
			e = got
		}
	} else if ok {
		e = Estimate{Input: max(req.ContentLength, int64(len(b))) / charsPerToken}
	}
	charges = slices.DeleteFunc(charges, func(c pacer.Charge) bool { return c.Scope == pacer.DefaultScope })
	return append(charges, pacer.Charge{Scope: ScopeAzureEstimate, Cost: max(e.Input+e.Output, 1)})
}

const (
	azureReadOn     = "2026-12-02"
	azureQuotaJA    = "https://learn.microsoft.com/ja-jp/azure/ai-services/openai/how-to/quota"
	azureQuotaZH    = "https://azure.microsoft.com/zh-cn/documentation/services/ai-services/openai/how-to/quota"
	azureQuotaEN    = "https://learn.microsoft.com/en-us/azure/ai-services/openai/how-to/quota"
	azureFoundryJA  = "https://learn.microsoft.com/ja-jp/azure/foundry/openai/how-to/quota"
	azureIntervals  = "https://learn.microsoft.com/en-us/answers/questions/1689036/tokens-per-minute-rate-limit"
	azureEstimateQA = "https://learn.microsoft.com/en-us/answers/questions/1851574/resolving-429-errors-in-azure-openai-due-to-rate-l"
	azureHeadersQA  = "https://learn.microsoft.com/en-us/answers/questions/2156987/rate-limiting-inconsistent-with-x-ratelimit-remain"
	azureNoEnglish  = "The English page (" + azureQuotaEN + ") is not in the stored copies (searched 2026-12-02 by its address and its words); its Japanese copy on Microsoft Learn is, and is quoted in Japanese"
)

// azureFigures are the figures AzureDeployments paces by.
func azureFigures() []figures.Figure {
	f := func(name, scope, unit string, value float64, src, quote, unverified, note string) figures.Figure {
		return figures.Figure{Preset: "openai azure", Name: name, Scope: scope, Value: value, Unit: unit,
			Source: src, Read: azureReadOn, Quote: quote, Unverified: unverified, Note: note}
	}
	return []figures.Figure{
		f("requests per minute per 1,000 tokens per minute", AzureRequestsScope("<name>"), "requests/min per 1000 tokens/min",
			AzureRequestsPerThousandTPM, azureQuotaJA,
			"1 分あたりの要求 (RPM) レート制限も適用され、その値は次の比率を使用して TPM 割り当てに比例して設定されます。 1000 TPM あたり 6 RPM。", "",
			azureNoEnglish+" (in English: a requests-per-minute limit is enforced too, set in proportion to the TPM assigned, at 6 RPM per 1000 TPM). The Chinese copy at "+azureQuotaZH+
				" reads \"每 1000 TPM 为 6 RPM。\". Microsoft Foundry's newer page ("+azureFoundryJA+") adds \"クォータに対する 1 分あたりの要求数 (RPM) とトークン/分 (TPM) の比率は、モデルによって異なる場合があります。\" (the ratio may differ by model): AzureDeployment.RPM takes the figure the deployment's page shows in its place"),
		f("a deployment's tokens per minute is the TPM assigned to it", AzureTokensScope("<name>"), "scope", 0, azureQuotaJA,
			"デプロイが作成されると、割り当てられた TPM は、推論要求で適用される TPM (Tokens-per-Minute) のレート制限に直接マップされます。", "",
			azureNoEnglish+" (in English: once a deployment is created, the TPM assigned maps directly to the tokens-per-minute rate limit enforced on its inference requests). The figure is the caller's (AzureDeployment.TPM), paced in a bucket of a whole minute; a subscription's quota only bounds what its deployments' TPM add up to, so no scope is shared"),
		f("requests counted on 1-second intervals", AzureRequestsScope("<name>"), "requests/s", 0, azureIntervals,
			"For example, if Azure OpenAI is monitoring request rate on 1-second intervals, then rate limiting will occur for a 600-RPM deployment if more than 10 requests are received during each 1-second period (600 requests per minute = 10 requests per second).",
			"quoted on Microsoft Q&A as the words of "+azureQuotaEN+", which is not stored; the stored Japanese and Chinese copies were searched for it by their excerpts only. The preset copes conservatively: each deployment's requests scope holds one request, so its calls are evenly spaced at its RPM and no second holds more than its share",
			""),
		f("tokens charged per request: the prompt, max_tokens and best_of", ScopeAzureEstimate, "tokens", 0, azureEstimateQA,
			"Azure OpenAI calculates a max processed-token count per request using: - Prompt text and count - The max_tokens setting - The best_of setting",
			"an answer on Microsoft Q&A, not the quota page, which is not stored in English. The preset charges the input and the reserved output together (EstimateTokens's Input plus Output), the safe side of either reading: OpenAI's own rule is the larger of them",
			""),
		f("x-ratelimit-remaining-tokens and x-ratelimit-remaining-requests", AzureTokensScope("<name>"), "header", 0, azureHeadersQA,
			"Initially, the headers show x-ratelimit-remaining-requests=50 and x-ratelimit-remaining-tokens=50000.",
			"no page of Microsoft's documentation that is stored names these headers; a question on Microsoft Q&A shows them, for a deployment of 50,000 TPM (300 RPM), and so does a blog's capture (https://clemenssiebler.com/posts/understanding-azure-openai-x-ratelimit-remaining-tokens-x-ratelimit-remaining-requests-headers/: 19 requests remaining after one call to a 120-RPM deployment). The remaining requests count a 10-second window, not a minute, so the preset does not read them (the requests scope names a policy no header reports); the remaining tokens clamp the deployment's tokens scope, as OpenAI's do. A negative value (-1, which Q&A reports from the Responses API) is read as not said",
			""),
	}
}
