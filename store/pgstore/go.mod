module github.com/pacer-go/pacer/store/pgstore

go 1.26.0

require (
	github.com/jackc/pgx/v5 v5.12.0
	github.com/pacer-go/pacer v0.0.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/dunglas/httpsfv v1.1.2 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/text v0.42.0 // indirect
)

// A clean clone builds against the pacer next to it, without a published
// version; go.work does the same for development across modules.
replace github.com/pacer-go/pacer => ../..
