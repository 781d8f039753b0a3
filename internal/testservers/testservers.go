// Package testservers gives pacer's tests the real servers they run against:
// Redis, PostgreSQL and a rate-limited nginx standing in for a third-party API.
//
// ./scripts/test starts the servers on 127.0.0.1, exports where they are, and
// runs the tests. Run the tests through it; a plain `go test ./...` skips the
// tests that need a server:
//
//	PACER_REDIS_ADDR    127.0.0.1:PORT                                    RedisAddr
//	PACER_REDIS_CLUSTER_ADDRS  six 127.0.0.1:PORT, comma-separated        RedisClusterAddrs
//	PACER_POSTGRES_URL  postgres://postgres@127.0.0.1:PORT/pacer?sslmode=disable  PostgresURL
//	PACER_NGINX_URL     http://127.0.0.1:PORT (the shared fake API)       NginxURL
//	PACER_NGINX_BIN     path of the nginx binary                          StartNginx
//
// When CI=true a missing server fails the test instead of skipping it: in CI a
// test that silently did not run is a bug.
//
// The servers are shared by every test package, and go test runs packages in
// parallel: give each test its own Redis key prefix and its own Postgres
// table (or schema), and don't count on a shared nginx bucket being full.
//
// # The shared fake API (PACER_NGINX_URL)
//
// Configured by scripts/fakeapi.nginx.conf. Each limited location has its own
// zone; all test traffic comes from 127.0.0.1, so each zone is one bucket
// shared by every test that hits that location.
//
//	/ok                     200 "ok\n", never limited
//	/limit/r50              limit_req 50r/s, burst=10 nodelay; over it: 429
//	/limit/r20              limit_req 20r/s, no burst; over it: 429
//	/limit/r20-retry-after  as /limit/r20, and the 429 carries "Retry-After: 1"
//	/conn                   limit_conn 4 at once, 503 over it; each response is
//	                        64 KiB sent at 128 KiB/s, so it lasts ~250 ms
//
// A test that needs an exact bucket (say, "the first request passes") or
// other limits starts its own nginx with [StartNginx].
package testservers

import (
	"fmt"
	"os"
	"testing"
)

// Environment variables that scripts/test exports.
const (
	EnvRedisAddr   = "PACER_REDIS_ADDR"
	EnvPostgresURL = "PACER_POSTGRES_URL"
	EnvNginxURL    = "PACER_NGINX_URL"
	EnvNginxBin    = "PACER_NGINX_BIN"
)

// RedisAddr returns the host:port of the Redis server started by
// scripts/test. Without one it skips the test, or fails it when CI=true.
func RedisAddr(t testing.TB) string {
	t.Helper()
	return fromEnv(t, EnvRedisAddr, "Redis")
}

// PostgresURL returns the URL of the database "pacer" on the PostgreSQL
// server started by scripts/test (user postgres, no password, no TLS).
// Without one it skips the test, or fails it when CI=true.
func PostgresURL(t testing.TB) string {
	t.Helper()
	return fromEnv(t, EnvPostgresURL, "PostgreSQL")
}

// NginxURL returns the base URL (no trailing slash) of the shared fake API
// described in the package doc. Without one it skips the test, or fails it
// when CI=true.
func NginxURL(t testing.TB) string {
	t.Helper()
	return fromEnv(t, EnvNginxURL, "nginx")
}

func fromEnv(t testing.TB, key, server string) string {
	t.Helper()
	if v := os.Getenv(key); v != "" {
		return v
	}
	unavailable(t, fmt.Sprintf("%s is not set, so there is no %s server for this test: run ./scripts/test, which starts one", key, server))
	return ""
}

// unavailable skips the test, or fails it in CI, where every server must be
// there.
func unavailable(t testing.TB, msg string) {
	t.Helper()
	if inCI() {
		t.Fatal(msg + " (CI=true: a missing server is a failure, not a skip)")
		return
	}
	t.Skip(msg)
}

func inCI() bool { return os.Getenv("CI") == "true" }
