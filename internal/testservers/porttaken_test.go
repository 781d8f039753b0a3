package testservers

import (
	"errors"
	"net"
	"os/exec"
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
