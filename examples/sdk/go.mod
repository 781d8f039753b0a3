module github.com/pacer-go/pacer/examples/sdk

go 1.26.0

require (
	github.com/google/go-github/v89 v89.0.0
	github.com/pacer-go/pacer v0.0.0
	github.com/stripe/stripe-go/v83 v83.2.1
	github.com/twilio/twilio-go v1.31.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/dunglas/httpsfv v1.1.2 // indirect
	github.com/golang-jwt/jwt/v5 v5.2.2 // indirect
	github.com/golang/mock v1.6.0 // indirect
	github.com/google/go-querystring v1.2.0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
)

replace github.com/pacer-go/pacer => ../..
