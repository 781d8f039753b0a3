package testservers

import (
	"errors"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// A port taken by another process between freePort and the server's bind
// answers a dial, but the server exits: waitListening says the port was
// taken, so that StartRedis takes another, instead of handing the test a
// server that is not there (a cluster then failed to form: "Could not
// connect to Redis").
func TestWaitListeningSeesAPortTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	cmd := exec.Command("sh", "-c", "exit 1") // a server that could not bind
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := waitListening(cmd, port, 5*time.Second); !errors.Is(err, errPortTaken) {
		t.Fatalf("waitListening on a port another process holds, for a server that exited: %v, want errPortTaken", err)
	}
}

// A cluster node's bus port taken between freePort and the node's bind
// makes redis-server exit with "Address already in use" before it listens
// on its own port: startRedis makes the arguments anew and starts it on
// other ports, instead of failing the test (TestClusterFailures did so in
// a CI run).
func TestStartRedisTakesAnotherBusPort(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		unavailable(t, "redis-server is not installed")
		return
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	tries := 0
	p := startRedis(t, func() []string {
		tries++
		bus := taken
		if tries > 1 {
			var err error
			if bus, err = freePort(); err != nil {
				t.Fatal(err)
			}
		}
		return []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-port", strconv.Itoa(bus)}
	})
	if p == nil || tries != 2 {
		t.Fatalf("started %v after %d tries of its arguments, want a server after 2", p != nil, tries)
	}
}
