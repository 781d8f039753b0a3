package redisstore_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/pacer-go/pacer/store/redisstore"
)

// The store honours its context when, and only when, its client gives up
// at a context's deadline: a client built with ContextTimeoutEnabled.
func TestHonoursContextFollowsTheClient(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client redis.UniversalClient
		want   bool
	}{
		{"client", redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), false},
		{"client with ContextTimeoutEnabled", redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true}), true},
		{"cluster with ContextTimeoutEnabled", redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, ContextTimeoutEnabled: true}), true},
		{"ring", redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}}), false},
	} {
		if got := redisstore.New(tc.client).HonoursContext(); got != tc.want {
			t.Errorf("%s: HonoursContext() = %v, want %v", tc.name, got, tc.want)
		}
		tc.client.Close()
	}
}
