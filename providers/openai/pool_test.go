package openai_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/pool"
	"github.com/pacer-go/pacer/providers/internal/emulator"
	emu "github.com/pacer-go/pacer/providers/internal/emulator/openai"
	"github.com/pacer-go/pacer/providers/internal/providertest"
	"github.com/pacer-go/pacer/providers/openai"
)

// keyed is the emulated organization behind several keys: it counts the
// calls of each key and answers 401 to a key it does not know, or one
// revoked; the limits are the organization's, whatever the key.
type keyed struct {
	next    http.Handler
	mu      sync.Mutex
	keys    map[string]int
	revoked map[string]bool
}

func (k *keyed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	k.mu.Lock()
	_, ok := k.keys[key]
	ok = ok && !k.revoked[key]
	if ok {
		k.keys[key]++
	}
	k.mu.Unlock()
	if !ok {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
		return
	}
	k.next.ServeHTTP(w, r)
}

// Three keys of one project, driven with drafts on gpt-4o for ten minutes,
// one revoked halfway: the pool is paced at the project's 30,000 tokens a
// minute, not three times it, and is refused nothing; each key carries
// calls until the revoked one is out; no key shows in Stats or events.
func TestProjectKeysArePacedAtTheProjectsLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		providertest.Today()
		server := emu.New(emu.Tier1)
		server.Latency = 500 * time.Millisecond
		org := &keyed{next: server, keys: map[string]int{"sk-proj-aaa": 0, "sk-proj-bbb": 0, "sk-proj-ccc": 0}, revoked: map[string]bool{}}
		var mu sync.Mutex
		var events []string
		tr := pacer.New(emulator.Transport(org), openai.Preset(openai.Tier1),
			pacer.WithObserver(observe.Func(func(e observe.Event) {
				mu.Lock()
				events = append(events, fmt.Sprintf("%+v", e))
				mu.Unlock()
			})),
			openai.ProjectKeys(
				pool.Member{Name: "a", Apply: pool.Bearer("sk-proj-aaa")},
				pool.Member{Name: "b", Apply: pool.Bearer("sk-proj-bbb")},
				pool.Member{Name: "c", Apply: pool.Bearer("sk-proj-ccc")}))
		if err := tr.Err(); err != nil {
			t.Fatal(err)
		}
		const run = 10 * time.Minute
		go func() {
			time.Sleep(run / 2)
			org.mu.Lock()
			org.revoked["sk-proj-ccc"] = true
			org.mu.Unlock()
		}()
		statuses := providertest.Drive(tr.Client(), 16, run, draft)
		t.Logf("statuses %v, refused %v, by key %v", statuses, server.Tally.Refused(), org.keys)
		if refused := server.Tally.Refused(); len(refused) > 0 {
			t.Errorf("refused: %v: the keys were paced above the project's limits", refused)
		}
		tpm := emu.Tier1["gpt-4o"].TPM
		if got, want := server.Tally.Units("gpt-4o tokens"), 0.85*float64(tpm)*run.Minutes(); float64(got) < want {
			t.Errorf("%d gpt-4o tokens in %v, want at least %.0f (85%% of %d a minute)", got, run, want, tpm)
		}
		for key, n := range org.keys {
			if n == 0 {
				t.Errorf("key %s took no call", key)
			}
		}
		st := tr.Stats()
		if len(st.Members) != 3 || st.Members[2].State != pool.Out {
			t.Errorf("Stats().Members = %+v, want c out", st.Members)
		}
		all := fmt.Sprintf("%+v %v", st, events)
		if strings.Contains(all, "sk-proj") {
			t.Errorf("a key shows in Stats or events: %s", all)
		}
	})
}

// A key given Scopes of its own is refused: it has no limit to pace.
func TestProjectKeysRefusesScopesOfAKey(t *testing.T) {
	tr := pacer.New(nil, openai.Preset(openai.Tier1),
		pacer.WithScope(pacer.Scope{Name: "key", Limit: pacer.PerMinute(500)}),
		openai.ProjectKeys(pool.Member{Name: "a", Apply: pool.Bearer("sk-proj-aaa"), Scopes: []string{"key"}}))
	if err := tr.Err(); err == nil || !strings.Contains(err.Error(), `"a"`) || strings.Contains(err.Error(), "sk-proj") {
		t.Fatalf("Err() = %v, want the key named, its secret not", err)
	}
}
