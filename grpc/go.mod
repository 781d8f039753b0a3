module github.com/pacer-go/pacer/grpc

go 1.26.0

require (
	github.com/pacer-go/pacer v0.0.0-00010101000000-000000000000
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/dunglas/httpsfv v1.1.2 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
)

replace github.com/pacer-go/pacer => ../
