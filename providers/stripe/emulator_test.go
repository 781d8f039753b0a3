package stripe_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/figures"
	"github.com/pacer-go/pacer/providers/internal/emulator"
	emu "github.com/pacer-go/pacer/providers/internal/emulator/stripe"
	"github.com/pacer-go/pacer/providers/internal/providertest"
	"github.com/pacer-go/pacer/providers/stripe"
)

const run = time.Minute

// hot is the endpoint most of a workload's calls go to.
const hot = "GET /v1/customers/{id}"

// workload is a Stripe integration's traffic: most workers read customers
// by ID (one endpoint, many IDs), the others create payment intents and
// refunds and read charges; with more endpoints, also invoices, payment
// methods and subscriptions.
func workload(endpoints int) func(w, n int) *http.Request {
	others := []func(n int) (string, string, string){
		func(n int) (string, string, string) { return "POST", "/v1/payment_intents", "amount=100&currency=usd" },
		func(n int) (string, string, string) { return "POST", "/v1/refunds", fmt.Sprintf("charge=ch_%d", n) },
		func(n int) (string, string, string) { return "GET", fmt.Sprintf("/v1/charges/ch_%dx", n), "" },
		func(n int) (string, string, string) { return "GET", fmt.Sprintf("/v1/invoices/in_%dx", n), "" },
		func(n int) (string, string, string) {
			return "POST", fmt.Sprintf("/v1/payment_methods/pm_%dx/attach", n), "customer=cus_1"
		},
	}[:endpoints-1]
	return func(w, n int) *http.Request {
		method, path, body := "GET", fmt.Sprintf("/v1/customers/cus_%d%dQ", w, n), ""
		if w%4 == 3 {
			method, path, body = others[(w/4+n)%len(others)](n)
		}
		var req *http.Request
		if body != "" {
			req, _ = http.NewRequest(method, api+path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		} else {
			req, _ = http.NewRequest(method, api+path, nil)
		}
		return req
	}
}

// The preset, driven by a realistic workload against an emulator of
// Stripe's documented limiters, is refused nothing and uses at least 85% of
// what the binding limit allows: the endpoint limit when few endpoints are
// busy, the global limit when many are, and the sandbox's global limit.
func TestPresetAgainstTheEmulator(t *testing.T) {
	cases := []struct {
		name      string
		mode      stripe.Mode
		endpoints int
		// what the emulator's documented limits allow, per second: on the
		// hot endpoint, and in all
		hot, total int
	}{
		{"live, three endpoints: the endpoint limit binds", stripe.Live, 3, emu.Endpoint, 3 * emu.Endpoint},
		{"live, six endpoints: the global limit binds", stripe.Live, 6, 0, emu.LiveGlobal},
		{"sandbox: the global limit binds", stripe.Test, 3, 0, emu.SandboxGlobal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				server := emu.New(c.mode == stripe.Test)
				server.Latency = 30 * time.Millisecond
				client := pacer.New(emulator.Transport(server), stripe.Preset(c.mode)).Client()
				statuses := providertest.Drive(client, 48, run, workload(c.endpoints))
				t.Logf("statuses %v tally %d refused %v", statuses, server.Tally.Total(), server.Tally.Refused())
				if n := statuses[http.StatusTooManyRequests]; n > 0 {
					t.Errorf("%d calls were refused with 429: %v", n, server.Tally.Refused())
				}
				secs := int(run / time.Second)
				if c.hot > 0 {
					if got, want := server.Tally.Accepted(hot), float64(c.hot*secs)*0.85; float64(got) < want {
						t.Errorf("%s: %d calls in %v, want at least %.0f (85%% of %d/s)", hot, got, run, want, c.hot)
					}
				}
				if got, want := server.Tally.Total(), float64(c.total*secs)*0.85; float64(got) < want {
					t.Errorf("%d calls in %v, want at least %.0f (85%% of %d/s)", got, run, want, c.total)
				}
			})
		})
	}
}

// Every figure the preset uses carries its source, date and quote, or the
// reason it stays unverified.
func TestFiguresHaveSources(t *testing.T) {
	if err := figures.Check(stripe.Figures()); err != nil {
		t.Fatal(err)
	}
}

// The preset's limits are the figures of its table.
func TestLimitsAreTheTablesFigures(t *testing.T) {
	fs := stripe.Figures()
	for _, m := range []stripe.Mode{stripe.Live, stripe.Test} {
		global, endpoint := stripe.Limits(m)
		g, ok := figures.Find(fs, "stripe "+m.String(), "global requests")
		if !ok || g.Value != float64(global.Count) || global.Per != time.Second {
			t.Errorf("%v: global limit %v, table %v", m, global, g)
		}
		e, ok := figures.Find(fs, "stripe", "requests per endpoint")
		if !ok || e.Value != float64(endpoint.Count) || endpoint.Per != time.Second {
			t.Errorf("%v: endpoint limit %v, table %v", m, endpoint, e)
		}
	}
}

// The preset's figures are the emulator's documented ones.
func TestFiguresMatchTheEmulator(t *testing.T) {
	want := map[string]float64{
		"stripe live/global requests":  emu.LiveGlobal,
		"stripe test/global requests":  emu.SandboxGlobal,
		"stripe/requests per endpoint": emu.Endpoint,
		"stripe/Files API reads":       emu.FilesRead,
		"stripe/Files API writes":      emu.FilesWrite,
		"stripe/Search API reads":      emu.SearchRead,
	}
	if err := figures.Compare(stripe.Figures(), want); err != nil {
		t.Error(err)
	}
}
