module github.com/pacer-go/pacer/retryableinterop

go 1.26.0

require (
	github.com/hashicorp/go-retryablehttp v0.7.8
	github.com/pacer-go/pacer v0.0.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/dunglas/httpsfv v1.1.2 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
)

// A clean clone builds against the pacer next to it, without a published
// version; go.work does the same for development across modules.
replace github.com/pacer-go/pacer => ..
