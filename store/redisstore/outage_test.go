package redisstore_test

import (
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/pacer-go/pacer/internal/testservers"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/store/redisstore"
	"github.com/pacer-go/pacer/storetest"
)

// A private Redis, stopped mid-run and started again: no request hangs past
// its context, each store.Policy.OnFailure holds, and the stores recover.
func TestOutage(t *testing.T) {
	srv := testservers.StartRedis(t)
	storetest.Outage(t, newRedisStore(srv, false), srv.Stop, srv.Start)
}

// A Redis that hangs (SIGSTOP) holds no request past the store timeout, nor
// past the request's own context. Both ways the Transport calls the store:
// on the request's goroutine, for a client that gives up at its context's
// deadline (ContextTimeoutEnabled), and in a goroutine it abandons, for one
// that does not.
func TestHangingServer(t *testing.T) {
	for _, contextTimeout := range []bool{false, true} {
		t.Run(fmt.Sprintf("ContextTimeoutEnabled=%v", contextTimeout), func(t *testing.T) {
			srv := testservers.StartRedis(t)
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, ContextTimeoutEnabled: contextTimeout})
			t.Cleanup(func() { rdb.Close() })
			s := redisstore.New(rdb, redisstore.WithPrefix(storetest.Scope(t)))
			if s.HonoursContext() != contextTimeout {
				t.Fatalf("HonoursContext() = %v with ContextTimeoutEnabled %v", s.HonoursContext(), contextTimeout)
			}
			storetest.Hang(t, s, srv.Pause, srv.Resume)
		})
	}
}

// Each Transport's own store, on a private Redis.
func newRedisStore(srv *testservers.Private, contextTimeout bool) func(t *testing.T) store.Store {
	return func(t *testing.T) store.Store {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, ContextTimeoutEnabled: contextTimeout})
		t.Cleanup(func() { rdb.Close() })
		return redisstore.New(rdb, redisstore.WithPrefix(storetest.Scope(t)))
	}
}

// With Redis hung, a response that lowers the bucket is returned at once,
// and with every caller's deadline shorter than the store timeout the store
// failure policy still applies: both ways the Transport calls the store.
func TestHangingServerShortDeadlines(t *testing.T) {
	for _, contextTimeout := range []bool{false, true} {
		t.Run(fmt.Sprintf("ContextTimeoutEnabled=%v", contextTimeout), func(t *testing.T) {
			srv := testservers.StartRedis(t)
			newStore := newRedisStore(srv, contextTimeout)
			t.Run("Learn", func(t *testing.T) { storetest.LearnWhileHung(t, newStore(t), srv.Pause, srv.Resume) })
			t.Run("ShortDeadlines", func(t *testing.T) { storetest.ShortDeadlines(t, newStore(t), srv.Pause, srv.Resume) })
		})
	}
}

// A private Redis without persistence, stopped and started again: it comes
// back empty, and a spent budget stays spent all the same.
func TestBudgetsThroughAnOutage(t *testing.T) {
	srv := testservers.StartRedis(t)
	storetest.Budgets(t, newRedisStore(srv, true), srv.Stop, srv.Start)
}
