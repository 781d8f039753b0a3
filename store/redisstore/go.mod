module github.com/pacer-go/pacer/store/redisstore

go 1.26.0

require (
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/pacer-go/pacer v0.0.0
	github.com/redis/go-redis/v9 v9.23.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dunglas/httpsfv v1.1.2 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

// A clean clone builds against the pacer next to it, without a published
// version; go.work does the same for development across modules.
replace github.com/pacer-go/pacer => ../..
