module github.com/pacer-go/pacer

go 1.26.0

require (
	github.com/cenkalti/backoff/v4 v4.3.0
	github.com/dunglas/httpsfv v1.1.2
	go.uber.org/goleak v1.3.0
	golang.org/x/time v0.16.0
)
