package openai

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/pacer-go/pacer/classify"
)

// apiError is the body of an OpenAI error response.
// https://platform.openai.com/docs/guides/error-codes
type apiError struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"` // a string, or null
	} `json:"error"`
}

// quotaCodes are the error.code values OpenAI sends under the type
// insufficient_quota, and what each asks of the caller. They are read
// second-hand (see Figures): OpenAI's error-codes page was not in the
// stored copies.
var quotaCodes = map[string]string{
	"credit_balance_exhausted":          "the organization has no prepaid credits left: add credits",
	"organization_spend_limit_exceeded": "the organization reached the spend limit set on it: raise or remove the limit, or wait for the monthly reset",
	"project_spend_limit_exceeded":      "this project reached its own spend limit (other projects still work): raise or remove the project's limit, or wait for the monthly reset",
	"organization_usage_limit_exceeded": "the organization reached its usage tier's monthly limit: move up a tier, or wait for the monthly reset",
}

// QuotaCodes returns the error.code values under insufficient_quota that
// the preset tells apart, each with what it asks of the caller.
func QuotaCodes() map[string]string {
	out := make(map[string]string, len(quotaCodes))
	for k, v := range quotaCodes {
		out[k] = v
	}
	return out
}

// classifyError reads OpenAI's error responses:
//
//   - 429 whose type or code is insufficient_quota, or whose code is one of
//     QuotaCodes, is a spent quota: not retried, not paced around. Its
//     *pacer.QuotaError names the code and what to do: a project's spend
//     limit is not the organization's credit balance;
//   - any other 429 is the rate limiter's refusal, made before the request
//     was processed, so even a POST may be sent again;
//   - 503 is OpenAI's "slow down": back-pressure;
//   - "x-should-retry: true" is OpenAI's word that another attempt is safe.
func classifyError(resp *http.Response, body []byte) classify.Verdict {
	var v classify.Verdict
	if resp.StatusCode == http.StatusTooManyRequests {
		var e apiError
		_ = json.Unmarshal(body, &e)
		code, _ := e.Error.Code.(string)
		what, known := quotaCodes[code]
		if known || code == "insufficient_quota" || e.Error.Type == "insufficient_quota" {
			reason := "OpenAI insufficient_quota"
			if known {
				reason += " (" + code + "): " + what
			} else if code != "" && code != "insufficient_quota" {
				reason += " (" + code + ")"
			}
			if msg := strings.TrimSpace(e.Error.Message); msg != "" {
				reason += ` (OpenAI's words: "` + msg + `")`
			}
			return classify.Verdict{Quota: reason}
		}
		v.NeverProcessed = true
	}
	if resp.StatusCode == http.StatusServiceUnavailable {
		v.BackPressure = true
	}
	if strings.EqualFold(resp.Header.Get("X-Should-Retry"), "true") {
		v.NeverProcessed = true
	}
	return v
}
