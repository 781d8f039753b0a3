module github.com/pacer-go/pacer/internal/integration

go 1.26.0

require (
	github.com/jackc/pgx/v5 v5.12.0
	github.com/pacer-go/pacer v0.0.0
	github.com/pacer-go/pacer/store/pgstore v0.0.0
	github.com/pacer-go/pacer/store/redisstore v0.0.0
	github.com/redis/go-redis/v9 v9.23.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dunglas/httpsfv v1.1.2 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
)

// Tests that run pacer against real stores and several processes at once:
// a module of their own, so the core's go.mod needs none of the stores'
// drivers. Everything resolves to the packages next to it.
replace (
	github.com/pacer-go/pacer => ../..
	github.com/pacer-go/pacer/store/pgstore => ../../store/pgstore
	github.com/pacer-go/pacer/store/redisstore => ../../store/redisstore
)
