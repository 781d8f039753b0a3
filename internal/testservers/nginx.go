package testservers

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// How long nginx gets to start, and to stop before it is killed.
const (
	nginxStartTimeout = 10 * time.Second
	nginxStopTimeout  = 5 * time.Second
)

// StartNginx starts a private nginx for the calling test and returns its base
// URL ("http://127.0.0.1:PORT", no trailing slash). It listens on a free
// loopback port, keeps every file in t.TempDir(), and is stopped by
// t.Cleanup. The binary is $PACER_NGINX_BIN, else nginx on PATH; with neither,
// the test is skipped (failed when CI=true).
//
// config is nginx configuration written as if the http and server contexts
// were one: top-level `location` blocks, and the directives nginx allows in a
// server but not in http (if, return, rewrite, set, break), go into the one
// server block; everything else — limit_req_zone, limit_conn_zone, map,
// limit_req_status, add_header, … — stays at http level, where the server
// inherits it. For example:
//
//	limit_req_zone $binary_remote_addr zone=mine:1m rate=5r/s;
//	limit_req_status 429;
//	location = /x {
//	    limit_req zone=mine;
//	    try_files /ok.txt =500;
//	}
//
// The document root holds ok.txt ("ok\n") and 64k.bin (65536 zero bytes).
// Serve them with try_files, not `return`: nginx runs `return` before
// limit_req and limit_conn, so a location that answers with `return` is never
// limited.
//
// The config must not contain a server block or a listen directive: StartNginx
// owns them. Startup errors fail the test with nginx's error log.
func StartNginx(t testing.TB, config string) (baseURL string) {
	t.Helper()
	bin := nginxBinary(t)
	if bin == "" {
		return "" // skipped (or failed, in CI)
	}
	httpPart, serverPart, err := splitConfig(config)
	if err != nil {
		t.Fatalf("testservers.StartNginx: %v", err)
	}

	dir := t.TempDir()
	for _, d := range []string{"html", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string][]byte{"ok.txt": []byte("ok\n"), "64k.bin": make([]byte, 64<<10)}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, "html", name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Between freePort closing its probe listener and nginx binding the port,
	// another process may take it; only that failure is worth a new port.
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("testservers.StartNginx: %v", err)
		}
		conf := filepath.Join(dir, "nginx.conf")
		if err := os.WriteFile(conf, []byte(nginxConfig(dir, port, httpPart, serverPart)), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := startNginx(bin, dir, conf, port)
		if err == nil {
			t.Cleanup(func() {
				if err := p.stop(); err != nil {
					t.Errorf("testservers: stopping nginx: %v", err)
				}
			})
			return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		}
		if !errors.Is(err, errAddrInUse) || attempt == 3 {
			t.Fatalf("testservers.StartNginx: %v\nconfig (%s):\n%s", err, conf, numbered(conf))
		}
	}
}

// nginxBinary finds nginx, or skips (in CI: fails) the test and returns "".
func nginxBinary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv(EnvNginxBin); bin != "" {
		return bin
	}
	if bin, err := exec.LookPath("nginx"); err == nil {
		return bin
	}
	// /usr/sbin, where Debian puts nginx, is not on every user's PATH.
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx"
	}
	unavailable(t, EnvNginxBin+" is not set and there is no nginx on PATH: run ./scripts/test, which installs nginx and sets it")
	return ""
}

// nginxConfig wraps the caller's parts in a config that keeps every file in
// dir. master_process off: one process, so there are no workers to orphan and
// no worker user that would need to read a root-only temp dir.
func nginxConfig(dir string, port int, httpPart, serverPart string) string {
	q := strconv.Quote // nginx reads double-quoted strings with backslash escapes
	p := func(name string) string { return q(filepath.Join(dir, name)) }
	return fmt.Sprintf(`# Written by testservers.StartNginx.
master_process off;
pid %s;
error_log %s warn;

events {
    worker_connections 256;
}

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

    # --- caller's http-level config
%s
    server {
        listen 127.0.0.1:%d;

        # --- caller's server-level config
%s
    }
}
`, p("nginx.pid"), p("error.log"), p("html"),
		p("tmp/client_body"), p("tmp/proxy"), p("tmp/fastcgi"), p("tmp/uwsgi"), p("tmp/scgi"),
		httpPart, port, serverPart)
}

var errAddrInUse = errors.New("address already in use")

type nginxProcess struct {
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	waitErr error         // set before done is closed
	output  bytes.Buffer  // stdout and stderr; read only after done
	errLog  string
}

func startNginx(bin, dir, conf string, port int) (*nginxProcess, error) {
	p := &nginxProcess{done: make(chan struct{}), errLog: filepath.Join(dir, "error.log")}
	// -e: without it nginx opens its compiled-in error log (/var/log/nginx/…)
	// before it reads our config. daemon off: stay our child, so we can wait.
	p.cmd = exec.Command(bin, "-p", dir+string(filepath.Separator), "-c", conf, "-e", p.errLog, "-g", "daemon off;")
	p.cmd.Stdout = &p.output
	p.cmd.Stderr = &p.output
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()

	// Ready means: nginx wrote its pid file — which it does only after binding
	// its sockets, so a port some other process holds can't fool us — and the
	// port accepts a connection.
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	pidFile := filepath.Join(dir, "nginx.pid")
	want := strconv.Itoa(p.cmd.Process.Pid)
	deadline := time.Now().Add(nginxStartTimeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(pidFile); err == nil && strings.TrimSpace(string(b)) == want {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				return p, nil
			}
		}
		select {
		case <-p.done:
			logs := p.logs()
			err := fmt.Errorf("nginx exited during startup (%v):\n%s", p.waitErr, logs)
			if strings.Contains(logs, "Address already in use") {
				err = fmt.Errorf("%w: %w", errAddrInUse, err)
			}
			return nil, err
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			_ = p.stop()
			return nil, fmt.Errorf("nginx did not accept connections on %s within %v:\n%s", addr, nginxStartTimeout, p.logs())
		}
	}
}

// stop asks nginx to exit (SIGTERM: fast shutdown) and kills it if it has not
// within nginxStopTimeout.
func (p *nginxProcess) stop() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(nginxStopTimeout):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return fmt.Errorf("nginx ignored SIGTERM for %v and was killed", nginxStopTimeout)
}

// logs is nginx's error log followed by its stdout/stderr; call after done
// is closed (or the process is gone), as output is written until then.
func (p *nginxProcess) logs() string {
	var b strings.Builder
	if log, err := os.ReadFile(p.errLog); err == nil {
		b.Write(log)
	}
	select {
	case <-p.done:
		b.Write(p.output.Bytes())
	default:
	}
	if b.Len() == 0 {
		return "(nginx logged nothing)"
	}
	return b.String()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func numbered(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	for i, l := range lines {
		lines[i] = fmt.Sprintf("%4d  %s", i+1, l)
	}
	return strings.Join(lines, "\n")
}

// serverOnly are the top-level statements that go into the server block:
// location, and the rewrite module's directives, which nginx does not allow
// at http level.
var serverOnly = map[string]bool{
	"location": true, "if": true, "return": true, "rewrite": true, "set": true, "break": true,
}

// splitConfig splits nginx configuration into its http-level and its
// server-level statements (see StartNginx). It understands just enough of
// nginx's syntax for that: statements end with ';' or with a {...} block,
// '#' starts a comment, quotes may hold anything.
func splitConfig(config string) (httpPart, serverPart string, err error) {
	var httpB, serverB strings.Builder
	depth, start := 0, 0
	flush := func(end int) error {
		stmt := config[start:end]
		start = end
		switch word := firstWord(stmt); {
		case word == "":
			httpB.WriteString(stmt) // whitespace and comments
		case word == "server" || word == "listen":
			return fmt.Errorf("config must not have a %q: StartNginx writes the server block and its listen", word)
		case serverOnly[word]:
			serverB.WriteString(stmt)
		default:
			httpB.WriteString(stmt)
		}
		return nil
	}
	for i := 0; i < len(config); i++ {
		switch c := config[i]; c {
		case '#':
			for i < len(config) && config[i] != '\n' {
				i++
			}
		case '"', '\'':
			j := i + 1
			for ; j < len(config) && config[j] != c; j++ {
				if config[j] == '\\' {
					j++
				}
			}
			if j >= len(config) {
				return "", "", fmt.Errorf("config has an unterminated %c string", c)
			}
			i = j
		case '{':
			depth++
		case '}':
			depth--
			if depth < 0 {
				return "", "", errors.New("config has an unbalanced '}'")
			}
			if depth == 0 {
				if err := flush(i + 1); err != nil {
					return "", "", err
				}
			}
		case ';':
			if depth == 0 {
				if err := flush(i + 1); err != nil {
					return "", "", err
				}
			}
		}
	}
	if depth != 0 {
		return "", "", errors.New("config has an unclosed '{'")
	}
	if strings.TrimSpace(stripComments(config[start:])) != "" {
		return "", "", fmt.Errorf("config ends with an unfinished statement: %q", strings.TrimSpace(config[start:]))
	}
	httpB.WriteString(config[start:])
	return httpB.String(), serverB.String(), nil
}

// firstWord is the directive name of a statement, after any comments.
func firstWord(stmt string) string {
	f := strings.Fields(stripComments(stmt))
	if len(f) == 0 {
		return ""
	}
	return strings.TrimRight(f[0], "{;")
}

// stripComments drops '#' comments from whole lines of s; it is only used on
// the text before a statement's first quote matters, i.e. to find its name.
func stripComments(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i] + "\n"
		}
		b.WriteString(line)
	}
	return b.String()
}
