package pacer

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/retry"
)

// A nil option and a typed-nil base are configuration errors: Err reports
// them and RoundTrip returns them, nothing panics.
func TestNilOptionAndNilBaseAreConfigurationErrors(t *testing.T) {
	var nilTransport *http.Transport
	for name, tr := range map[string]*Transport{
		"nil option":            New(nil, nil),
		"nil option among some": New(nil, WithLimit(PerSecond(1)), nil),
		"typed-nil base":        New(nilTransport),
		"nil func base":         New(roundTripFunc(nil)),
	} {
		t.Run(name, func(t *testing.T) {
			err := tr.Err()
			if err == nil {
				t.Fatal("no configuration error")
			}
			if name == "typed-nil base" && !strings.Contains(err.Error(), "*http.Transport") {
				t.Errorf("Err() = %v, want it to name the base's type", err)
			}
			if !strings.Contains(name, "base") && !strings.Contains(err.Error(), "nil Option") {
				t.Errorf("Err() = %v, want it to say an Option is nil", err)
			}
			if _, rtErr := tr.RoundTrip(mustRequest(t)); !errors.Is(rtErr, err) && rtErr.Error() != err.Error() {
				t.Errorf("RoundTrip returned %v, want the configuration error", rtErr)
			}
		})
	}
}

// logLines is a slog handler's output, safe to read while calls run.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) lines(containing string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	// The text handler quotes the message; read it as written.
	for _, line := range strings.Split(strings.ReplaceAll(l.buf.String(), `\"`, `"`), "\n") {
		if strings.Contains(line, containing) {
			out = append(out, line)
		}
	}
	return out
}

// What New says once about a configuration that is probably a mistake,
// and what it refuses.
func TestQuestionableConfigurationIsSaidOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		want []string // in one log line; none: nothing logged
	}{
		{"budget in a unit a scope charges", []Option{
			WithScope(Scope{Name: "tpm", Unit: "tokens", Limit: PerMinute(1000)}),
			WithWorkload("agent", Workload{Budget: Budget{Limit: 5000, Per: time.Hour, Unit: "tokens"}})}, nil},
		{"burst above count", []Option{WithLimit(Limit{Count: 100, Per: time.Hour, Burst: 500})},
			[]string{`scope "default"`, "Burst 500", "Count 100"}},
		{"per-second bucket with a larger burst", []Option{WithLimit(Limit{Count: 2, Per: time.Second, Burst: 40})}, nil},
		{"concurrency 0", []Option{WithConcurrency(0)}, []string{"WithConcurrency(0)", "no cap"}},
		{"concurrency 0, then 5", []Option{WithConcurrency(0), WithConcurrency(5)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log logLines
			tr := New(&stubAPI{clock: clock.System}, append(tc.opts, WithLogger(slogTo(&log)))...)
			mustNotErr(t, tr.Err())
			lines := log.lines("pacer:")
			if tc.want == nil {
				if len(lines) > 0 {
					t.Errorf("logged %q, want nothing", lines)
				}
				return
			}
			if len(lines) != 1 {
				t.Fatalf("logged %q, want one line", lines)
			}
			for _, w := range tc.want {
				if !strings.Contains(lines[0], w) {
					t.Errorf("%q does not say %s", lines[0], w)
				}
			}
		})
	}
}

// A body too large to buffer for replay is said: an event on every such
// call, and one log line naming the setting to raise.
func TestBodyTooLargeToReplayIsSaid(t *testing.T) {
	var log logLines
	rec := &recorder{}
	api := &failingAPI{status: http.StatusServiceUnavailable}
	tr := New(api, WithLogger(slogTo(&log)), WithObserver(rec),
		WithRetry(retry.Policy{InitialBackoff: time.Millisecond, MaxBufferedBody: 8}))
	for range 2 {
		putStreamed(t, tr, "more than eight bytes")
	}
	if api.calls != 2 {
		t.Errorf("attempted %d times, want each call once", api.calls)
	}
	if n := rec.kinds()[observe.EventBodyNotReplayable]; n != 2 {
		t.Errorf("heard %d body_not_replayable events, want 2", n)
	}
	if lines := log.lines("MaxBufferedBody"); len(lines) != 1 {
		t.Errorf("logged %q, want one line naming MaxBufferedBody", lines)
	}
}
