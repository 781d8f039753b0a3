package testservers

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Every network wait in these tests is bounded by this.
const ioTimeout = 5 * time.Second

func TestRedisAnswersPing(t *testing.T) {
	t.Parallel()
	addr := RedisAddr(t)
	c, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(ioTimeout))
	if _, err := io.WriteString(c, "*1\r\n$4\r\nPING\r\n"); err != nil { // RESP array ["PING"]
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the reply to PING: %v", err)
	}
	if line != "+PONG\r\n" {
		t.Fatalf("PING answered %q, want %q", line, "+PONG\r\n")
	}
}

func TestPostgresAnswersSSLRequest(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme != "postgres" || u.Path != "/pacer" || u.User.Username() != "postgres" {
		t.Errorf("%s = %s, want postgres://postgres@HOST:PORT/pacer?...", EnvPostgresURL, u)
	}
	c, err := net.DialTimeout("tcp", u.Host, ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(ioTimeout))
	// SSLRequest: int32 length 8, int32 code 80877103. The server answers one
	// byte: 'S' (will do TLS) or 'N' (won't), and then waits for a startup.
	msg := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 8), 80877103)
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	var reply [1]byte
	if _, err := io.ReadFull(c, reply[:]); err != nil {
		t.Fatalf("reading the reply to SSLRequest: %v", err)
	}
	if reply[0] != 'N' && reply[0] != 'S' {
		t.Fatalf("SSLRequest answered %q, want 'N' or 'S'", reply[0])
	}
}

func TestSharedNginxOK(t *testing.T) {
	t.Parallel()
	base := NginxURL(t)
	resp := get(t, base+"/ok")
	if resp.status != http.StatusOK || resp.body != "ok\n" {
		t.Fatalf("GET /ok = %d %q, want 200 \"ok\\n\"", resp.status, resp.body)
	}
}

func TestSharedNginxLimitsR20(t *testing.T) {
	t.Parallel()
	base := NginxURL(t)
	// 20r/s without burst lets one request through every 50 ms; ten back to
	// back take far less, so some must be refused. Other tests may share the
	// bucket, which only adds refusals.
	counts := burst(t, base+"/limit/r20", 10)
	if counts[http.StatusTooManyRequests] == 0 {
		t.Fatalf("10 quick requests to /limit/r20: %v, want at least one 429", counts)
	}
	if n := counts[http.StatusOK] + counts[http.StatusTooManyRequests]; n != 10 {
		t.Fatalf("10 requests to /limit/r20: %v, want only 200s and 429s", counts)
	}
}

func TestSharedNginxRetryAfter(t *testing.T) {
	t.Parallel()
	base := NginxURL(t)
	var saw429 bool
	for range 10 {
		resp := get(t, base+"/limit/r20-retry-after")
		switch resp.status {
		case http.StatusOK:
			if ra := resp.header.Get("Retry-After"); ra != "" {
				t.Fatalf("a 200 carries Retry-After: %q", ra)
			}
		case http.StatusTooManyRequests:
			saw429 = true
			if ra := resp.header.Get("Retry-After"); ra != "1" {
				t.Fatalf("the 429 carries Retry-After: %q, want \"1\"", ra)
			}
		default:
			t.Fatalf("GET /limit/r20-retry-after = %d", resp.status)
		}
	}
	if !saw429 {
		t.Fatal("10 quick requests to /limit/r20-retry-after: no 429")
	}
}

func TestSharedNginxR50AllowsBurst(t *testing.T) {
	t.Parallel()
	base := NginxURL(t)
	// burst=10 nodelay: up to 11 pass at once, the rest are refused at once.
	counts := burst(t, base+"/limit/r50", 20)
	if counts[http.StatusTooManyRequests] == 0 {
		t.Fatalf("20 quick requests to /limit/r50: %v, want some 429s", counts)
	}
}

func TestSharedNginxLimitsConnections(t *testing.T) {
	t.Parallel()
	base := NginxURL(t)
	// Each /conn response takes ~250 ms, so 8 requests started together
	// overlap and the 5th to arrive finds the 4 slots taken.
	const n = 8
	client := &http.Client{Timeout: ioTimeout, Transport: &http.Transport{DisableKeepAlives: true}}
	defer client.CloseIdleConnections()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		counts = map[int]int{}
		errs   []error
		start  = make(chan struct{})
	)
	for range n {
		wg.Go(func() {
			<-start
			resp, err := client.Get(base + "/conn")
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			counts[resp.StatusCode]++
		})
	}
	close(start)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatal(errors.Join(errs...))
	}
	if counts[http.StatusServiceUnavailable] == 0 || counts[http.StatusOK] == 0 {
		t.Fatalf("%d concurrent requests to /conn: %v, want both 200s and 503s", n, counts)
	}
}

func TestStartNginx(t *testing.T) {
	t.Parallel()
	base := StartNginx(t, `
		# A bucket of our own: nobody else can spend it.
		limit_req_zone $binary_remote_addr zone=mine:1m rate=5r/s;
		limit_req_status 429;

		location = /mine {
			limit_req zone=mine;
			try_files /ok.txt =500;
		}
		location = /teapot { return 418 "short and stout; {not a block}\n"; }
		location = /big { try_files /64k.bin =500; }
	`)

	// The bucket is private and starts full, so the first request must pass.
	if resp := get(t, base+"/mine"); resp.status != http.StatusOK {
		t.Fatalf("first GET /mine = %d, want 200", resp.status)
	}
	counts := burst(t, base+"/mine", 9)
	if counts[http.StatusTooManyRequests] == 0 {
		t.Fatalf("9 more quick requests to /mine (5r/s): %v, want some 429s", counts)
	}
	if resp := get(t, base+"/teapot"); resp.status != http.StatusTeapot || resp.body != "short and stout; {not a block}\n" {
		t.Fatalf("GET /teapot = %d %q", resp.status, resp.body)
	}
	if resp := get(t, base+"/big"); resp.status != http.StatusOK || len(resp.body) != 64<<10 {
		t.Fatalf("GET /big = %d with %d bytes, want 200 with 65536", resp.status, len(resp.body))
	}
}

func TestStartNginxStopsOnCleanup(t *testing.T) {
	t.Parallel()
	var base string
	t.Run("server", func(t *testing.T) {
		base = StartNginx(t, `location = /x { try_files /ok.txt =500; }`)
		if resp := get(t, base+"/x"); resp.status != http.StatusOK {
			t.Fatalf("GET /x = %d, want 200", resp.status)
		}
	})
	if base == "" {
		t.Skip("StartNginx did not start a server")
	}
	// The subtest's cleanup has returned, and it waits for nginx to exit, so
	// its port must now refuse connections.
	u, _ := url.Parse(base)
	c, err := net.DialTimeout("tcp", u.Host, ioTimeout)
	if err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after cleanup", base)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dialing %s after cleanup: %v, want connection refused", base, err)
	}
}

func TestStartNginxReportsConfigErrors(t *testing.T) {
	t.Parallel()
	if nginxBinary(t) == "" {
		return
	}
	rec := &recorder{TB: t}
	done := make(chan struct{})
	go func() { // Fatalf ends the goroutine it runs in, as in a real test
		defer close(done)
		StartNginx(rec, `no_such_directive on;`)
	}()
	<-done
	if !strings.Contains(rec.fatal, "no_such_directive") {
		t.Fatalf("StartNginx with a bad directive failed with %q, want nginx's error naming it", rec.fatal)
	}
}

func TestSplitConfig(t *testing.T) {
	t.Parallel()
	httpPart, serverPart, err := splitConfig(`
		limit_req_zone $binary_remote_addr zone=z:1m rate=1r/s; # a comment; with { braces
		map $status $ra { 429 1; default ""; }
		location /a { limit_req zone=z; if ($x) { return 404; } }
		return 200 "quoted ; and } and # are text";
		# location /commented-out { }
		set $v 'it''s';
		add_header X-A a;
	`)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"limit_req_zone", "map $status $ra { 429 1; default \"\"; }", "add_header X-A a;"} {
		if !strings.Contains(httpPart, want) {
			t.Errorf("http part lacks %q:\n%s", want, httpPart)
		}
	}
	for _, want := range []string{"location /a { limit_req zone=z; if ($x) { return 404; } }", `return 200 "quoted ; and } and # are text";`, "set $v 'it''s';"} {
		if !strings.Contains(serverPart, want) {
			t.Errorf("server part lacks %q:\n%s", want, serverPart)
		}
	}
	if !strings.Contains(httpPart+serverPart, "# location /commented-out { }") {
		t.Errorf("a comment was lost:\nhttp:\n%s\nserver:\n%s", httpPart, serverPart)
	}
	if strings.Contains(httpPart, "location /a") || strings.Contains(serverPart, "limit_req_zone") {
		t.Errorf("statements in the wrong part:\nhttp:\n%s\nserver:\n%s", httpPart, serverPart)
	}

	for _, bad := range []string{
		`location /a { `,
		`location /a { } }`,
		`return 200 "unterminated;`,
		`limit_req_status 429`,
		`server { listen 80; }`,
		`listen 8080;`,
	} {
		if _, _, err := splitConfig(bad); err == nil {
			t.Errorf("splitConfig(%q): no error", bad)
		}
	}
}

// TestMissingServerSkipsOrFails checks the contract every helper shares: no
// server is a skip, except in CI, where it is a failure.
func TestMissingServerSkipsOrFails(t *testing.T) {
	t.Setenv(EnvRedisAddr, "")
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		rec := &recorder{TB: t}
		done := make(chan struct{})
		go func() { // Skip and Fatal end the goroutine they run in
			defer close(done)
			RedisAddr(rec)
		}()
		<-done
		switch {
		case ci == "true" && (rec.fatal == "" || rec.skip != ""):
			t.Errorf("CI=true: fatal %q, skip %q; want a failure", rec.fatal, rec.skip)
		case ci == "" && (rec.skip == "" || rec.fatal != ""):
			t.Errorf("CI unset: fatal %q, skip %q; want a skip", rec.fatal, rec.skip)
		}
		if msg := rec.fatal + rec.skip; !strings.Contains(msg, "./scripts/test") || !strings.Contains(msg, EnvRedisAddr) {
			t.Errorf("message %q should name %s and ./scripts/test", msg, EnvRedisAddr)
		}
	}
}

// recorder is a testing.TB whose Skip and Fatal are recorded instead of
// ending the test; like the real ones, they end the calling goroutine.
type recorder struct {
	testing.TB
	skip, fatal string
}

func (r *recorder) Helper() {}
func (r *recorder) Skip(args ...any) {
	r.skip = fmt.Sprint(args...)
	runtime.Goexit()
}
func (r *recorder) Fatal(args ...any) {
	r.fatal = fmt.Sprint(args...)
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

type response struct {
	status int
	header http.Header
	body   string
}

var client = &http.Client{Timeout: ioTimeout}

func get(t *testing.T, url string) response {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", url, err)
	}
	return response{resp.StatusCode, resp.Header, string(body)}
}

// burst sends n sequential GETs as fast as they go and counts the statuses.
func burst(t *testing.T, url string, n int) map[int]int {
	t.Helper()
	counts := map[int]int{}
	for range n {
		counts[get(t, url).status]++
	}
	return counts
}
