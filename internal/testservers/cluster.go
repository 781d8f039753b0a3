package testservers

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// EnvRedisClusterAddrs is where scripts/test says where its Redis Cluster
// is: every node's host:port, comma-separated.
const EnvRedisClusterAddrs = "PACER_REDIS_CLUSTER_ADDRS"

// RedisClusterAddrs returns the host:port of every node of the Redis Cluster
// started by scripts/test: three primaries, each with one replica. Without
// one it skips the test, or fails it when CI=true.
//
// The cluster is shared by every test package: never stop, pause or fail
// over one of its nodes (use StartRedisCluster), and give each test its own
// key prefix.
func RedisClusterAddrs(t testing.TB) []string {
	t.Helper()
	return strings.Split(fromEnv(t, EnvRedisClusterAddrs, "Redis Cluster"), ",")
}

// A RedisCluster is a Redis Cluster started for one test, which the test may
// damage: stop a primary and see its replica take over.
type RedisCluster struct {
	// Nodes are the cluster's servers, the primaries first. Which node is
	// a primary changes when one fails over: ask the cluster (CLUSTER
	// SHARDS), not this order.
	Nodes []*Private
}

// Addrs returns every node's 127.0.0.1:port.
func (c *RedisCluster) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// NodeTimeout is the cluster-node-timeout of a private cluster: a primary
// that misses pings this long is failed, and its replica promoted about a
// second later. Shorter would fail over sooner, but a busy machine could then
// starve a healthy node that long and fail it over by mistake.
const NodeTimeout = 2 * time.Second

// StartRedisCluster starts a private Redis Cluster of primaries primaries,
// each with one replica, on free loopback ports, and waits until every node
// says cluster_state:ok. The nodes stop when the test ends. Without
// redis-server or redis-cli the test is skipped (failed when CI=true). It
// takes a few seconds: redis-cli waits for the nodes to agree.
func StartRedisCluster(t testing.TB, primaries int) *RedisCluster {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		unavailable(t, "redis-cli is not installed (Debian's redis-tools)")
		return nil
	}
	c := &RedisCluster{}
	for range 2 * primaries {
		// Each node's directory is its own (StartRedis makes one), and so
		// is its nodes.conf: a node stopped and started again rejoins with
		// the identity it had. Its bus port is chosen anew if another
		// process took it before the node could bind it.
		n := startRedis(t, func() []string {
			bus, err := freePort()
			if err != nil {
				t.Fatal(err)
			}
			return []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
				"--cluster-port", strconv.Itoa(bus), "--cluster-node-timeout", strconv.Itoa(int(NodeTimeout.Milliseconds()))}
		})
		if n == nil {
			return nil
		}
		c.Nodes = append(c.Nodes, n)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, n := range c.Nodes {
		c.WaitOK(t, n, 30*time.Second)
	}
	return c
}

// WaitOK waits until node n says cluster_state:ok (it sees every slot
// served), failing the test after timeout.
func (c *RedisCluster) WaitOK(t testing.TB, n *Private, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out, err := exec.Command("redis-cli", "-p", strconv.Itoa(n.Port), "cluster", "info").CombinedOutput()
		if err == nil && strings.Contains(string(out), "cluster_state:ok") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster node %s is not ok after %v: %v\n%s\n%s", n.Addr(), timeout, err, out,
				numbered(filepath.Join(n.dir, "redis.log")))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// String describes the cluster's nodes, for failure messages.
func (c *RedisCluster) String() string {
	for _, n := range c.Nodes {
		if n.cmd == nil { // stopped
			continue
		}
		out, err := exec.Command("redis-cli", "-p", strconv.Itoa(n.Port), "cluster", "nodes").CombinedOutput()
		if err != nil {
			return fmt.Sprintf("cluster nodes: %v", err)
		}
		return string(out)
	}
	return "every node is stopped"
}
