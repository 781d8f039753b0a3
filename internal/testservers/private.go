package testservers

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A Private is a server started for one test, which the test may stop and
// start again, on the same port, to see what its clients do meanwhile. The
// shared servers of scripts/test must never be stopped: other packages' tests
// use them.
type Private struct {
	t     testing.TB
	Port  int
	dir   string // its files and log
	start func() (*exec.Cmd, error)
	stop  func(*exec.Cmd)
	cmd   *exec.Cmd
}

// Addr returns the server's 127.0.0.1:port.
func (p *Private) Addr() string { return "127.0.0.1:" + strconv.Itoa(p.Port) }

// Stop stops the server and waits until it has exited.
func (p *Private) Stop() {
	p.t.Helper()
	if p.cmd != nil {
		p.Resume() // a paused server cannot act on SIGTERM
		p.stop(p.cmd)
		p.cmd = nil
	}
}

// Pause freezes the server (SIGSTOP): it keeps its connections and port but
// answers nothing, like a server that hangs. Resume thaws it.
func (p *Private) Pause() { p.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume thaws a paused server (SIGCONT).
func (p *Private) Resume() { p.cmd.Process.Signal(syscall.SIGCONT) }

// Start starts the server again after Stop, on the same port, and waits
// until it accepts connections.
func (p *Private) Start() {
	p.t.Helper()
	if p.cmd != nil {
		return
	}
	cmd, err := p.start()
	if err != nil {
		p.t.Fatal(err)
	}
	p.cmd = cmd
}

// StartRedis starts a private redis-server on a free loopback port, stopped
// when the test ends; args are added to its command line (say,
// "--cluster-enabled", "yes"). Without redis-server the test is skipped
// (failed when CI=true).
func StartRedis(t testing.TB, args ...string) *Private {
	t.Helper()
	return startRedis(t, func() []string { return args })
}

// startRedis is StartRedis with its added arguments made anew for each
// first try: a cluster node's bus port (StartRedisCluster) may be taken
// between freePort and the server's bind, as its own port may, and the
// server then exits with "Address already in use" before it listens. A
// restart keeps the arguments of the start that succeeded.
func startRedis(t testing.TB, newArgs func() []string) *Private {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		unavailable(t, "redis-server is not installed")
		return nil
	}
	dir := t.TempDir()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	p := &Private{t: t, Port: port, dir: dir}
	args := newArgs()
	p.start = func() (*exec.Cmd, error) {
		cmd := exec.Command(bin, append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(p.Port), "--save", "",
			"--appendonly", "no", "--dir", dir, "--logfile", filepath.Join(dir, "redis.log")}, args...)...)
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		if err := waitListening(cmd, p.Port, 10*time.Second); err != nil {
			stopProcess(cmd)
			return nil, fmt.Errorf("redis-server: %w\n%s", err, numbered(filepath.Join(dir, "redis.log")))
		}
		return cmd, nil
	}
	p.stop = stopProcess
	// The first start may find its port taken by another test's server
	// (tests of several packages run at once): it takes another. A restart
	// (Start after Stop) keeps its port, which a cluster's nodes know it by.
	for range 3 {
		cmd, err := p.start()
		if errors.Is(err, errPortTaken) || err != nil && strings.Contains(err.Error(), "Address already in use") {
			if p.Port, err = freePort(); err == nil {
				args = newArgs()
				continue
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		p.cmd = cmd
		break
	}
	p.Start() // a no-op once started; fails the test if three ports were taken
	t.Cleanup(p.Stop)
	return p
}

// StartPostgres starts a private PostgreSQL on a free loopback port, with a
// database "pacer" (user postgres, trust auth), stopped when the test ends.
// Its URL is PostgresURLOf(p). Without PostgreSQL's binaries the test is
// skipped (failed when CI=true). It takes a few seconds: initdb.
func StartPostgres(t testing.TB) *Private {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Strings(bins)
	if len(bins) == 0 {
		unavailable(t, "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin)")
		return nil
	}
	bin := bins[len(bins)-1]
	// The postgres user must reach the data dir, which t.TempDir's 0700
	// parents forbid.
	dir, err := os.MkdirTemp("", "pacer-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 { // initdb and postgres refuse to run as root
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running PostgreSQL as root needs a postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	run := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		return cmd
	}
	data := filepath.Join(dir, "data")
	if out, err := run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "--no-sync",
		"--encoding=UTF8", "--locale=C").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	p := &Private{t: t, Port: port}
	created := false
	p.start = func() (*exec.Cmd, error) {
		cmd := run("postgres", "-D", data, "-p", strconv.Itoa(port), "-c", "listen_addresses=127.0.0.1",
			"-k", dir, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
		log, err := os.OpenFile(filepath.Join(dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		defer log.Close()
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		if err := waitListening(cmd, port, 30*time.Second); err != nil {
			stopProcess(cmd)
			return nil, fmt.Errorf("postgres: %w\n%s", err, numbered(log.Name()))
		}
		if !created {
			// Connections may still be refused for a moment after the port
			// opens; createdb retries until the server accepts them.
			deadline := time.Now().Add(30 * time.Second)
			for {
				out, err := exec.Command(filepath.Join(bin, "createdb"), "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "postgres", "pacer").CombinedOutput()
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					stopProcess(cmd)
					return nil, fmt.Errorf("createdb: %v\n%s", err, out)
				}
				time.Sleep(50 * time.Millisecond)
			}
			created = true
		}
		return cmd, nil
	}
	// SIGINT is PostgreSQL's fast shutdown: clients are disconnected at once.
	p.stop = func(cmd *exec.Cmd) { signalAndWait(cmd, syscall.SIGINT) }
	p.Start()
	t.Cleanup(p.Stop)
	return p
}

// PostgresURLOf returns the URL of the database "pacer" on p.
func PostgresURLOf(p *Private) string {
	return fmt.Sprintf("postgres://postgres@%s/pacer?sslmode=disable", p.Addr())
}

// waitListening waits until something accepts connections on port, failing
// at once if cmd exits.
func waitListening(cmd *exec.Cmd, port int, timeout time.Duration) error {
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			c.Close()
			// A free port found earlier may have been taken since by
			// another test's server: then the listener that answered is
			// not this process's, which fails to bind and exits at once.
			select {
			case err := <-exited:
				return fmt.Errorf("%w: port %d answered, but the server exited (%v)", errPortTaken, port, err)
			case <-time.After(portGrace):
			}
			// Hand the Wait over: stopProcess must not call it again.
			go func() { <-exited }()
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("exited before listening on port %d: %v", port, err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not listening on port %d after %v", port, timeout)
		}
	}
}

// errPortTaken says a server could not have the port it was given: another
// process took it between freePort and the server's bind.
var errPortTaken = errors.New("port taken")

// portGrace is how long a server that answers on its port must stay up
// for the port to be its own.
const portGrace = 100 * time.Millisecond

func stopProcess(cmd *exec.Cmd) { signalAndWait(cmd, syscall.SIGTERM) }

// signalAndWait sends sig, then SIGKILL after 10 s, and returns once the
// process is gone.
func signalAndWait(cmd *exec.Cmd, sig syscall.Signal) {
	cmd.Process.Signal(sig)
	deadline := time.Now().Add(10 * time.Second)
	for cmd.Process.Signal(syscall.Signal(0)) == nil {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
		}
		time.Sleep(10 * time.Millisecond)
	}
}
