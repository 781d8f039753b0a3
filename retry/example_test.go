package retry_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/retry"
)

func Example() {
	p := retry.Policy{MaxAttempts: 5, AttemptTimeout: 30 * time.Second}
	tr := pacer.New(nil, pacer.WithRetry(p))
	_ = &http.Client{Transport: tr}

	// The same rule, for a retrier of one's own.
	req, _ := http.NewRequest(http.MethodPost, "https://api.example.com/charges", nil)
	ok, why := p.Retryable(req, &http.Response{StatusCode: 503}, nil, 1)
	fmt.Println(ok, why)
	// Output: false a POST without an idempotency key may have been processed, so it is not sent twice
}
