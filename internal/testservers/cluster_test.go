package testservers

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The shared cluster is six nodes, every one of which sees every slot
// served, three of them primaries.
func TestSharedRedisClusterOK(t *testing.T) {
	t.Parallel()
	addrs := RedisClusterAddrs(t)
	if len(addrs) != 6 {
		t.Fatalf("%s lists %d nodes, want 6: %q", EnvRedisClusterAddrs, len(addrs), addrs)
	}
	for _, addr := range addrs {
		info := clusterInfo(t, addr)
		for _, want := range []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_known_nodes:6", "cluster_size:3"} {
			if !strings.Contains(info, want+"\r\n") {
				t.Errorf("CLUSTER INFO of %s lacks %q:\n%s", addr, want, info)
			}
		}
	}
}

// clusterInfo sends CLUSTER INFO over RESP and returns its bulk-string reply.
func clusterInfo(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(ioTimeout))
	if _, err := io.WriteString(c, "*2\r\n$7\r\nCLUSTER\r\n$4\r\nINFO\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(head, "$"), "\r\n"))
	if err != nil || !strings.HasPrefix(head, "$") {
		t.Fatalf("CLUSTER INFO of %s answered %q, want a bulk string", addr, head)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		t.Fatal(fmt.Errorf("reading CLUSTER INFO: %w", err))
	}
	return string(body)
}
