package classify_test

import (
	"bytes"
	"net/http"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/classify"
)

// A classifier for a provider whose 403 with "secondary rate limit" in the
// body asks for a minute's pause, and whose 529 means overloaded.
func Example() {
	secondary := func(resp *http.Response, body []byte) classify.Verdict {
		if resp.StatusCode == http.StatusForbidden && bytes.Contains(body, []byte("secondary rate limit")) {
			return classify.Verdict{BackPressure: true, Wait: time.Minute}
		}
		return classify.Verdict{}
	}
	tr := pacer.New(nil, pacer.WithClassifier(secondary), pacer.WithClassifier(classify.BackPressure(529)))
	_ = &http.Client{Transport: tr}
	// Output:
}
