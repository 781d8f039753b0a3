package anthropic_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/providers/anthropic"
	"github.com/pacer-go/pacer/providers/internal/emulator"
	emu "github.com/pacer-go/pacer/providers/internal/emulator/anthropic"
	"github.com/pacer-go/pacer/providers/internal/providertest"
)

// workspaces is an organization whose keys belong to Workspaces, as
// Anthropic's rate-limits page describes them: a Workspace with limits of
// its own is refused what exceeds them (a bucket of a minute, as the
// organization's), whatever the organization has left, and every call
// then counts against the organization's limits too (next). A key it does
// not know draws a 401.
type workspaces struct {
	next  http.Handler
	mu    sync.Mutex
	of    map[string]*workspace // by key
	Tally emulator.Tally
}

type workspace struct {
	name            string
	requests, input *emulator.Bucket // nil: no limit of its own
}

func (o *workspaces) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	o.mu.Lock()
	ws, ok := o.of[r.Header.Get("x-api-key")]
	refused := ""
	now := time.Now()
	in := float64(emu.InputTokensOf(body))
	switch {
	case !ok:
	case ws.requests != nil && ws.requests.Level(now) < 1:
		refused = "requests per minute"
	case ws.input != nil && ws.input.Level(now) < in:
		refused = "input tokens per minute"
	default:
		if ws.requests != nil {
			ws.requests.Spend(now, 1)
		}
		if ws.input != nil {
			ws.input.Spend(now, in)
		}
	}
	o.mu.Unlock()
	switch {
	case !ok:
		o.Tally.Refuse("401")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
		return
	case refused != "":
		o.Tally.Refuse(ws.name + ": " + refused)
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your workspace's rate limit of %s."}}`, refused)
		return
	}
	o.Tally.Accept(ws.name, int64(in))
	o.next.ServeHTTP(w, r)
}

// Three Workspaces' keys behind one pool on Start's Sonnet 4.x, driven
// for five minutes with questions answered in 50 to 150 tokens: two
// Workspaces capped at 300 and 600 requests a minute, one at 36,000 input
// tokens a minute (about 140 of these calls). Neither a Workspace's own
// limit nor the organization's 1,000 requests a minute is exceeded (no 429
// from either), though the Workspaces' limits add up to more; the
// organization's is used to at least 85%; every key carries calls; no key
// shows in Stats or events.
func TestWorkspaceKeysAgainstTheEmulator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		providertest.Today()
		server := emu.New("Start")
		server.Output = answerOf
		keys := []anthropic.WorkspaceKey{
			{Name: "batch", Key: "sk-ant-api03-batch", Limits: anthropic.ModelLimits{RPM: 300}},
			{Name: "support", Key: "sk-ant-api03-support", Limits: anthropic.ModelLimits{ITPM: 36_000}},
			{Name: "interactive", Key: "sk-ant-api03-interactive", Limits: anthropic.ModelLimits{RPM: 600}},
		}
		org := &workspaces{next: server, of: map[string]*workspace{
			keys[0].Key: {name: "batch", requests: &emulator.Bucket{Capacity: 300, Per: time.Minute}},
			keys[1].Key: {name: "support", input: &emulator.Bucket{Capacity: 36_000, Per: time.Minute}},
			keys[2].Key: {name: "interactive", requests: &emulator.Bucket{Capacity: 600, Per: time.Minute}},
		}}
		var mu sync.Mutex
		var events []string
		tr := pacer.New(emulator.Transport(org), anthropic.Preset(anthropic.Start, anthropic.WithOutputEstimate(150)),
			pacer.WithObserver(observe.Func(func(e observe.Event) {
				mu.Lock()
				events = append(events, fmt.Sprintf("%+v", e))
				mu.Unlock()
			})),
			anthropic.WorkspaceKeys(keys...))
		if err := tr.Err(); err != nil {
			t.Fatal(err)
		}
		const run = 5 * time.Minute
		statuses := providertest.Drive(tr.Client(), 160, run, messages([]string{"claude-sonnet-4-6"}, 1_024, spread(50, 150)))
		t.Logf("statuses %v; by workspace %d %d %d; refused %v %v", statuses, org.Tally.Accepted("batch"),
			org.Tally.Accepted("support"), org.Tally.Accepted("interactive"), org.Tally.Refused(), server.Tally.Refused())
		if refused := org.Tally.Refused(); len(refused) > 0 {
			t.Errorf("refused by a Workspace's own limit: %v", refused)
		}
		if refused := server.Tally.Refused(); len(refused) > 0 {
			t.Errorf("refused by the organization's limits: %v: the keys were paced above them", refused)
		}
		rpm := emu.Tables["Start"][emu.Sonnet4].RPM
		if got, want := server.Tally.Accepted(emu.Sonnet4), 0.85*float64(rpm)*run.Minutes(); float64(got) < want {
			t.Errorf("%d calls in %v, want at least %.0f (85%% of the organization's %d a minute)", got, run, want, rpm)
		}
		for _, k := range keys {
			if org.Tally.Accepted(k.Name) == 0 {
				t.Errorf("%s took no call", k.Name)
			}
		}
		all := fmt.Sprintf("%+v %v", tr.Stats(), events)
		if strings.Contains(all, "sk-ant") {
			t.Errorf("a key shows in Stats or events: %s", all)
		}
	})
}

// A Workspace's input tokens scope is charged the call's estimate on the
// model class's: one Workspace of 1,000 input tokens a minute admits a
// call of about 700 at once and makes the next wait for the minute to
// refill, where Anthropic would refuse it.
func TestWorkspaceKeysChargeTheWorkspacesTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		providertest.Today()
		server := emu.New("Start")
		key := anthropic.WorkspaceKey{Name: "small", Key: "sk-ant-api03-small", Limits: anthropic.ModelLimits{ITPM: 1_000}}
		org := &workspaces{next: server, of: map[string]*workspace{key.Key: {name: "small", input: &emulator.Bucket{Capacity: 1_000, Per: time.Minute}}}}
		tr := pacer.New(emulator.Transport(org), anthropic.Preset(anthropic.Start), anthropic.WorkspaceKeys(key))
		body := `{"model":"claude-sonnet-4-6","max_tokens":64,"messages":[{"role":"user","content":"` + strings.Repeat("word ", 700) + `"}]}`
		gap, err := providertest.Gap(tr.Client(), func() *http.Request {
			req, _ := http.NewRequest(http.MethodPost, "https://api.anthropic.com/v1/messages", strings.NewReader(body))
			return req
		})
		if err != nil {
			t.Fatalf("%v (refused %v)", err, org.Tally.Refused())
		}
		if gap < 10*time.Second {
			t.Errorf("the second call went %v after the first: the Workspace's 1,000 input tokens a minute were not charged", gap)
		}
	})
}

func TestWorkspaceKeysRefusesABadKey(t *testing.T) {
	for _, k := range []anthropic.WorkspaceKey{
		{Name: "no-key"},
		{Name: "negative", Key: "sk-ant-api03-secret", Limits: anthropic.ModelLimits{RPM: -1}},
	} {
		err := pacer.New(nil, anthropic.Preset(anthropic.Start), anthropic.WorkspaceKeys(k)).Err()
		if err == nil || !strings.Contains(err.Error(), strconv.Quote(k.Name)) || strings.Contains(err.Error(), "sk-ant") {
			t.Errorf("%+v: Err() = %v, want the key named, its secret not", k, err)
		}
	}
}
