package pacer_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/internal/fakeclock"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/providers/anthropic"
	"github.com/pacer-go/pacer/providers/openai"
	"github.com/pacer-go/pacer/usage"
	"github.com/pacer-go/pacer/usage/prices"
)

// hostile is a provider whose 200s report an absurd usage.
type hostileProvider struct {
	name   string
	preset pacer.Option
	// request builds a call; body the answer reporting n tokens in and out.
	request func(ctx context.Context, stream bool) *http.Request
	body    func(stream bool, in, out int64) string
	model   string
}

func n(v int64) string { return strconv.FormatInt(v, 10) }

var hostileProviders = []hostileProvider{
	{
		name:   "anthropic",
		preset: anthropic.Preset(anthropic.Start),
		model:  "claude-sonnet-5",
		request: func(ctx context.Context, stream bool) *http.Request {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.anthropic.com/v1/messages?key=sk-secret-query",
				strings.NewReader(`{"model":"claude-sonnet-5","max_tokens":1000,"stream":`+strconv.FormatBool(stream)+`,"messages":[{"role":"user","content":"Hello"}]}`))
			req.Header.Set("X-Api-Key", "sk-secret-header")
			return req
		},
		body: func(stream bool, in, out int64) string {
			if !stream {
				return `{"id":"msg_1","type":"message","content":[],"usage":{"input_tokens":` + n(in) + `,"output_tokens":` + n(out) + `}}`
			}
			return "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":" + n(in) + ",\"output_tokens\":1}}}\n\n" +
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":" + n(out) + "}}\n\n" +
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
		},
	},
	{
		name:   "openai",
		preset: openai.Preset(openai.Tier1),
		model:  "gpt-5.4",
		request: func(ctx context.Context, stream bool) *http.Request {
			s := ""
			if stream {
				s = `"stream":true,"stream_options":{"include_usage":true},`
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://api.openai.com/v1/chat/completions?key=sk-secret-query",
				strings.NewReader(`{"model":"gpt-5.4",`+s+`"max_completion_tokens":1000,"messages":[{"role":"user","content":"Hello"}]}`))
			req.Header.Set("Authorization", "Bearer sk-secret-header")
			return req
		},
		body: func(stream bool, in, out int64) string {
			u := `"usage":{"prompt_tokens":` + n(in) + `,"completion_tokens":` + n(out) + `,"total_tokens":` + n(in+out) + `}`
			if !stream {
				return `{"id":"c","object":"chat.completion","choices":[],` + u + `}`
			}
			return `data: {"id":"c","object":"chat.completion.chunk","choices":[{"delta":{"content":"hi"}}],"usage":null}` + "\n\n" +
				`data: {"id":"c","object":"chat.completion.chunk","choices":[],` + u + "}\n\ndata: [DONE]\n\n"
		},
	},
}

// hostileLLM answers each call with the next of its bodies.
type hostileLLM struct {
	stream bool
	bodies []string
}

func (f *hostileLLM) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	ct := "application/json"
	if f.stream {
		ct = "text/event-stream"
	}
	body := f.bodies[0]
	if len(f.bodies) > 1 {
		f.bodies = f.bodies[1:]
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {ct}}, Request: req,
		Body: io.NopCloser(strings.NewReader(body))}, nil
}

// One 200 that reports a billion output tokens — or input tokens — is
// charged to the budget in full, since the provider may have billed it; it
// keeps no scope from sending beyond MaxWait, whatever its size; and it is
// an event and a log line naming the call, never its credentials.
func TestAbsurdUsageIsAnEventNeverALock(t *testing.T) {
	const maxWait = time.Minute
	for _, p := range hostileProviders {
		for _, stream := range []bool{false, true} {
			for _, absurd := range []struct {
				name    string
				in, out int64
			}{{"output", 12, 1_000_000_000}, {"input", 1_000_000_000_000, 20}} {
				t.Run(p.name+"/stream="+strconv.FormatBool(stream)+"/"+absurd.name, func(t *testing.T) {
					clk := fakeclock.New(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
					llm := &hostileLLM{stream: stream, bodies: []string{p.body(stream, absurd.in, absurd.out), p.body(stream, 12, 20)}}
					rec := &events{}
					var log bytes.Buffer
					tr := pacer.New(llm, p.preset, clock.With[pacer.Option](virtualClock{clk}), pacer.WithMaxWait(maxWait),
						pacer.WithObserver(rec), pacer.WithLogger(slog.New(slog.NewTextHandler(&log, nil))),
						pacer.WithWorkload("w", pacer.Workload{Budget: pacer.Budget{Spend: prices.Dollars(10_000_000), Per: 24 * time.Hour}}))
					if err := tr.Err(); err != nil {
						t.Fatal(err)
					}
					ctx := pacer.ContextWithWorkload(context.Background(), "w")
					call := func(ctx context.Context) error {
						resp, err := tr.RoundTrip(p.request(ctx, stream))
						if err != nil {
							return err
						}
						io.Copy(io.Discard, resp.Body)
						return resp.Body.Close()
					}
					if err := call(ctx); err != nil {
						t.Fatal(err)
					}

					// The budget: charged in full, at the model's list price
					// (at least $1 a million tokens of either kind).
					if w := workloadStats(t, tr, "w"); w.Spent < float64(max(absurd.in, absurd.out))/1e6 || w.Reserved != 0 {
						t.Errorf("budget Spent %v, Reserved %v: want the usage charged in full", w.Spent, w.Reserved)
					}
					// No lock: the next call goes within MaxWait, plus what
					// its own charge takes to refill.
					err := call(pacer.ContextWithCall(ctx, pacer.Call{FailFast: true}))
					var te *pacer.ThrottledError
					if errors.As(err, &te) {
						if te.RetryAfter > maxWait+time.Second {
							t.Fatalf("after the absurd count, scope %q says retry after %v, want at most MaxWait (%v)", te.Scope, te.RetryAfter, maxWait)
						}
						clk.Advance(te.RetryAfter)
						err = call(pacer.ContextWithCall(ctx, pacer.Call{FailFast: true}))
					}
					if err != nil {
						t.Fatalf("a call after the absurd count's wait: %v", err)
					}
					// An event and a log line, naming the call.
					got := rec.of(observe.EventImplausibleUsage)
					if len(got) != 1 || got[0].Workload != "w" || got[0].Err == nil {
						t.Fatalf("heard %+v, want one EventImplausibleUsage of workload w", got)
					}
					msg := got[0].Err.Error()
					for _, want := range []string{"POST", strings.TrimPrefix(p.request(ctx, stream).URL.Host, ""), p.request(ctx, stream).URL.Path, p.model} {
						if !strings.Contains(msg, want) || !strings.Contains(log.String(), want) {
							t.Errorf("the event (%s) and the log (%s) should name %q", msg, log.String(), want)
						}
					}
					if strings.Contains(msg+log.String(), "secret") {
						t.Errorf("a credential reached the event or the log: %s %s", msg, log.String())
					}
					if observe.EventImplausibleUsage.String() != "implausible_usage" {
						t.Errorf("EventImplausibleUsage is named %q", observe.EventImplausibleUsage)
					}
				})
			}
		}
	}
}

// A plausible usage, however far above the estimate, is no event.
func TestPlausibleUsageIsNoEvent(t *testing.T) {
	for _, p := range hostileProviders {
		llm := &hostileLLM{bodies: []string{p.body(false, 50_000, 900)}}
		rec := &events{}
		tr := pacer.New(llm, p.preset, pacer.WithObserver(rec))
		resp, err := tr.RoundTrip(p.request(context.Background(), false))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := rec.of(observe.EventImplausibleUsage); len(got) != 0 {
			t.Errorf("%s: heard %+v for a plausible usage", p.name, got)
		}
	}
}

// hookedLLM answers like hostileLLM, with rate-limit headers, and runs
// before each answer a hook that may finish another call meanwhile.
type hookedLLM struct {
	hostileLLM
	header http.Header
	before func()
}

func (f *hookedLLM) RoundTrip(req *http.Request) (*http.Response, error) {
	if f.before != nil {
		f.before()
	}
	resp, err := f.hostileLLM.RoundTrip(req)
	for k, v := range f.header {
		resp.Header[k] = v
	}
	return resp, err
}

// An absurd count that settles while another call is in flight does not
// reach the bucket through that call's remaining count either: what the
// scope spent since that call was admitted counts the absurd count only
// as far as the bucket was charged.
func TestAbsurdUsageDoesNotLockThroughARemainingCount(t *testing.T) {
	const maxWait = time.Minute
	p := hostileProviders[0]
	clk := fakeclock.New(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	llm := &hookedLLM{hostileLLM: hostileLLM{bodies: []string{p.body(false, 12, 1_000_000_000), p.body(false, 12, 20)}}}
	tr := pacer.New(llm, p.preset, clock.With[pacer.Option](virtualClock{clk}), pacer.WithMaxWait(maxWait))
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first, err := tr.RoundTrip(p.request(ctx, false))
	if err != nil {
		t.Fatal(err)
	}
	// The second call is admitted; before it is answered, the first one's
	// body reports its billion output tokens. The second's answer then says
	// what remains of the output tokens, as Anthropic's do.
	llm.before = func() {
		io.Copy(io.Discard, first.Body)
		first.Body.Close()
	}
	llm.header = http.Header{
		"Anthropic-Ratelimit-Output-Tokens-Limit":     {"400000"},
		"Anthropic-Ratelimit-Output-Tokens-Remaining": {"399000"},
		"Anthropic-Ratelimit-Output-Tokens-Reset":     {clk.Now().Add(time.Second).Format(time.RFC3339)},
	}
	resp, err := tr.RoundTrip(p.request(ctx, false))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	llm.before, llm.header = nil, nil

	resp, err = tr.RoundTrip(p.request(pacer.ContextWithCall(ctx, pacer.Call{FailFast: true}), false))
	var te *pacer.ThrottledError
	if errors.As(err, &te) {
		if te.RetryAfter > maxWait+time.Second {
			t.Fatalf("scope %q says retry after %v, want at most MaxWait (%v)", te.Scope, te.RetryAfter, maxWait)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// FuzzMeteredBody answers an Anthropic-preset or OpenAI-preset call with a
// usage count, a body shape, a media type, an encoding and a cut point of
// the fuzzer's choosing, and checks that whatever the body says: nothing
// panics, the call settles once (nothing stays reserved once the body is
// closed), and the next call is admitted within MaxWait plus its own
// charge's refill.
func FuzzMeteredBody(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint64(1_000_000_000), uint64(12), uint16(0))
	f.Add(uint8(1), uint8(1), uint64(1<<62), uint64(1<<62), uint16(40))
	f.Add(uint8(2), uint8(2), uint64(20), uint64(1e15), uint16(0))
	f.Add(uint8(3), uint8(3), uint64(0), uint64(0), uint16(7))
	f.Fuzz(func(t *testing.T, which, shape uint8, out, in uint64, cut uint16) {
		const maxWait = time.Minute
		p := hostileProviders[int(which)%len(hostileProviders)]
		stream := shape&1 != 0
		body := p.body(stream, int64(in>>1), int64(out>>1))
		if c := int(cut); c > 0 && c < len(body) {
			body = body[:len(body)-c] // a body cut short
		}
		llm := &hostileLLM{stream: stream, bodies: []string{body, p.body(stream, 12, 20)}}
		clk := fakeclock.New(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
		tr := pacer.New(&fuzzHeaders{llm, shape}, p.preset, clock.With[pacer.Option](virtualClock{clk}), pacer.WithMaxWait(maxWait),
			pacer.WithLogger(slog.New(slog.DiscardHandler)),
			pacer.WithWorkload("w", pacer.Workload{Budget: pacer.Budget{Spend: prices.Dollars(1 << 30), Per: 24 * time.Hour}}))
		if err := tr.Err(); err != nil {
			t.Fatal(err)
		}
		ctx := pacer.ContextWithWorkload(context.Background(), "w")
		resp, err := tr.RoundTrip(p.request(ctx, stream))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if w := workloadStats(t, tr, "w"); w.Reserved != 0 {
			t.Fatalf("Reserved %v with nothing in flight", w.Reserved)
		}
		_, err = tr.RoundTrip(p.request(pacer.ContextWithCall(ctx, pacer.Call{FailFast: true}), stream))
		var te *pacer.ThrottledError
		if errors.As(err, &te) && te.RetryAfter > maxWait+time.Second {
			t.Fatalf("scope %q says retry after %v, want at most MaxWait (%v)", te.Scope, te.RetryAfter, maxWait)
		}
	})
}

// fuzzHeaders changes the answer's media type and encoding by shape.
type fuzzHeaders struct {
	*hostileLLM
	shape uint8
}

func (f *fuzzHeaders) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := f.hostileLLM.RoundTrip(req)
	switch f.shape >> 1 % 5 {
	case 1:
		resp.Header.Set("Content-Encoding", "gzip")
	case 2:
		resp.Header.Set("Content-Type", "text/html")
	case 3:
		resp.Header.Del("Content-Type")
	case 4:
		resp.Header.Set("Content-Type", "application/json; charset=utf-8")
	}
	return resp, err
}

// A per-day scope's burst takes a day to refill: an absurd count owes at
// most what the scope refills in MaxWait, not one burst.
func TestAbsurdUsageOnAPerDayScope(t *testing.T) {
	const maxWait = time.Minute
	clk := fakeclock.New(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	m := pacer.Meter{
		Estimate: func(req *http.Request) (pacer.CallEstimate, bool) {
			if req == nil || req.Method != http.MethodPost {
				return pacer.CallEstimate{}, false
			}
			return pacer.CallEstimate{Model: "m", Usage: usage.Usage{Input: 10, Output: 100}}, true
		},
		Usage: usage.Anthropic,
		Tokens: func(unit string, u usage.Usage) (int64, bool) {
			return u.Total(), unit == "tokens"
		},
	}
	llm := &hostileLLM{bodies: []string{hostileProviders[0].body(false, 10, 1_000_000_000), hostileProviders[0].body(false, 10, 100)}}
	tr := pacer.New(llm, pacer.WithMeter(m), clock.With[pacer.Option](virtualClock{clk}), pacer.WithMaxWait(maxWait),
		pacer.WithLogger(slog.New(slog.DiscardHandler)),
		pacer.WithScope(pacer.Scope{Name: "tokens", Unit: "tokens", Limit: pacer.Limit{Count: 1_000_000, Per: 24 * time.Hour}}),
		pacer.WithRoute(func(req *http.Request, charges []pacer.Charge) []pacer.Charge {
			return append(charges, pacer.Charge{Scope: "tokens", Cost: 110})
		}))
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	call := func(ctx context.Context) error {
		resp, err := tr.RoundTrip(hostileProviders[0].request(ctx, false))
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	// The first call takes the whole burst (a tenth of the day's count),
	// then reports a billion tokens.
	if err := call(pacer.ContextWithCost(context.Background(), "tokens", 100_000)); err != nil {
		t.Fatal(err)
	}
	err := call(pacer.ContextWithCall(context.Background(), pacer.Call{FailFast: true}))
	var te *pacer.ThrottledError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want the scope to owe", err)
	}
	// The debt refills in MaxWait; then the call's own 110 tokens, at the
	// scope's pace (0.9 of a million a day).
	own := time.Duration(110 / (0.9 * 1e6 / 86400) * float64(time.Second))
	if te.RetryAfter > maxWait+own+time.Millisecond {
		t.Fatalf("scope %q says retry after %v, want at most MaxWait (%v) and its own charge's %v", te.Scope, te.RetryAfter, maxWait, own)
	}
}
