package pacer_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/anthropic"
	"github.com/pacer-go/pacer/providers/openai"
	"github.com/pacer-go/pacer/usage"
	"github.com/pacer-go/pacer/usage/prices"
)

// FuzzTransportFeatures is FuzzTransport's sibling for what callers and a
// provider's bodies reach: permits and their Settle, live SetWorkload and
// SetLimit under traffic, tenant weights, and usage counts in JSON and SSE
// bodies, from the plausible to the absurd. It runs in virtual time, on
// an OpenAI-preset, an Anthropic-preset or a custom-Meter Transport (the
// script's first byte), and checks what must hold whatever the script:
//
//   - nothing panics;
//   - no call, permit or reservation returns later than its deadline plus
//     50 ms;
//   - once every call has ended, no slot is held, no call waits, and no
//     budget holds a reservation (every body settled);
//   - once the provider is healthy and the traffic has stopped, a call
//     without a budget is admitted on every scope within MaxWait (plus a
//     second): no count a body or a caller reported locks a scope.
//
// Each group of four bytes after the first is one step of the script: an
// HTTP response (status, body shape, usage count) and an action of the
// permit and control goroutines (see featureAPI and featureActions).
func FuzzTransportFeatures(f *testing.F) {
	for _, seed := range featureSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, script []byte) {
		synctest.Test(t, func(t *testing.T) { runFeatures(t, script) })
	})
}

// featureSeeds each reach one of issue 23's defects, or a kind of
// Transport with nothing hostile.
var featureSeeds = [][]byte{
	{0},
	{1},
	{2},
	{0, 0, 0, 0, 0},
	{1, 0, 1, 6, 2}, // an Anthropic body billing a billion output tokens; a permit settling 1e15
	{0, 0, 2, 7, 2}, // an OpenAI stream billing MaxInt64
	{1, 0, 3, 1, 0}, // text/html bodies on a money budget
	{1, 0, 4, 1, 0}, // gzip-encoded bodies
	{2, 0, 0, 0, 3}, // MaxWaiting through 0 while calls wait
	{2, 0, 0, 0, 4}, // SetLimit through 0 and back
	{2, 0, 0, 5, 5}, // tenant weights from 1e-300 to Inf
	{0, 1, 1, 1, 6}, // 429s with Retry-After while permits are rejected
	{2, 0, 5, 3, 7}, // invalid live changes: NaN and Inf in a Workload
	{1, 2, 1, 6, 1, 0, 0, 7, 2, 1, 3, 4, 3, 0, 2, 6, 4}, // mixed
}

const (
	featureMaxWait  = 5 * time.Second
	featureDeadline = 3 * time.Second
)

func runFeatures(t *testing.T, script []byte) {
	kind := byte(0)
	if len(script) > 0 {
		kind, script = script[0]%3, script[1:]
	}
	api := &featureAPI{script: script, kind: kind}
	opts := []pacer.Option{
		pacer.WithMaxWait(featureMaxWait),
		pacer.WithLogger(slog.New(slog.DiscardHandler)),
		pacer.WithWorkload("interactive", pacer.Workload{Reserve: 0.3}),
		pacer.WithWorkload("batch", pacer.Workload{MaxWaiting: 2, Budget: pacer.Budget{Limit: 40, Per: time.Hour}}),
		pacer.WithWorkload("free", pacer.Workload{}),
	}
	unit := "tokens"
	switch kind {
	case 0:
		opts = append(opts, openai.Preset(openai.Tier1),
			pacer.WithWorkload("money", pacer.Workload{Budget: pacer.Budget{Spend: prices.Dollars(1), Per: time.Hour}}))
	case 1:
		opts = append(opts, anthropic.Preset(anthropic.Start),
			pacer.WithWorkload("money", pacer.Workload{Budget: pacer.Budget{Spend: prices.Dollars(1), Per: time.Hour}}))
		unit = anthropic.UnitOutputTokens
	default:
		opts = append(opts,
			pacer.WithScope(pacer.Scope{Name: "tokens", Unit: "tokens", Limit: pacer.PerMinute(6000), Concurrency: 4}),
			pacer.WithRoute(func(req *http.Request, charges []pacer.Charge) []pacer.Charge {
				return append(charges, pacer.Charge{Scope: "tokens", Cost: 50})
			}),
			pacer.WithMeter(carelessMeter()),
			pacer.WithWorkload("money", pacer.Workload{Budget: pacer.Budget{Limit: 5000, Unit: "tokens", Per: time.Hour}}))
	}
	tr := pacer.New(api, opts...)
	if err := tr.Err(); err != nil {
		t.Fatalf("the Transport's configuration: %v", err)
	}

	var wg sync.WaitGroup
	workloads := []string{"interactive", "batch", "money", "free"}
	for g := range 4 {
		wg.Go(func() {
			for i := range 8 {
				featureHTTPCall(t, tr, api, workloads[(g+i)%len(workloads)], g*8+i)
			}
		})
	}
	acts := &featureActions{t: t, tr: tr, script: script, unit: unit}
	wg.Go(acts.permits)
	wg.Go(acts.control)
	wg.Wait()

	st := tr.Stats()
	for _, s := range st.Scopes {
		if s.InFlight != 0 || s.Waiting != 0 {
			t.Fatalf("after every call ended, scope %q has %d in flight and %d waiting", s.Name, s.InFlight, s.Waiting)
		}
	}
	for _, w := range st.Workloads {
		if w.Reserved != 0 {
			t.Fatalf("after every call ended, workload %q still reserves %v of its budget: %+v", w.Name, w.Reserved, w)
		}
	}

	// Health: no count the script reported may keep a scope from sending
	// beyond MaxWait and a call's own interval at the scope's pace now (a
	// day's scope cut by a refusal sends one call in tens of seconds). The
	// interactive workload, whose reserve no other holds back, must get
	// through within that; the free one may also wait for interactive's
	// reserve to refill, which takes at most another MaxWait.
	api.healthy.Store(true)
	var interval time.Duration
	for _, s := range st.Scopes {
		if s.Rate > 0 {
			interval = max(interval, time.Duration(float64(time.Second)/s.Rate))
		}
	}
	for _, h := range []struct {
		workload string
		within   time.Duration
	}{{"interactive", featureMaxWait + interval + time.Second}, {"free", 2*featureMaxWait + interval + time.Second}} {
		for _, path := range []string{"/v1/chat/completions", "/v1/messages"} {
			start := time.Now()
			ctx, cancel := context.WithTimeout(pacer.ContextWithWorkload(context.Background(), h.workload), h.within)
			resp, err := tr.RoundTrip(api.request(ctx, path, 1))
			var te *pacer.ThrottledError
			if errors.As(err, &te) && !te.Reset.IsZero() && te.RetryAfter <= featureMaxWait {
				// A pause the script claimed beyond MaxWait is said at
				// once, with when the scope probes again: the caller waits
				// that out, within the same bound.
				time.Sleep(te.RetryAfter)
				resp, err = tr.RoundTrip(api.request(ctx, path, 1))
			}
			if err != nil {
				t.Fatalf("a healthy %s call on %s, after %v: %v; scopes %+v", h.workload, path, time.Since(start), err, tr.Stats().Scopes)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			cancel()
		}
	}
}

// featureHTTPCall sends one request of workload w, with a tenant whose
// weight comes from the script, and checks it returns in time.
func featureHTTPCall(t *testing.T, tr *pacer.Transport, api *featureAPI, w string, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), featureDeadline)
	defer cancel()
	due := time.Now().Add(featureDeadline)
	ctx = pacer.ContextWithWorkload(ctx, w)
	ctx = pacer.ContextWithCall(ctx, pacer.Call{Tenant: "t" + strconv.Itoa(n%3), Weight: hostileWeights[api.at(n)%byte(len(hostileWeights))]})
	path := "/v1/chat/completions"
	if api.kind == 1 {
		path = "/v1/messages"
	}
	resp, err := tr.RoundTrip(api.request(ctx, path, n))
	if err == nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, int64(n%3)*100)) // some read to the end, some close early
		resp.Body.Close()
	}
	if late := time.Since(due); late > 50*time.Millisecond {
		t.Fatalf("a %s call returned %v after its deadline (err %v)", w, late, err)
	}
}

// hostileWeights are tenant weights, from the plausible to the absurd.
var hostileWeights = []float64{1, 1e-300, 0, -1, math.NaN(), math.Inf(1), 1e300, 0.001, 1000}

// hostileCounts are usage counts a body or a caller reports.
var hostileCounts = []int64{0, 10, 100000, -5, 1e9, 1e12, 1e15, math.MaxInt64}

// featureActions drives the permit and control goroutines from the script.
type featureActions struct {
	t      *testing.T
	tr     *pacer.Transport
	script []byte
	unit   string
}

func (a *featureActions) op(i int) (op, arg byte) {
	b := scriptStep(a.script, i)
	return b[3], b[2]
}

// scriptStep is the i-th group of four bytes of script, taken in a loop
// (zeros past its end, and for an empty script).
func scriptStep(script []byte, i int) [4]byte {
	var b [4]byte
	if len(script) > 0 {
		copy(b[:], script[4*(i%((len(script)+3)/4)):])
	}
	return b
}

// permits acquires, tries and reserves permits, and ends each with an
// outcome from the script: accepted and settled at a hostile count,
// rejected with or without a pause, or dropped.
func (a *featureActions) permits() {
	for i := range 8 {
		op, arg := a.op(i)
		ctx, cancel := context.WithTimeout(pacer.ContextWithWorkload(context.Background(), []string{"free", "batch", "money"}[i%3]), featureDeadline)
		due := time.Now().Add(featureDeadline)
		var p *pacer.Permit
		var err error
		switch i % 3 {
		case 0:
			p, err = a.tr.Acquire(ctx, pacer.Charge{Scope: pacer.DefaultScope})
		case 1:
			p, err = a.tr.TryAcquire(ctx)
		default:
			var r *pacer.Reservation
			if r, err = a.tr.Reserve(ctx); err == nil {
				if op%5 == 0 {
					r.Cancel()
				} else {
					p, err = r.Wait(ctx)
				}
			}
		}
		if late := time.Since(due); late > 50*time.Millisecond {
			a.t.Fatalf("a permit returned %v after its deadline (err %v)", late, err)
		}
		if err == nil && p != nil {
			n := hostileCounts[arg%byte(len(hostileCounts))]
			switch op % 4 {
			case 0:
				p.Settle(a.unit, n).Accept()
			case 1:
				p.Reject(time.Duration(n) * time.Millisecond)
			case 2:
				p.Reject(0)
			default:
				p.Drop()
			}
		}
		cancel()
		time.Sleep(300 * time.Millisecond)
	}
}

// control changes workloads and limits while calls wait: MaxWaiting
// through 0 and back, a scope's limit through 0 and back, and changes that
// must be refused (NaN, Inf).
func (a *featureActions) control() {
	for i := range 8 {
		op, arg := a.op(i + 3)
		var err error
		switch op % 8 {
		case 3:
			err = a.tr.SetWorkload("batch", pacer.Workload{MaxWaiting: (i + int(arg)) % 3, Budget: pacer.Budget{Limit: 40, Per: time.Hour}})
		case 4:
			// The zero Limit paces nothing: a limit through 0 and back.
			err = a.tr.SetLimit(pacer.DefaultScope, []pacer.Limit{{}, pacer.PerSecond(5), pacer.PerSecond(50)}[(i+int(arg))%3])
		case 7:
			bad := []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[arg%3]
			if err := a.tr.SetWorkload("interactive", pacer.Workload{Reserve: bad}); err == nil {
				a.t.Fatalf("SetWorkload accepted Reserve %v", bad)
			}
			if err := a.tr.SetWorkload("interactive", pacer.Workload{Max: bad}); err == nil {
				a.t.Fatalf("SetWorkload accepted Max %v", bad)
			}
		}
		if err != nil {
			a.t.Fatalf("a valid live change was refused: %v", err)
		}
		time.Sleep(400 * time.Millisecond)
	}
}

// carelessMeter is a Meter written as a user might: its Estimate reads the
// request without checking it, as both presets did; a Transport must never
// hand it nil.
func carelessMeter() pacer.Meter {
	return pacer.Meter{
		Estimate: func(req *http.Request) (pacer.CallEstimate, bool) {
			if req.Method != http.MethodPost {
				return pacer.CallEstimate{}, false
			}
			return pacer.CallEstimate{Model: "m", Usage: usage.Usage{Input: 20, Output: 30}}, true
		},
		Usage: usage.OpenAI,
		Tokens: func(unit string, u usage.Usage) (int64, bool) {
			return u.Total(), unit == "tokens"
		},
	}
}

// featureAPI answers each request with the next step of its script, or a
// plain 200 with a small usage once healthy.
type featureAPI struct {
	script  []byte
	kind    byte
	next    atomic.Int64
	healthy atomic.Bool
}

func (a *featureAPI) at(n int) byte {
	if len(a.script) == 0 {
		return 0
	}
	return a.script[n%len(a.script)]
}

func (a *featureAPI) request(ctx context.Context, path string, n int) *http.Request {
	body := `{"model":"gpt-4o-mini","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`
	if a.kind == 1 || path == "/v1/messages" {
		body = `{"model":"claude-sonnet-4-5","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://api.test"+path, strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if n%2 == 0 {
		req.Header.Set("Idempotency-Key", "k"+strconv.Itoa(n))
	}
	return req
}

func (a *featureAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	anth := strings.HasSuffix(req.URL.Path, "/messages")
	if a.healthy.Load() || len(a.script) == 0 {
		return usageResponse(req, anth, 0, 10), nil
	}
	b := scriptStep(a.script, int(a.next.Add(1)-1))
	if b[0]%4 == 1 {
		h := http.Header{"Retry-After": {strconv.Itoa(int(b[2] % 3))}}
		return &http.Response{StatusCode: http.StatusTooManyRequests, Header: h, Body: io.NopCloser(strings.NewReader(`{}`)), Request: req}, nil
	}
	return usageResponse(req, anth, b[1], hostileCounts[b[2]%byte(len(hostileCounts))]), nil
}

// usageResponse is a 200 whose body reports output tokens in one of
// several shapes: JSON, SSE, text/html, no Content-Type, gzip-encoded
// bytes, or a body that ends in an error.
func usageResponse(req *http.Request, anthropicBody bool, shape byte, output int64) *http.Response {
	h := http.Header{}
	var body string
	sse := shape%6 == 2
	switch {
	case anthropicBody && sse:
		body = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":20,\"output_tokens\":1}}}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":" + strconv.FormatInt(output, 10) + "}}\n\n"
	case anthropicBody:
		body = `{"type":"message","model":"claude-sonnet-4-5","usage":{"input_tokens":20,"output_tokens":` + strconv.FormatInt(output, 10) + `}}`
	case sse:
		body = `data: {"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":` + strconv.FormatInt(output, 10) + "}}\n\ndata: [DONE]\n\n"
	default:
		body = `{"model":"gpt-4o-mini","usage":{"prompt_tokens":20,"completion_tokens":` + strconv.FormatInt(output, 10) + `}}`
	}
	var rc io.ReadCloser = io.NopCloser(strings.NewReader(body))
	switch shape % 6 {
	case 0:
		h.Set("Content-Type", "application/json")
	case 2:
		h.Set("Content-Type", "text/event-stream")
	case 3:
		h.Set("Content-Type", "text/html")
	case 4:
		h.Set("Content-Type", "application/json")
		h.Set("Content-Encoding", "gzip")
		rc = io.NopCloser(strings.NewReader("\x1f\x8b\x08\x00garbage"))
	case 5:
		h.Set("Content-Type", "application/json")
		rc = io.NopCloser(io.MultiReader(strings.NewReader(body[:len(body)/2]), errReaderF{fmt.Errorf("connection reset by peer")}))
	}
	return &http.Response{StatusCode: http.StatusOK, Header: h, Body: rc, Request: req}
}

type errReaderF struct{ err error }

func (r errReaderF) Read([]byte) (int, error) { return 0, r.err }
