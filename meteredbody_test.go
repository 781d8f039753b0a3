package pacer_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/internal/fakeclock"
	"github.com/pacer-go/pacer/providers/anthropic"
	"github.com/pacer-go/pacer/usage"
	"github.com/pacer-go/pacer/usage/prices"
)

// cannedLLM answers every call with the same status, headers and body.
type cannedLLM struct {
	status  int
	header  http.Header
	body    []byte
	noBody  bool // the body is http.NoBody
	nilBody bool
	readErr error // the body fails with it after its bytes
	err     error // RoundTrip fails with it, once the request was sent
}

func (f *cannedLLM) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	if f.err != nil {
		return nil, f.err
	}
	resp := &http.Response{StatusCode: f.status, Header: f.header.Clone(), Request: req}
	switch {
	case f.nilBody:
	case f.noBody:
		resp.Body = http.NoBody
	case f.readErr != nil:
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(f.body), iotestErr{f.readErr}))
	default:
		resp.Body = io.NopCloser(bytes.NewReader(f.body))
	}
	return resp, nil
}

type iotestErr struct{ err error }

func (r iotestErr) Read([]byte) (int, error) { return 0, r.err }

const anthropicModel = "claude-sonnet-5"

func anthropicCall(ctx context.Context, method string) *http.Request {
	req, _ := http.NewRequestWithContext(ctx, method, "https://api.anthropic.com/v1/messages",
		strings.NewReader(`{"model":"`+anthropicModel+`","max_tokens":1000,"messages":[{"role":"user","content":"Hello there"}]}`))
	return req
}

func anthropicJSON(output int64) string {
	return `{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Hi"}],` +
		`"usage":{"input_tokens":12,"output_tokens":` + strconv.FormatInt(output, 10) + `}}`
}

func gzipped(s string) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write([]byte(s))
	w.Close()
	return buf.Bytes()
}

// Every body of a metered call settles exactly once, whatever becomes of
// it: Stats then show nothing reserved once nothing is in flight, and what
// each call cost spent. One that pacer cannot read (compressed, an unknown
// media type, none at all, cut short) settles at its estimate.
func TestEveryMeteredBodySettles(t *testing.T) {
	jsonHdr := http.Header{"Content-Type": {"application/json"}}
	body := []byte(anthropicJSON(20))
	for _, tc := range []struct {
		name   string
		method string
		llm    cannedLLM
		read   func(io.Reader) // how the caller reads the body before closing it
		usage  bool            // settles on the usage, not the estimate
	}{
		{name: "json read to its end", llm: cannedLLM{status: 200, header: jsonHdr, body: body}, usage: true},
		{name: "json closed early", llm: cannedLLM{status: 200, header: jsonHdr, body: body},
			read: func(r io.Reader) { r.Read(make([]byte, 10)) }},
		{name: "json read to EOF, never closed", llm: cannedLLM{status: 200, header: jsonHdr, body: body}, usage: true},
		{name: "gzip-encoded", llm: cannedLLM{status: 200, body: gzipped(string(body)),
			header: http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"gzip"}}}},
		{name: "text/html", llm: cannedLLM{status: 200, body: []byte("<html>proxy</html>"),
			header: http.Header{"Content-Type": {"text/html"}}}},
		{name: "no Content-Type", llm: cannedLLM{status: 200, body: body, header: http.Header{}}},
		{name: "malformed JSON", llm: cannedLLM{status: 200, header: jsonHdr, body: []byte(`{"usage":{"output_tokens":2`)}},
		{name: "read error", llm: cannedLLM{status: 200, header: jsonHdr, body: body[:30], readErr: errors.New("connection reset")}},
		{name: "nil body", llm: cannedLLM{status: 200, header: jsonHdr, nilBody: true}},
		{name: "http.NoBody", llm: cannedLLM{status: 200, header: jsonHdr, noBody: true}},
		{name: "204", llm: cannedLLM{status: 204, header: http.Header{}, noBody: true}},
		{name: "connection reset once sent", llm: cannedLLM{err: syscall.ECONNRESET}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := fakeclock.New(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
			tr := pacer.New(&tc.llm, anthropic.Preset(anthropic.Start), clock.With[pacer.Option](virtualClock{clk}),
				pacer.WithWorkload("w", pacer.Workload{Budget: pacer.Budget{Spend: prices.Dollars(100), Per: 24 * time.Hour}}))
			if err := tr.Err(); err != nil {
				t.Fatal(err)
			}
			ctx := pacer.ContextWithWorkload(context.Background(), "w")
			const calls = 3
			var first float64 // what the first call spent
			for i := range calls {
				resp, err := tr.RoundTrip(anthropicCall(ctx, http.MethodPost))
				if tc.llm.err != nil {
					if !errors.Is(err, tc.llm.err) {
						t.Fatalf("err = %v, want %v", err, tc.llm.err)
					}
					if i == 0 {
						first = workloadStats(t, tr, "w").Spent
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if resp.Body != nil {
					if tc.read != nil {
						tc.read(resp.Body)
					} else {
						io.Copy(io.Discard, resp.Body)
					}
					if tc.name != "json read to EOF, never closed" {
						resp.Body.Close()
						resp.Body.Close() // a second Close settles nothing more
					}
				}
				if i == 0 {
					first = workloadStats(t, tr, "w").Spent
				}
			}
			w := workloadStats(t, tr, "w")
			if w.Reserved != 0 {
				t.Errorf("Reserved = %v with nothing in flight, want 0 (Spent %v)", w.Reserved, w.Spent)
			}
			// At the price of claude-sonnet-5 ($2 in, $10 out per million):
			// the usage's 12 in and 20 out, or the estimate's worst case, its
			// max_tokens of output.
			perCall := (12*2 + 20*10) / 1e6
			switch {
			case tc.usage && !near(w.Spent, calls*perCall):
				t.Errorf("Spent = %v, want %v: each call at its usage", w.Spent, calls*perCall)
			case !tc.usage && (first < 1000*10/1e6 || !near(w.Spent, calls*first)):
				t.Errorf("Spent = %v, the first call %v; want each call once at its estimate, at least %v", w.Spent, first, 1000*10/1e6)
			}
		})
	}
}

// A Meter may meter a HEAD, which has no body to read: it settles at its
// estimate.
func TestMeteredHeadSettles(t *testing.T) {
	llm := &cannedLLM{status: 200, header: http.Header{"Content-Type": {"application/json"}}, noBody: true}
	m := pacer.Meter{
		Estimate: func(req *http.Request) (pacer.CallEstimate, bool) {
			return pacer.CallEstimate{Model: "m", Usage: usage.Usage{Input: 10, Output: 10}}, true
		},
		Usage:  usage.Anthropic,
		Prices: prices.Table{"m": {Input: prices.Dollars(1), Output: prices.Dollars(1), Source: "https://example.test/prices", Read: "2026-12-01"}},
	}
	tr := pacer.New(llm, pacer.WithMeter(m),
		pacer.WithWorkload("w", pacer.Workload{Budget: pacer.Budget{Spend: prices.Dollars(100), Per: 24 * time.Hour}}))
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := pacer.ContextWithWorkload(context.Background(), "w")
	for _, closeIt := range []bool{true, false} {
		resp, err := tr.RoundTrip(anthropicCall(ctx, http.MethodHead))
		if err != nil {
			t.Fatal(err)
		}
		if closeIt {
			resp.Body.Close()
		}
	}
	if w := workloadStats(t, tr, "w"); w.Reserved != 0 || !near(w.Spent, 2*20/1e6) {
		t.Errorf("Spent %v, Reserved %v; want %v and 0", w.Spent, w.Reserved, 2*20/1e6)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func workloadStats(t *testing.T, tr *pacer.Transport, name string) pacer.WorkloadStats {
	t.Helper()
	for _, w := range tr.Stats().Workloads {
		if w.Name == name {
			return w
		}
	}
	t.Fatalf("no workload %q in Stats", name)
	return pacer.WorkloadStats{}
}
