package whatsapp_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/internal/providertest"
	"github.com/pacer-go/pacer/providers/whatsapp"
)

const messagesURL = "https://graph.facebook.com/v21.0/106540352242922/messages"

func sendText(t *testing.T, c *http.Client, to string) *http.Response {
	t.Helper()
	body := fmt.Sprintf(`{"messaging_product":"whatsapp","recipient_type":"individual","to":%q,"type":"text","text":{"body":"hi"}}`, to)
	req, err := http.NewRequest(http.MethodPost, messagesURL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := providertest.Do(c, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func recipient(s providertest.Sent) string {
	var m struct {
		To string `json:"to"`
	}
	json.Unmarshal(s.Body, &m)
	return m.To
}

// The number's throughput holds in every second, and each recipient gets at
// most one message in any six seconds.
func TestPresetNeverExceedsThePublishedLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &providertest.Fake{}
		c := pacer.New(fake, whatsapp.Preset(whatsapp.Coexistence)).Client()
		var wg sync.WaitGroup
		for i := range 50 {
			to := fmt.Sprintf("+1555%07d", i)
			wg.Go(func() {
				for range 3 {
					sendText(t, c, to)
				}
			})
		}
		wg.Wait()
		sent := fake.Requests()
		if len(sent) != 150 {
			t.Fatalf("%d messages reached Meta, want 150", len(sent))
		}
		all := providertest.Times(sent, func(providertest.Sent) bool { return true })
		if got := providertest.MostInWindow(all, nil, time.Second); got > 20 {
			t.Errorf("%d messages in one second, limit 20", got)
		}
		for i := range 50 {
			to := fmt.Sprintf("+1555%07d", i)
			times := providertest.Times(sent, func(s providertest.Sent) bool { return recipient(s) == to })
			if len(times) != 3 {
				t.Fatalf("%d messages to %s, want 3 (was the body consumed?)", len(times), to)
			}
			if got := providertest.MostInWindow(times, nil, 6*time.Second); got > 1 {
				t.Errorf("%d messages to %s in six seconds, limit 1", got, to)
			}
		}
	})
}

func TestPairRateErrorIsRetriedAfterAWait(t *testing.T) {
	const pairRate = `{"error":{"message":"(#131056) (Business Account, Consumer Account) pair rate limit hit","type":"OAuthException","code":131056,"error_data":{"messaging_product":"whatsapp","details":"Message failed to send because there were too many messages sent from this phone number to the same phone number in a short period of time."},"fbtrace_id":"Az8or2yhqkZfEZ-_4Qn_Bam"}}`
	const undeliverable = `{"error":{"message":"(#131026) Message undeliverable","type":"OAuthException","code":131026,"fbtrace_id":"Az8or2yhqkZfEZ-_4Qn_Bam"}}`
	cases := []struct {
		name     string
		body     string
		attempts int
	}{
		{"131056 was refused, not sent", pairRate, 2},
		{"another error is final", undeliverable, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int32
				fake := &providertest.Fake{Respond: func(req *http.Request, _ []byte) *http.Response {
					if calls.Add(1) == 1 {
						return providertest.Response(req, http.StatusBadRequest, []string{"Content-Type", "application/json"}, c.body)
					}
					return providertest.Response(req, 200, nil, `{"messages":[{"id":"wamid.1"}]}`)
				}}
				client := pacer.New(fake, whatsapp.Preset(whatsapp.Standard)).Client()
				start := time.Now()
				sendText(t, client, "+15550100")
				sent := fake.Requests()
				if len(sent) != c.attempts {
					t.Fatalf("%d attempts, want %d", len(sent), c.attempts)
				}
				// The retry waited for the pair's bucket: six seconds at most
				// one message, less the headroom.
				if c.attempts == 2 && sent[1].At.Sub(start) < 6*time.Second {
					t.Errorf("retried after %v, within the pair's six seconds", sent[1].At.Sub(start))
				}
			})
		})
	}
}

func TestRoute(t *testing.T) {
	cases := []struct {
		method, url, body string
		want              []pacer.Charge
	}{
		{"POST", messagesURL, `{"to":"+1 555-0100"}`, []pacer.Charge{
			{Scope: whatsapp.ScopeThroughput, Key: "106540352242922"},
			{Scope: whatsapp.ScopePair, Key: "106540352242922→15550100"}}},
		{"POST", "https://graph.facebook.com/106540352242922/messages", `{"to":"15550100"}`, []pacer.Charge{
			{Scope: whatsapp.ScopeThroughput, Key: "106540352242922"},
			{Scope: whatsapp.ScopePair, Key: "106540352242922→15550100"}}},
		{"GET", messagesURL, "", []pacer.Charge{{Scope: pacer.DefaultScope}}},
		{"POST", "https://graph.facebook.com/v21.0/106540352242922/media", `{}`, []pacer.Charge{{Scope: pacer.DefaultScope}}},
	}
	for _, c := range cases {
		var body io.Reader
		if c.body != "" {
			body = strings.NewReader(c.body)
		}
		req, _ := http.NewRequest(c.method, c.url, body)
		got := whatsapp.Route(req, []pacer.Charge{{Scope: pacer.DefaultScope}})
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s %s: %v, want %v", c.method, c.url, got, c.want)
		}
	}
}

// A pair rate error concerns one recipient: the number's other messages
// keep the number's full throughput (Standard: 80 a second, paced at 72
// with a burst of 8).
func TestPairRateErrorSlowsOnlyThePair(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const pairRate = `{"error":{"message":"(#131056) (Business Account, Consumer Account) pair rate limit hit","type":"OAuthException","code":131056}}`
		var calls atomic.Int32
		fake := &providertest.Fake{Respond: func(req *http.Request, _ []byte) *http.Response {
			if calls.Add(1) == 1 {
				return providertest.Response(req, http.StatusBadRequest, []string{"Content-Type", "application/json"}, pairRate)
			}
			return providertest.Response(req, 200, nil, `{"messages":[{"id":"wamid.1"}]}`)
		}}
		c := pacer.New(fake, whatsapp.Preset(whatsapp.Standard)).Client()
		var pair sync.WaitGroup
		pair.Go(func() { sendText(t, c, "+15550100") }) // refused once, then retried after the pair's six seconds
		synctest.Wait()
		defer pair.Wait()
		start := time.Now()
		var wg sync.WaitGroup
		for g := range 20 {
			wg.Go(func() {
				for i := 0; time.Since(start) < time.Second; i++ {
					sendText(t, c, fmt.Sprintf("+1666%03d%04d", g, i))
				}
			})
		}
		wg.Wait()
		others := providertest.Times(fake.Requests(), func(s providertest.Sent) bool {
			return recipient(s) != "+15550100" && s.At.Sub(start) < time.Second
		})
		// 7 tokens left of the burst and 72 a second: 79. A cut and emptied
		// bucket would give about 61.
		if len(others) < 75 {
			t.Errorf("%d messages to other recipients in the second after a pair error, want about 79", len(others))
		}
	})
}
