package openai

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/pacer-go/pacer"
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

// classify reads OpenAI's error responses:
//
//   - 429 with code or type "insufficient_quota" is a spent quota (no
//     credit, or the monthly budget reached): not retried, not paced around;
//   - any other 429 is the rate limiter's refusal, made before the request
//     was processed, so even a POST may be sent again;
//   - 503 is OpenAI's "slow down": back-pressure;
//   - "x-should-retry: true" is OpenAI's word that another attempt is safe.
func classify(resp *http.Response, body []byte) pacer.Verdict {
	var v pacer.Verdict
	if resp.StatusCode == http.StatusTooManyRequests {
		var e apiError
		_ = json.Unmarshal(body, &e)
		code, _ := e.Error.Code.(string)
		if code == "insufficient_quota" || e.Error.Type == "insufficient_quota" {
			reason := "OpenAI insufficient_quota"
			if msg := strings.TrimSpace(e.Error.Message); msg != "" {
				reason += ": " + msg
			}
			return pacer.Verdict{Exhausted: reason}
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
