package redisstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/internal/testservers"
	"github.com/pacer-go/pacer/store/redisstore"
	"github.com/pacer-go/pacer/storetest"
)

// A one-node Redis Cluster enforces what a real one does: every key of a
// script must hash to one slot. A multi-scope take works there, because all
// of a store's keys share its hash tag.
func TestCluster(t *testing.T) {
	srv := testservers.StartRedis(t, "--cluster-enabled", "yes",
		"--cluster-config-file", "nodes-"+strings.ReplaceAll(t.Name(), "/", "_")+".conf")
	ctx := context.Background()
	node := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer node.Close()
	if err := node.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	// The node takes a moment to see its own slots.
	for deadline := time.Now().Add(10 * time.Second); ; {
		info, err := node.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster did not become ok: %v %s", err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Without a common hash tag, two keys in one script fail.
	if err := node.Eval(ctx, "return 1", []string{"a", "b"}).Err(); err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("a script over keys in two slots returned %v; want CROSSSLOT (is cluster mode on?)", err)
	}

	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr()}})
	defer cc.Close()
	s := redisstore.New(cc)
	scope := storetest.Scope(t)
	ds := []pacer.Demand{
		{Scope: scope + "/account", Rate: 1, Burst: 2, Cost: 1},
		{Scope: scope + "/endpoint", Key: "POST /v1/x", Rate: 1, Burst: 1, Cost: 1},
	}
	if dec, err := s.Take(ctx, time.Now(), ds); err != nil || !dec.OK {
		t.Fatalf("a two-scope take on a Cluster = %+v, %v; want granted", dec, err)
	}
	if dec, err := s.Take(ctx, time.Now(), ds); err != nil || dec.OK || dec.Blocked != 1 {
		t.Fatalf("the second two-scope take = %+v, %v; want denied on the endpoint", dec, err)
	}
}
