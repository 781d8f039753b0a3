package bench

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Server describes the fake API that every run is measured against: one
// nginx, on loopback, with three locations.
//
//	/limit     limit_req at Rate r/s with Burst, nodelay; over it: 429.
//	/limit-ra  the same, and its 429 carries "Retry-After: 1".
//	/conn      limit_conn Conn at once; over it: 503. Each response is 64 KiB
//	           sent at 128 KiB/s, so a call lasts about a quarter of a second
//	           and concurrent calls really overlap.
type Server struct {
	Rate  int // requests a second on /limit and /limit-ra
	Burst int // nginx's burst= on them
	Conn  int // concurrent requests allowed on /conn
}

// The locations' paths.
const (
	PathLimit           = "/limit"
	PathLimitRetryAfter = "/limit-ra"
	PathConn            = "/conn"
)

// config is the whole nginx.conf for s, keeping every file in dir.
//
// The bodies are files served with try_files, never `return`: nginx answers
// `return` in its rewrite phase, before limit_req and limit_conn run, so a
// location that uses it is never limited. master_process off: one process,
// nothing to orphan, and no worker user that must read a root-only temp dir.
func (s Server) config(dir string, port int) string {
	q := func(name string) string { return strconv.Quote(filepath.Join(dir, name)) }
	return fmt.Sprintf(`# Written by pacer's bench harness.
master_process off;
pid %s;
error_log %s warn;
events { worker_connections 1024; }
http {
    access_log off;
    default_type text/plain;
    server_tokens off;
    root %s;
    client_body_temp_path %s;
    proxy_temp_path %s;
    fastcgi_temp_path %s;
    uwsgi_temp_path %s;
    scgi_temp_path %s;
    keepalive_requests 1000000;

    limit_req_zone  $binary_remote_addr zone=api:1m    rate=%dr/s;
    limit_req_zone  $binary_remote_addr zone=api_ra:1m rate=%dr/s;
    limit_conn_zone $binary_remote_addr zone=conn:1m;
    limit_req_status  429;
    limit_conn_status 503;

    server {
        listen 127.0.0.1:%d;
        location = /ok { try_files /ok.txt =500; }
        location = %s {
            limit_req zone=api burst=%d nodelay;
            try_files /ok.txt =500;
        }
        location = %s {
            limit_req zone=api_ra burst=%d nodelay;
            # Re-answered by @retry_after, so that only the 429s carry it.
            error_page 429 = @retry_after;
            try_files /ok.txt =500;
        }
        location @retry_after {
            add_header Retry-After 1 always;
            return 429;
        }
        location = %s {
            limit_conn conn %d;
            limit_rate 128k;
            try_files /64k.bin =500;
        }
    }
}
`, q("nginx.pid"), q("error.log"), q("html"),
		q("tmp/client_body"), q("tmp/proxy"), q("tmp/fastcgi"), q("tmp/uwsgi"), q("tmp/scgi"),
		s.Rate, s.Rate, port,
		PathLimit, s.Burst, PathLimitRetryAfter, s.Burst, PathConn, s.Conn)
}

// Nginx is one running nginx.
type Nginx struct {
	URL  string // http://127.0.0.1:PORT
	cmd  *exec.Cmd
	done chan struct{}
	dir  string
}

// StartNginx starts bin as the fake API s, in a fresh temp dir on a free
// loopback port, and returns once it accepts connections. Every call starts
// from empty zones: that is how runs are kept from inheriting each other's
// debt.
func StartNginx(bin string, s Server) (*Nginx, error) {
	dir, err := os.MkdirTemp("", "pacer-bench-nginx.")
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"html", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "html", "ok.txt"), []byte("ok\n"), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "html", "64k.bin"), make([]byte, 64<<10), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// Between freePort's probe and nginx's bind another process may take the
	// port: only that failure is worth another try.
	for attempt := 1; ; attempt++ {
		n, err := startNginx(bin, dir, s)
		if err == nil {
			return n, nil
		}
		if !strings.Contains(err.Error(), "Address already in use") || attempt == 3 {
			os.RemoveAll(dir)
			return nil, err
		}
	}
}

func startNginx(bin, dir string, s Server) (*Nginx, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(s.config(dir, port)), 0o644); err != nil {
		return nil, err
	}
	errLog := filepath.Join(dir, "error.log")
	os.Remove(errLog)
	// -e: otherwise nginx opens its compiled-in error log before reading ours.
	cmd := exec.Command(bin, "-p", dir+"/", "-c", conf, "-e", errLog, "-g", "daemon off;")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	n := &Nginx{URL: "http://127.0.0.1:" + strconv.Itoa(port), cmd: cmd, done: make(chan struct{}), dir: dir}
	go func() { cmd.Wait(); close(n.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(n.URL + "/ok")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return n, nil
			}
		}
		select {
		case <-n.done:
			log, _ := os.ReadFile(errLog)
			return nil, fmt.Errorf("nginx exited during startup: %s%s", log, out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			n.stop()
			log, _ := os.ReadFile(errLog)
			return nil, fmt.Errorf("nginx did not answer on %s within 10 s: %s", n.URL, log)
		}
	}
}

// Stop stops nginx (SIGTERM, then SIGKILL after 5 s) and removes its files.
func (n *Nginx) Stop() error {
	err := n.stop()
	os.RemoveAll(n.dir)
	return err
}

func (n *Nginx) stop() error {
	if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-n.done:
		return nil
	case <-time.After(5 * time.Second):
	}
	n.cmd.Process.Kill()
	<-n.done
	return errors.New("nginx ignored SIGTERM for 5 s and was killed")
}

// FindNginx returns $PACER_NGINX_BIN, else nginx on PATH, else
// /usr/sbin/nginx (Debian's, not on every user's PATH), else "".
func FindNginx() string {
	if bin := os.Getenv("PACER_NGINX_BIN"); bin != "" {
		return bin
	}
	if bin, err := exec.LookPath("nginx"); err == nil {
		return bin
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx"
	}
	return ""
}
