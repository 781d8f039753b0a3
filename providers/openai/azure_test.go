package openai_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/providers/internal/emulator"
	"github.com/pacer-go/pacer/providers/internal/providertest"
	"github.com/pacer-go/pacer/providers/openai"
)

// azureFake is an Azure OpenAI resource of several deployments, as
// Microsoft's quota page describes one: each deployment limited to its own
// tokens a minute (a bucket of a minute, charged the prompt and the
// reserved output together) and to 6 requests a minute per 1,000 of them,
// counted on 1-second intervals, the strictest the page names; a key
// other than the deployment's draws a 401. It answers with Azure's
// x-ratelimit-remaining-* headers.
type azureFake struct {
	mu     sync.Mutex
	keys   map[string]string // deployment -> its resource's key
	tokens map[string]*emulator.Bucket
	reqs   map[string]*emulator.Window
	hosts  map[string]map[string]bool // deployment -> the hosts its calls were sent to
	Tally  emulator.Tally
}

func newAzureFake(deployments ...openai.AzureDeployment) *azureFake {
	f := &azureFake{keys: map[string]string{}, tokens: map[string]*emulator.Bucket{}, reqs: map[string]*emulator.Window{}, hosts: map[string]map[string]bool{}}
	for _, d := range deployments {
		f.keys[d.Deployment] = d.Key
		f.tokens[d.Deployment] = &emulator.Bucket{Capacity: float64(d.TPM), Per: time.Minute}
		f.reqs[d.Deployment] = &emulator.Window{Limit: max(1, openai.AzureRPM(d.TPM)/60), Per: time.Second}
		f.hosts[d.Deployment] = map[string]bool{}
	}
	return f
}

func (f *azureFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	parts := strings.Split(r.URL.Path, "/")
	if len(parts) < 5 || parts[1] != "openai" || parts[2] != "deployments" || r.URL.Query().Get("api-version") == "" {
		http.Error(w, `{"error":{"code":"404","message":"Resource not found"}}`, http.StatusNotFound)
		return
	}
	d := parts[3]
	f.mu.Lock()
	defer f.mu.Unlock()
	key, ok := f.keys[d]
	if !ok {
		f.Tally.Refuse("no such deployment " + d)
		http.Error(w, `{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist."}}`, http.StatusNotFound)
		return
	}
	if r.Header.Get("api-key") != key {
		f.Tally.Refuse("401 " + d)
		http.Error(w, `{"error":{"code":"401","message":"Access denied due to invalid subscription key or wrong API endpoint."}}`, http.StatusUnauthorized)
		return
	}
	f.hosts[d][r.Host] = true
	input, output := fakeCount(r.URL.Path, body)
	cost := input + output
	now := time.Now()
	tokens, reqs := f.tokens[d], f.reqs[d]
	if tokens.Level(now) < float64(cost) || !reqs.Allow(now, 1) {
		f.Tally.Refuse("429 " + d)
		w.Header().Set("retry-after", "1")
		http.Error(w, `{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation have exceeded the rate limit of your current tier."}}`, http.StatusTooManyRequests)
		return
	}
	tokens.Take(now, float64(cost))
	f.Tally.Accept(d, cost)
	w.Header().Set("x-ratelimit-remaining-tokens", strconv.Itoa(int(math.Floor(tokens.Level(now)))))
	w.Header().Set("x-ratelimit-remaining-requests", strconv.Itoa(reqs.Remaining(now)))
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"chatcmpl-azure","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":%d,"completion_tokens":1,"total_tokens":%d}}`, input, input+1)
}

// azureCall is a request to the deployment the caller's path names, a
// placeholder the pool replaces.
func azureCall(endpoint string, body map[string]any) *http.Request {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, "https://my-resource.openai.azure.com/openai/deployments/POOL/"+endpoint+"?api-version=2024-10-21", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	return req
}

// Three deployments of three sizes behind one pool, driven for five
// minutes with calls whose cost binds either the tokens a minute (drafts
// of up to 300 tokens) or the requests a minute (one-word embeddings):
// each deployment is paced at its own limit, none is refused, each is used
// to at least 85% of the limit that binds it, and no key shows in Stats
// or events.
func TestAzureDeploymentsAgainstTheFake(t *testing.T) {
	deployments := []openai.AzureDeployment{
		{Name: "east", Deployment: "gpt-4o-east", TPM: 10_000, Key: "azure-key-east"},
		{Name: "west", Deployment: "gpt-4o-west", TPM: 20_000, Key: "azure-key-west", Endpoint: "https://west-resource.openai.azure.com"},
		{Name: "north", Deployment: "gpt-4o-north", TPM: 30_000, Key: "azure-key-north"},
	}
	for _, tc := range []struct {
		name  string
		call  func(w, n int) *http.Request
		binds func(d openai.AzureDeployment, f *azureFake) (got, ceiling float64)
	}{
		{"tokens bind", func(w, n int) *http.Request {
			return azureCall("chat/completions", map[string]any{"max_tokens": 300,
				"messages": []map[string]string{{"role": "user", "content": strings.Repeat("Summarize the ticket below. ", 1+(w+n)%4)}}})
		}, func(d openai.AzureDeployment, f *azureFake) (float64, float64) {
			return float64(f.Tally.Units(d.Deployment)), float64(d.TPM) * 5
		}},
		{"requests bind", func(w, n int) *http.Request {
			return azureCall("embeddings", map[string]any{"input": "refund"})
		}, func(d openai.AzureDeployment, f *azureFake) (float64, float64) {
			return float64(f.Tally.Accepted(d.Deployment)), float64(openai.AzureRPM(d.TPM)) * 5
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				server := newAzureFake(deployments...)
				var mu sync.Mutex
				var events []string
				tr := pacer.New(emulator.Transport(server), openai.AzureDeployments(deployments...),
					pacer.WithObserver(observe.Func(func(e observe.Event) {
						mu.Lock()
						events = append(events, fmt.Sprintf("%+v", e))
						mu.Unlock()
					})))
				if err := tr.Err(); err != nil {
					t.Fatal(err)
				}
				statuses := providertest.Drive(tr.Client(), 32, 5*time.Minute, tc.call)
				t.Logf("statuses %v, refused %v", statuses, server.Tally.Refused())
				if refused := server.Tally.Refused(); len(refused) > 0 {
					t.Errorf("refused: %v", refused)
				}
				for _, d := range deployments {
					got, ceiling := tc.binds(d, server)
					t.Logf("%s: %.0f of %.0f (%.1f%%)", d.Name, got, ceiling, 100*got/ceiling)
					if got < 0.85*ceiling {
						t.Errorf("%s: %.0f in five minutes, want at least 85%% of %.0f", d.Name, got, ceiling)
					}
				}
				if hosts := server.hosts["gpt-4o-west"]; len(hosts) != 1 || !hosts["west-resource.openai.azure.com"] {
					t.Errorf("west's calls went to %v, want its Endpoint's host alone", hosts)
				}
				all := fmt.Sprintf("%+v %v", tr.Stats(), events)
				if strings.Contains(all, "azure-key") {
					t.Errorf("a key shows in Stats or events: %s", all)
				}
			})
		})
	}
}

// Without the route, a deployment's tokens scope is charged nothing: the
// pool paces requests alone and the deployment's tokens a minute is
// overrun. Each call's estimate is charged, so one deployment of 1,000
// tokens a minute admits one 600-token call at once and makes the next
// wait for the minute to refill, where Azure would refuse it.
func TestAzureDeploymentsChargeTheEstimate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := openai.AzureDeployment{Name: "small", Deployment: "gpt-4o", TPM: 1_000, RPM: 60}
		server := newAzureFake(d)
		server.reqs[d.Deployment].Limit = 60
		tr := pacer.New(emulator.Transport(server), openai.AzureDeployments(d))
		gap, err := providertest.Gap(tr.Client(), func() *http.Request {
			return azureCall("chat/completions", map[string]any{"max_tokens": 600, "messages": []map[string]string{{"role": "user", "content": "hi"}}})
		})
		if err != nil {
			t.Fatalf("%v (refused %v)", err, server.Tally.Refused())
		}
		if gap < 10*time.Second {
			t.Errorf("the second 600-token call went %v after the first: the deployment's 1,000 tokens a minute were not charged", gap)
		}
	})
}

func TestAzureDeploymentsRefusesABadDeployment(t *testing.T) {
	for _, d := range []openai.AzureDeployment{
		{Name: "no-deployment", TPM: 1_000},
		{Name: "tiny", Deployment: "d", TPM: 100},
		{Name: "negative", Deployment: "d", TPM: 1_000, RPM: -1},
		{Name: "http", Deployment: "d", TPM: 1_000, Endpoint: "http://r.openai.azure.com", Key: "azure-key-secret"},
	} {
		err := pacer.New(nil, openai.AzureDeployments(d)).Err()
		if err == nil || !strings.Contains(err.Error(), d.Name) || strings.Contains(err.Error(), "azure-key") {
			t.Errorf("%+v: Err() = %v, want the deployment named, its key not", d, err)
		}
	}
}
