package pacer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/internal/pace"
)

// FuzzTransport puts a Transport in front of a scripted, hostile API, in
// virtual time, and checks the promises that must hold whatever the API
// does:
//
//   - nothing panics;
//   - no call returns later than its deadline plus 50 ms;
//   - once every body is closed, no slot is held and no call waits;
//   - once the API turns healthy, the pace climbs back to the configured
//     rate within a bounded time.
//
// Each group of bytes in script is one response: its latency, status,
// rate-limit headers and body (see hostileStep). The script is played in a
// loop during the hostile phase.
func FuzzTransport(f *testing.F) {
	for _, seed := range hostileSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, script []byte) {
		synctest.Test(t, func(t *testing.T) { runHostile(t, script) })
	})
}

// hostileSeeds are scripts that each once broke a promise, or came close.
var hostileSeeds = [][]byte{
	{},
	{0, 0, 0, 0},             // healthy
	{0, 1, 0, 0, 0, 1, 0, 0}, // bare 429s
	{0, 1, 1, 2, 0, 1, 1, 4}, // 429 with a year's Retry-After, then garbage
	{0, 0, 3, 3, 0, 0, 3, 4}, // X-RateLimit-Limit 0, Remaining 0, Reset in the year 5000
	{0, 0, 4, 5},             // a one-year policy window
	{0, 7, 0, 0, 0, 7, 0, 0}, // the connection is refused
	{3, 0, 0, 0, 2, 1, 0, 0}, // stalls past the deadline
	{0, 4, 0, 1, 0, 2, 0, 1}, // 4xx and 5xx whose bodies stall
	{1, 1, 5, 6, 2, 3, 6, 7, 0, 1, 7, 8, 1, 0, 8, 9}, // provider families, mixed
}

// runHostile plays one script.
func runHostile(t *testing.T, script []byte) {
	const (
		rate     = 20.0 // per second, configured
		deadline = 2 * time.Second
		maxWait  = 5 * time.Second
		callers  = 4
		calls    = 12
	)
	api := &hostileAPI{script: script}
	tr := New(api,
		WithLimit(PerSecond(rate)),
		WithConcurrency(3),
		WithMaxWait(maxWait),
		WithLogger(slog.New(slog.DiscardHandler)),
	)
	mustNotErr(t, tr.Err())

	// The hostile phase: callers with deadlines, some GETs, some POSTs with
	// bodies that can and cannot be replayed.
	var wg sync.WaitGroup
	for g := range callers {
		wg.Go(func() {
			for i := range calls {
				hostileCall(t, tr, g+i, deadline)
			}
		})
	}
	wg.Wait()
	for _, s := range tr.Stats().Scopes {
		if s.InFlight != 0 || s.Waiting != 0 {
			t.Fatalf("after every call ended, scope %q has %d in flight and %d waiting", s.Name, s.InFlight, s.Waiting)
		}
	}

	// The healthy phase: the API answers 200 at once, with no headers. The
	// pace must be back within recovery, measured over the window after it.
	api.healthy.Store(true)
	// A cut climbs back by time (recovery.go): a pause is capped by
	// maxWait, and the dearest rejection's curve takes at most about
	// 1.6 pace.CostlyRecovery from the floor.
	const (
		recovery = maxWait + 2*pace.CostlyRecovery
		window   = 10 * time.Second
	)
	var accepted atomic.Int64
	start := time.Now()
	measureFrom := start.Add(recovery)
	stop := measureFrom.Add(window)
	for range callers {
		wg.Go(func() {
			for time.Now().Before(stop) {
				ctx, cancel := context.WithDeadline(context.Background(), stop)
				err := get(tr, ctx, "http://api.test/healthy")
				cancel()
				if err == nil && !time.Now().Before(measureFrom) && time.Now().Before(stop) {
					accepted.Add(1)
				}
				if err != nil {
					// A refusal that cannot wait must not turn into a
					// busy loop in virtual time.
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
	wg.Wait()
	pace := rate * defaultHeadroom
	if got, want := float64(accepted.Load()), 0.9*pace*window.Seconds(); got < want {
		t.Fatalf("%v after the API turned healthy, %v calls went through in %v; want at least %v (0.9 of the %v/s pace); scopes: %+v",
			recovery, got, window, want, pace, tr.Stats().Scopes)
	}
}

// hostileCall makes a call of kind n%3 with the given deadline and checks
// that it returns in time, whatever happened. Callers start with different
// kinds, so that every kind meets a fresh retry budget.
func hostileCall(t *testing.T, tr *Transport, n int, deadline time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	due := time.Now().Add(deadline)
	var req *http.Request
	var err error
	switch n % 3 {
	case 0:
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/get", nil)
	case 1: // replayable: NewRequest sets GetBody for a strings.Reader
		req, err = http.NewRequestWithContext(ctx, http.MethodPut, "http://api.test/put", strings.NewReader("payload"))
	default: // not replayable: no GetBody, and a POST
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, "http://api.test/post", io.NopCloser(strings.NewReader("payload")))
	}
	mustNotErr(t, err)
	resp, err := tr.RoundTrip(req)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if late := time.Since(due); late > 50*time.Millisecond {
		t.Fatalf("a %s returned %v after its deadline (err %v)", req.Method, late, err)
	}
}

// hostileAPI answers each request with the next step of its script, or 200
// once healthy. Like a real connection, it honours the request's context
// while it stalls, and so do its bodies.
type hostileAPI struct {
	script  []byte
	next    atomic.Int64
	healthy atomic.Bool
}

func (a *hostileAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	if a.healthy.Load() || len(a.script) == 0 {
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("ok")), Request: req}, nil
	}
	steps := (len(a.script) + 3) / 4
	i := int(a.next.Add(1)-1) % steps
	var b [4]byte
	copy(b[:], a.script[4*i:])
	return hostileStep(req, b)
}

// hostileStep builds one response from four bytes: latency, status,
// header family and header value, body.
func hostileStep(req *http.Request, b [4]byte) (*http.Response, error) {
	ctx := req.Context()
	latencies := [...]time.Duration{0, 10 * time.Millisecond, 500 * time.Millisecond, 3 * time.Second}
	if err := stall(ctx, latencies[b[0]%4]); err != nil {
		return nil, err
	}
	statuses := [...]int{200, 429, 503, 500, 400, 404, 529, -1}
	status := statuses[b[1]%8]
	if status < 0 {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: &net.AddrError{Err: syscall.ECONNREFUSED.Error(), Addr: "127.0.0.1:1"}}
	}
	now := time.Now()
	h := http.Header{}
	v := hostileValues[b[2]%byte(len(hostileValues))]
	switch b[2] % 10 {
	case 0: // none
	case 1:
		h.Set("Retry-After", v)
	case 2:
		h.Set("Retry-After-Ms", v)
	case 3:
		h.Set("X-RateLimit-Limit", v)
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("X-RateLimit-Reset", hostileValues[(b[3]+3)%byte(len(hostileValues))])
	case 4:
		h.Set("X-RateLimit-Limit", "1, 1;w=31536000")
		h.Set("X-RateLimit-Remaining", v)
	case 5:
		h.Set("RateLimit-Policy", `"p";q=1;w=31536000`)
		h.Set("RateLimit", `"p";r=0;t=`+v)
	case 6:
		h.Set("X-Ratelimit-Limit-Requests", v)
		h.Set("X-Ratelimit-Remaining-Requests", "0")
		h.Set("X-Ratelimit-Reset-Requests", "6m0s")
	case 7:
		h.Set("Anthropic-Ratelimit-Requests-Limit", v)
		h.Set("Anthropic-Ratelimit-Requests-Remaining", "0")
		h.Set("Anthropic-Ratelimit-Requests-Reset", now.Add(time.Hour).UTC().Format(time.RFC3339))
	case 8:
		h.Set("X-RateLimit-Limit", "5000")
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("X-RateLimit-Reset", strconv.FormatInt(now.Add(time.Hour).Unix(), 10))
	case 9:
		h.Set("Retry-After", now.Add(24*365*time.Hour).UTC().Format(http.TimeFormat))
		h.Set("Date", "garbage")
	}
	var body io.ReadCloser = io.NopCloser(strings.NewReader(`{"error":{"type":"rate_limit_error"}}`))
	switch b[3] % 4 {
	case 1: // stalls for longer than any deadline, honouring the context
		body = &stallingBody{ctx: ctx, d: time.Hour}
	case 2:
		body = io.NopCloser(io.MultiReader(strings.NewReader("partial"), errReader{errors.New("connection reset by peer")}))
	}
	return &http.Response{StatusCode: status, Header: h, Body: body, Request: req}, nil
}

// hostileValues are header values, from the plausible to the absurd.
var hostileValues = []string{
	"0", "1", "100", "99999999999", "-1", "garbage", "1.5", "999999999999999999999999",
	"5000", "946688400", "", "NaN", "1e308", // 946688400: an hour into synctest's epoch
}

// stall waits for d, or until ctx ends.
func stall(ctx context.Context, d time.Duration) error {
	if d == 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("hostile API: %w", ctx.Err())
	case <-timer.C:
		return nil
	}
}

// stallingBody gives nothing until d has passed or ctx has ended, as a
// connection's body does when the server stops sending.
type stallingBody struct {
	ctx context.Context
	d   time.Duration
}

func (b *stallingBody) Read([]byte) (int, error) {
	if err := stall(b.ctx, b.d); err != nil {
		return 0, err
	}
	return 0, io.EOF
}

func (b *stallingBody) Close() error { return nil }
