package pacer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/pool"
)

// poolAPI is a provider that limits each credential (its Authorization
// header) on a window of its own, and all of them together on an optional
// shared one, as an OpenAI project does its keys. A credential may be made
// to answer 401 from a moment on, or 402 until a moment.
type poolAPI struct {
	keys   map[string]*windowAPI // by credential
	shared *windowAPI            // nil: no limit above the keys

	mu        sync.Mutex
	revokedAt map[string]time.Time // 401 from then on
	spentTill map[string]time.Time // 402 until then
	byKey     map[string][]time.Time
	other     map[string]int // answers other than the window's, by credential
}

func newPoolAPI(limits map[string]int) *poolAPI {
	a := &poolAPI{keys: map[string]*windowAPI{}, revokedAt: map[string]time.Time{}, spentTill: map[string]time.Time{},
		byKey: map[string][]time.Time{}, other: map[string]int{}}
	for cred, n := range limits {
		a.keys[cred] = &windowAPI{limit: n, window: time.Second, sliding: true, retryAfter: true}
	}
	return a
}

func (a *poolAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	cred := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	now := time.Now()
	a.mu.Lock()
	w := a.keys[cred]
	revoked, ok := a.revokedAt[cred]
	revoked401 := ok && !now.Before(revoked)
	spent := now.Before(a.spentTill[cred])
	a.mu.Unlock()
	status := 0
	switch {
	case w == nil || revoked401:
		status = http.StatusUnauthorized
	case spent:
		status = http.StatusPaymentRequired
	}
	if status != 0 {
		a.mu.Lock()
		a.other[cred]++
		a.mu.Unlock()
		h := http.Header{}
		if status == http.StatusPaymentRequired {
			// When the quota returns, as a Retry-After.
			h.Set("Retry-After", strconv.Itoa(int(math.Ceil(a.spentTill[cred].Sub(now).Seconds()))))
		}
		return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(`{"error":"no"}`)), Request: req}, nil
	}
	if a.shared != nil {
		if resp := a.shared.answer(req); resp.StatusCode != http.StatusOK {
			resp.Header.Del("X-RateLimit-Limit") // the project's refusal says only when to come back
			resp.Header.Del("X-RateLimit-Remaining")
			resp.Header.Del("X-RateLimit-Reset")
			return resp, nil
		}
	}
	resp := w.answer(req)
	if resp.StatusCode == http.StatusOK {
		a.mu.Lock()
		a.byKey[cred] = append(a.byKey[cred], now)
		a.mu.Unlock()
	}
	return resp, nil
}

// totals returns what the server accepted and refused for rate between
// from and to, over every key and the shared window.
func (a *poolAPI) totals(from, to time.Time) (accepted, rejected int) {
	for _, w := range a.keys {
		_, r := w.counts("pacer", from, to)
		rejected += r
	}
	if a.shared != nil {
		_, r := a.shared.counts("pacer", from, to)
		rejected += r
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ts := range a.byKey {
		accepted += between(ts, from, to)
	}
	return accepted, rejected
}

func (a *poolAPI) sentTo(cred string, from, to time.Time) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return between(a.byKey[cred], from, to)
}

func bearerMember(name, cred string) pool.Member {
	return pool.Member{Name: name, Apply: pool.Bearer(cred)}
}

// Three keys of different tiers, each learned from its own headers: the
// pool is paced at the sum of their limits.
func TestPoolGetsTheSumOfItsMembersLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		api := newPoolAPI(map[string]int{"sk-aaa": 100, "sk-bbb": 200, "sk-ccc": 300})
		tr := New(api, WithoutRetry(),
			WithScope(Scope{Name: "key", Limit: PerSecond(100), Provisional: true}),
			WithPool(pool.Config{Scopes: []string{"key"}, Members: []pool.Member{
				bearerMember("a", "sk-aaa"), bearerMember("b", "sk-bbb"), bearerMember("c", "sk-ccc")}}))
		if err := tr.Err(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		hammer(tr, 24, start.Add(22*time.Second))
		a, r := api.totals(start.Add(2*time.Second), start.Add(22*time.Second))
		check(t, "from 2 s", a, r, 600*20, 0.97)
		for _, cred := range []string{"sk-aaa", "sk-bbb", "sk-ccc"} {
			t.Logf("%s: %d accepted from 2 s", cred, api.sentTo(cred, start.Add(2*time.Second), start.Add(22*time.Second)))
		}
		st := tr.Stats()
		if len(st.Members) != 3 || st.Members[2].Admitted == 0 {
			t.Errorf("Stats().Members = %+v, want three members that took calls", st.Members)
		}
	})
}

// Three keys of one project: the project's limit holds, not the sum.
func TestPoolSharedQuotaIsNotMultiplied(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		api := newPoolAPI(map[string]int{"sk-aaa": 100, "sk-bbb": 100, "sk-ccc": 100})
		api.shared = &windowAPI{limit: 60, window: time.Second, sliding: true, retryAfter: true}
		tr := New(api, WithoutRetry(), WithHeadroom(0.97),
			WithScope(Scope{Name: "key", Limit: PerSecond(100)}),
			WithScope(Scope{Name: "project", Limit: PerSecond(60)}),
			WithPool(pool.Config{Scopes: []string{"key"}, SharedQuota: []string{"project"}, Members: []pool.Member{
				bearerMember("a", "sk-aaa"), bearerMember("b", "sk-bbb"), bearerMember("c", "sk-ccc")}}))
		start := time.Now()
		hammer(tr, 24, start.Add(22*time.Second))
		a, r := api.totals(start.Add(2*time.Second), start.Add(22*time.Second))
		check(t, "from 2 s", a, r, 60*20, 0.95)
		if float64(a) > 60*20*1.01 {
			t.Errorf("%d accepted in 20 s: more than the project's 60 a second", a)
		}
	})
}

// A key revoked mid-run: within a second every call goes to the others,
// and the member is reported once, in an event, a log line and Stats.
func TestPoolMemberAnswering401IsTakenOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		api := newPoolAPI(map[string]int{"sk-aaa": 50, "sk-bbb": 50})
		start := time.Now()
		api.revokedAt["sk-aaa"] = start.Add(5 * time.Second)
		var outs atomic.Int32
		var logged strings.Builder
		var logMu sync.Mutex
		tr := New(api, WithoutRetry(), WithLogger(newTestLogger(&logged, &logMu)),
			WithObserver(observe.Func(func(e observe.Event) {
				if e.Kind == observe.EventMemberOut && e.Member == "a" {
					outs.Add(1)
				}
			})),
			WithScope(Scope{Name: "key", Limit: PerSecond(50)}),
			WithPool(pool.Config{Scopes: []string{"key"}, Members: []pool.Member{bearerMember("a", "sk-aaa"), bearerMember("b", "sk-bbb")}}))
		var failed atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for time.Now().Before(start.Add(10 * time.Second)) {
					// POST without an Idempotency-Key: a 401 was never
					// processed, so it still goes to the other member.
					req, _ := http.NewRequest(http.MethodPost, "http://api.test/", strings.NewReader("{}"))
					req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("{}")), nil }
					resp, err := tr.RoundTrip(req)
					if err != nil {
						failed.Add(1)
						time.Sleep(time.Millisecond)
						continue
					}
					if resp.StatusCode != http.StatusOK {
						failed.Add(1)
					}
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
		if n := api.sentTo("sk-aaa", start.Add(6*time.Second), start.Add(10*time.Second)); n != 0 {
			t.Errorf("%d calls went to the revoked key a second after its first 401", n)
		}
		api.mu.Lock()
		n401 := api.other["sk-aaa"]
		api.mu.Unlock()
		if n401 == 0 || n401 > 8 {
			t.Errorf("the revoked key answered %d 401s, want between 1 and the 8 callers in flight", n401)
		}
		if failed.Load() != 0 {
			t.Errorf("%d calls failed: every call a 401 refused should have gone to the other member", failed.Load())
		}
		if outs.Load() != 1 {
			t.Errorf("EventMemberOut said %d times, want once", outs.Load())
		}
		logMu.Lock()
		if c := strings.Count(logged.String(), "answered 401"); c != 1 {
			t.Errorf("the log says the 401 %d times, want once:\n%s", c, logged.String())
		}
		logMu.Unlock()
		if st := tr.Stats().Members[0]; st.State != pool.Out || st.Why == "" {
			t.Errorf("Stats().Members[0] = %+v, want out, with why", st)
		}
		if b := api.sentTo("sk-bbb", start.Add(6*time.Second), start.Add(10*time.Second)); b < 4*50*0.85 {
			t.Errorf("the other key took %d calls in 4 s, want about its 50 a second", b)
		}
	})
}

// A key's quota spent: parked until its reset, then used again.
func TestPoolMemberWithSpentQuotaIsParkedUntilItsReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		api := newPoolAPI(map[string]int{"sk-aaa": 20, "sk-bbb": 20})
		start := time.Now()
		var parked, unparked atomic.Int32
		// 10 ms away: the calls in flight when the quota runs out all meet it.
		tr := New(&farWire{next: api, base: 5 * time.Millisecond}, WithoutRetry(),
			WithObserver(observe.Func(func(e observe.Event) {
				switch e.Kind {
				case observe.EventMemberParked:
					parked.Add(1)
				case observe.EventMemberUnparked:
					unparked.Add(1)
				}
			})),
			WithScope(Scope{Name: "key", Limit: Limit{Count: 20, Per: time.Second, Burst: 8}}),
			WithPool(pool.Config{Scopes: []string{"key"}, Members: []pool.Member{bearerMember("a", "sk-aaa"), bearerMember("b", "sk-bbb")}}))
		api.spentTill["sk-aaa"] = start.Add(3 * time.Second)
		hammer(tr, 8, start.Add(2*time.Second))
		if st := tr.Stats().Members[0]; st.State != pool.Parked {
			t.Fatalf("Stats().Members[0] = %+v, want parked", st)
		}
		// The quota returns at 3 s, as the 402's Retry-After said.
		hammer(tr, 4, start.Add(20*time.Second))
		if n := api.sentTo("sk-aaa", start.Add(4*time.Second), start.Add(20*time.Second)); n < 16*20*0.8 {
			t.Errorf("the member took %d calls in the 16 s after its reset, want about its 20 a second", n)
		}
		if n := api.sentTo("sk-aaa", start, start.Add(3*time.Second)); n != 0 {
			t.Errorf("the member took %d calls before its reset", n)
		}
		api.mu.Lock()
		n402 := api.other["sk-aaa"]
		api.mu.Unlock()
		if parked.Load() != 1 || unparked.Load() != 1 || n402 > 8 {
			t.Errorf("parked %d times, unparked %d, %d answers of 402: want once, once, at most one per caller", parked.Load(), unparked.Load(), n402)
		}
	})
}

// When no member can admit a call before its deadline, the call fails at
// once, saying when the first member frees; no call outlives its deadline.
func TestPoolFailsAtOnceWhenNoMemberFreesInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		api := newPoolAPI(map[string]int{"sk-aaa": 100, "sk-bbb": 100})
		tr := New(api, WithoutRetry(),
			WithScope(Scope{Name: "slow", Limit: PerMinute(1)}),
			WithScope(Scope{Name: "fast", Limit: PerMinute(2)}),
			WithPool(pool.Config{Members: []pool.Member{
				{Name: "a", Apply: pool.Bearer("sk-aaa"), Scopes: []string{"slow"}},
				{Name: "b", Apply: pool.Bearer("sk-bbb"), Scopes: []string{"fast"}}}}))
		var overran atomic.Int32
		var throttled *ThrottledError
		for range 6 {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			start := time.Now()
			err := get(tr, ctx, "http://api.test/")
			if time.Since(start) > 5*time.Second {
				overran.Add(1)
			}
			if err != nil && throttled == nil && !errors.As(err, &throttled) {
				t.Fatalf("err = %v, want a *ThrottledError", err)
			}
			cancel()
		}
		if overran.Load() != 0 {
			t.Errorf("%d calls outlived their deadline", overran.Load())
		}
		if throttled == nil {
			t.Fatal("no call was refused: two members of 2 a minute admitted six calls at once")
		}
		// b frees in 60 s / (2 × 0.9), a in twice that.
		if throttled.RetryAfter <= 0 || throttled.RetryAfter > 34*time.Second || !errors.Is(throttled, context.DeadlineExceeded) {
			t.Errorf("the refusal = %v, want one that says the first member frees, within 34 s", throttled)
		}
	})
}

// A 403 is the caller's answer: no rotation, the member stays in.
func TestPoolDoesNotRotateOn403(t *testing.T) {
	var calls atomic.Int32
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		calls.Add(1)
		return &http.Response{StatusCode: http.StatusForbidden, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
	})
	tr := New(base, WithPool(pool.Config{Members: []pool.Member{bearerMember("a", "sk-aaa"), bearerMember("b", "sk-bbb")}}))
	req, _ := http.NewRequest(http.MethodGet, "http://api.test/", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusForbidden || calls.Load() != 1 {
		t.Fatalf("got %v, %v after %d calls; want the 403 after one", resp, err, calls.Load())
	}
	resp.Body.Close()
	if req.Header.Get("Authorization") != "" {
		t.Error("the caller's request was modified")
	}
	for _, m := range tr.Stats().Members {
		if m.State != pool.Ready {
			t.Errorf("member %+v, want ready", m)
		}
	}
}

func TestPoolConfigErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  pool.Config
		want string
	}{
		{"no members", pool.Config{}, "no members"},
		{"no name", pool.Config{Members: []pool.Member{{Apply: pool.Bearer("sk-secret")}}}, "has no Name"},
		{"twice", pool.Config{Members: []pool.Member{bearerMember("a", "sk-secret"), bearerMember("a", "sk-secret")}}, "two members"},
		{"no apply", pool.Config{Members: []pool.Member{{Name: "a"}}}, "has no Apply"},
		{"undeclared", pool.Config{Scopes: []string{"nope"}, Members: []pool.Member{bearerMember("a", "sk-secret")}}, "not declared"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := New(nil, WithPool(tt.cfg)).Err()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Err() = %v, want one that says %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "sk-secret") {
				t.Errorf("the error shows the credential: %v", err)
			}
		})
	}
}

// lockedWriter is a log's destination that tests read while it is written.
type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func newTestLogger(b *strings.Builder, mu *sync.Mutex) *slog.Logger {
	return slog.New(slog.NewTextHandler(lockedWriter{mu, b}, nil))
}

// A Retry-After cools the member that drew it alone: the other members,
// and the quota they share, go on.
func TestPoolRetryAfterCoolsOneMember(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		start := time.Now()
		var mu sync.Mutex
		var told bool
		sent := map[string][]time.Time{}
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			cred := req.Header.Get("Authorization")
			now := time.Now()
			mu.Lock()
			defer mu.Unlock()
			if cred == "Bearer sk-aaa" && !told && !now.Before(start.Add(2*time.Second)) {
				told = true
				return &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"5"}}, Body: http.NoBody, Request: req}, nil
			}
			sent[cred] = append(sent[cred], now)
			return okResponse(req), nil
		})
		tr := New(base, WithoutRetry(),
			WithScope(Scope{Name: "key", Limit: PerSecond(20)}),
			WithScope(Scope{Name: "project", Limit: PerSecond(100)}),
			WithPool(pool.Config{Scopes: []string{"key"}, SharedQuota: []string{"project"},
				Members: []pool.Member{bearerMember("a", "sk-aaa"), bearerMember("b", "sk-bbb")}}))
		hammer(tr, 8, start.Add(10*time.Second))
		mu.Lock()
		defer mu.Unlock()
		if n := between(sent["Bearer sk-aaa"], start.Add(2100*time.Millisecond), start.Add(6900*time.Millisecond)); n != 0 {
			t.Errorf("the cooled member took %d calls during its pause", n)
		}
		if n := between(sent["Bearer sk-bbb"], start.Add(2100*time.Millisecond), start.Add(6900*time.Millisecond)); n < 80 {
			t.Errorf("the other member took %d calls while the first was paused, want about its 18 a second", n)
		}
		if n := between(sent["Bearer sk-aaa"], start.Add(8*time.Second), start.Add(10*time.Second)); n < 30 {
			t.Errorf("the cooled member took %d calls in the 2 s after its pause, want about its 18 a second", n)
		}
	})
}

// No credential a member applies — a header, a URL, a form field — appears
// in any event, log line, error or Stats, on any path a pool takes: a
// success, a 429 that cools a member, a 401 that takes it out, a 402 that
// parks it, a refusal for the deadline, a member that cannot apply itself,
// and none left.
func TestPoolShowsNoCredential(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toPresent()
		const secret = "sk-SECRET"
		var mu sync.Mutex
		var out strings.Builder // everything pacer said
		say := func(s string) {
			mu.Lock()
			out.WriteString(s + "\n")
			mu.Unlock()
		}
		var n int
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			n++
			i := n
			mu.Unlock()
			h := http.Header{"X-Ratelimit-Limit": {"5"}, "X-Ratelimit-Remaining": {"1"}, "X-Ratelimit-Reset": {"1"}}
			status := http.StatusOK
			switch {
			case strings.Contains(req.Header.Get("Authorization"), secret+"-revoked"):
				status = http.StatusUnauthorized
			case strings.Contains(req.URL.Path, secret):
				status = http.StatusPaymentRequired
				h.Set("Retry-After", "2")
			case i%3 == 0:
				status = http.StatusTooManyRequests
				h.Set("Retry-After", "1")
			}
			return &http.Response{StatusCode: status, Header: h, Body: http.NoBody, Request: req}, nil
		})
		tr := New(base, WithLogger(newTestLogger(&out, &mu)),
			WithObserver(observe.Func(func(e observe.Event) {
				say(fmt.Sprintf("%+v", e))
				if e.Err != nil {
					say(e.Err.Error())
				}
			})),
			WithScope(Scope{Name: "key", Limit: PerSecond(5)}),
			WithPool(pool.Config{Scopes: []string{"key"}, Members: []pool.Member{
				{Name: "header", Apply: pool.Bearer(secret + "-1")},
				{Name: "revoked", Apply: pool.Bearer(secret + "-revoked")},
				{Name: "url", Apply: pool.URL(func(u *url.URL) { u.Path = "/deployments/" + secret })},
				{Name: "form", Apply: pool.FormField("From", secret+"-from")},
				{Name: "broken", Apply: func(*http.Request) error { return fmt.Errorf("the member is broken") }},
			}, Affinity: func(*http.Request) string { return secret + "-affinity" }}))
		for i := range 40 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%4)*time.Second)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://api.test/v1", strings.NewReader("To=1"))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("To=1")), nil }
			resp, err := tr.RoundTrip(req)
			if err != nil {
				say(err.Error())
				say(fmt.Sprintf("%+v", err))
			} else {
				resp.Body.Close()
			}
			cancel()
		}
		say(fmt.Sprintf("%+v", tr.Stats()))
		mu.Lock()
		defer mu.Unlock()
		for _, want := range []string{"member_out", "member_parked", "member_rotated", "Member:revoked"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("no %q in what pacer said: the test did not take that path", want)
			}
		}
		if strings.Contains(out.String(), secret) {
			t.Errorf("a credential appears in what pacer said:\n%s", out.String())
		}
	})
}

// A 429 goes to another member only when the call is safe to send twice:
// a GET, or a POST with an Idempotency-Key; a POST without one gets the 429.
func TestPoolRotatesA429OnlyWhenSafeToSendTwice(t *testing.T) {
	for _, tt := range []struct {
		name   string
		method string
		key    bool
		want   int
	}{{"GET", http.MethodGet, false, http.StatusOK}, {"POST with a key", http.MethodPost, true, http.StatusOK}, {"POST", http.MethodPost, false, http.StatusTooManyRequests}} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
					if req.Header.Get("Authorization") == "Bearer sk-aaa" {
						return &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"5"}}, Body: http.NoBody, Request: req}, nil
					}
					return okResponse(req), nil
				})
				// a has the more headroom, so it is tried first.
				tr := New(base, WithoutRetry(), WithScope(Scope{Name: "ka", Limit: PerSecond(20)}), WithScope(Scope{Name: "kb", Limit: PerSecond(10)}),
					WithPool(pool.Config{Members: []pool.Member{
						{Name: "a", Apply: pool.Bearer("sk-aaa"), Scopes: []string{"ka"}},
						{Name: "b", Apply: pool.Bearer("sk-bbb"), Scopes: []string{"kb"}}}}))
				req, _ := http.NewRequest(tt.method, "http://api.test/", strings.NewReader("{}"))
				req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("{}")), nil }
				if tt.key {
					req.Header.Set("Idempotency-Key", "k1")
				}
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != tt.want {
					t.Errorf("status %d, want %d", resp.StatusCode, tt.want)
				}
			})
		})
	}
}

// With Affinity, calls of one key go to one member while it can admit them
// at once; the keys spread over the members.
func TestPoolAffinityKeepsAKeyOnOneMember(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		by := map[string]map[string]int{} // affinity key -> credential -> calls
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			mu.Lock()
			k := req.Header.Get("X-Conversation")
			if by[k] == nil {
				by[k] = map[string]int{}
			}
			by[k][req.Header.Get("Authorization")]++
			mu.Unlock()
			return okResponse(req), nil
		})
		tr := New(base, WithScope(Scope{Name: "key", Limit: PerSecond(1000)}),
			WithPool(pool.Config{Scopes: []string{"key"},
				Members:  []pool.Member{bearerMember("a", "sk-aaa"), bearerMember("b", "sk-bbb"), bearerMember("c", "sk-ccc")},
				Affinity: func(r *http.Request) string { return r.Header.Get("X-Conversation") }}))
		for i := range 200 {
			req, _ := http.NewRequest(http.MethodGet, "http://api.test/", nil)
			req.Header.Set("X-Conversation", "conv-"+strconv.Itoa(i%20))
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			time.Sleep(10 * time.Millisecond)
		}
		used := map[string]bool{}
		for k, creds := range by {
			if len(creds) != 1 {
				t.Errorf("key %s went to %d members: %v", k, len(creds), creds)
			}
			for c := range creds {
				used[c] = true
			}
		}
		if len(used) != 3 {
			t.Errorf("20 keys went to %d members, want all 3", len(used))
		}
	})
}

// PutBack puts a member that was taken out back in rotation, and says so;
// a name not in the pool, or a Transport without one, is an error.
func TestPoolPutBack(t *testing.T) {
	revoked := true
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if revoked && req.Header.Get("Authorization") == "Bearer sk-aaa" {
			return &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
		}
		return okResponse(req), nil
	})
	var unparked atomic.Int32
	tr := New(base, WithObserver(observe.Func(func(e observe.Event) {
		if e.Kind == observe.EventMemberUnparked && e.Member == "a" {
			unparked.Add(1)
		}
	})), WithPool(pool.Config{Members: []pool.Member{bearerMember("a", "sk-aaa"), bearerMember("b", "sk-bbb")}}))
	for range 2 { // one of them meets a
		if err := get(tr, context.Background(), "http://api.test/"); err != nil {
			t.Fatal(err)
		}
	}
	if st := tr.Stats().Members[0]; st.State != pool.Out {
		t.Fatalf("member a: %+v, want out", st)
	}
	revoked = false
	if err := tr.PutBack("a"); err != nil {
		t.Fatal(err)
	}
	if st := tr.Stats().Members[0]; st.State != pool.Ready || st.Why != "" || unparked.Load() != 1 {
		t.Errorf("member a: %+v, %d EventMemberUnparked; want ready, said once", st, unparked.Load())
	}
	if err := tr.PutBack("nope"); err == nil || !strings.Contains(err.Error(), `no member named "nope"`) {
		t.Errorf("PutBack(nope) = %v", err)
	}
	if err := New(nil).PutBack("a"); err == nil || !strings.Contains(err.Error(), "WithPool") {
		t.Errorf("PutBack without a pool = %v", err)
	}
}
