package twilio_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/providers/figures"
	"github.com/pacer-go/pacer/providers/internal/providertest"
	"github.com/pacer-go/pacer/providers/twilio"
)

const messagesURL = "https://api.twilio.com/2010-04-01/Accounts/AC0123/Messages.json"

func sendSMS(t *testing.T, c *http.Client, from, body string) (*http.Response, error) {
	t.Helper()
	form := url.Values{"From": {from}, "To": {"+15557654321"}, "Body": {body}}.Encode()
	req, err := http.NewRequest(http.MethodPost, messagesURL, strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return providertest.Do(c, req)
}

// Each sender's throughput holds in every one-second window, counted in
// segments, and the fake received every body whole.
func TestPresetPacesEachSender(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &providertest.Fake{}
		c := pacer.New(fake, twilio.Preset()).Client()
		long := strings.Repeat("a", 300) // two GSM-7 segments
		senders := map[string]string{
			"+15551234567":  "hi",    // long code: 1 segment a second
			"+15559876543":  long,    // long code: 2 segments, so one message every 2 s
			"+18005550100":  "hi",    // toll-free: 3 a second
			"12345":         "hi",    // short code: 100 a second
			"+442071838750": "hello", // outside North America: 10 a second
		}
		var wg sync.WaitGroup
		for from, body := range senders {
			for range 2 {
				wg.Go(func() {
					for range 6 {
						if resp, err := sendSMS(t, c, from, body); err != nil || resp.StatusCode != 200 {
							t.Errorf("send from %s: %v %v", from, resp, err)
						}
					}
				})
			}
		}
		wg.Wait()
		sent := fake.Requests()
		for from, body := range senders {
			var times []time.Time
			var costs []int64
			for _, s := range sent {
				form, _ := url.ParseQuery(string(s.Body))
				if form.Get("From") != from {
					continue
				}
				if form.Get("Body") != body {
					t.Fatalf("the fake got body %q from %s, want %q", form.Get("Body"), from, body)
				}
				times = append(times, s.At)
				costs = append(costs, int64(twilio.Segments(body)))
			}
			if len(times) != 12 {
				t.Fatalf("%d messages from %s, want 12", len(times), from)
			}
			limit, _ := twilio.Throughput(twilio.SenderScope(from))
			if wait := longestQueued(times, costs, limit); wait > time.Duration(twilio.SenderBurst)*time.Second/time.Duration(limit.Count) {
				t.Errorf("a message from %s waited %v in Twilio's queue", from, wait)
			}
			if most := providertest.MostInWindow(times, costs, 10*time.Second); most > int64(10*limit.Count+twilio.SenderBurst) {
				t.Errorf("%s sent %d segments in ten seconds, limit %d", from, most, 10*limit.Count)
			}
		}
	})
}

// longestQueued returns the longest a message waits in Twilio's queue for
// its sender, which releases limit.Count segments a second in arrival order.
func longestQueued(times []time.Time, costs []int64, limit pacer.Limit) time.Duration {
	var free time.Time // when the sender has released everything before
	var longest time.Duration
	for i, at := range times {
		start := at
		if free.After(at) {
			start = free
		}
		longest = max(longest, start.Sub(at))
		free = start.Add(time.Duration(costs[i]) * time.Second / time.Duration(limit.Count))
	}
	return longest
}

func TestPresetCapsTheAccountsConcurrentRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var peak providertest.Peak
		fake := &providertest.Fake{Respond: func(req *http.Request, _ []byte) *http.Response {
			peak.Enter()
			time.Sleep(time.Second)
			peak.Leave()
			return providertest.Response(req, 200, nil, "{}")
		}}
		c := pacer.New(fake, twilio.Preset(), pacer.WithScope(pacer.Scope{Name: twilio.ScopeAccount, Concurrency: 5})).Client()
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				resp, err := c.Get("https://api.twilio.com/2010-04-01/Accounts/AC0123/Calls.json")
				if err == nil {
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
		if got := peak.Most(); got != 5 {
			t.Fatalf("%d requests in flight at most, want the cap, 5", got)
		}
	})
}

// The documented 20429 body, and a 500, for a Messages POST.
func TestPresetRetriesA20429ButNotA500(t *testing.T) {
	const tooMany = `{"code": 20429, "message": "Too Many Requests", "more_info": "https://www.twilio.com/docs/errors/20429", "status": 429}`
	const serverError = `{"code": 20500, "message": "An internal server error has occurred", "more_info": "https://www.twilio.com/docs/errors/20500", "status": 500}`
	cases := []struct {
		name     string
		status   int
		body     string
		attempts int
	}{
		{"20429 was never processed", http.StatusTooManyRequests, tooMany, 2},
		{"a 429 without 20429 may have been", http.StatusTooManyRequests, `{"code": 14107, "status": 429}`, 1},
		{"a 500 may have been processed", http.StatusInternalServerError, serverError, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int32
				fake := &providertest.Fake{Respond: func(req *http.Request, _ []byte) *http.Response {
					if calls.Add(1) == 1 {
						return providertest.Response(req, c.status, []string{"Content-Type", "application/json"}, c.body)
					}
					return providertest.Response(req, http.StatusCreated, nil, `{"sid":"SM1"}`)
				}}
				client := pacer.New(fake, twilio.Preset()).Client()
				resp, err := sendSMS(t, client, "+15551234567", "hi")
				if err != nil {
					t.Fatal(err)
				}
				sent := fake.Requests()
				if len(sent) != c.attempts {
					t.Fatalf("%d attempts, want %d (last status %d)", len(sent), c.attempts, resp.StatusCode)
				}
				for i, s := range sent {
					if form, _ := url.ParseQuery(string(s.Body)); form.Get("Body") != "hi" {
						t.Fatalf("attempt %d sent body %q", i+1, s.Body)
					}
				}
			})
		})
	}
}

func TestSenderScope(t *testing.T) {
	cases := map[string]string{
		"+15551234567":      twilio.ScopeLongCode,
		"+18885550100":      twilio.ScopeTollFree,
		"+18335550100":      twilio.ScopeTollFree,
		"12345":             twilio.ScopeShortCode,
		"123456":            twilio.ScopeShortCode,
		"1234":              twilio.ScopeInternational,
		"+4930123456":       twilio.ScopeInternational,
		"ACME":              twilio.ScopeInternational,
		"whatsapp:+1555123": twilio.ScopeInternational,
		"+1555123456x":      twilio.ScopeInternational,
	}
	for from, want := range cases {
		if got := twilio.SenderScope(from); got != want {
			t.Errorf("SenderScope(%q) = %q, want %q", from, got, want)
		}
	}
}

func TestSegments(t *testing.T) {
	cases := []struct {
		body string
		want int
	}{
		{"", 1},
		{strings.Repeat("a", 160), 1},
		{strings.Repeat("a", 161), 2},
		{strings.Repeat("a", 306), 2},
		{strings.Repeat("a", 307), 3},
		{strings.Repeat("€", 80), 1},  // extension characters take two septets
		{strings.Repeat("€", 81), 2},  // 162 septets
		{strings.Repeat("é", 160), 1}, // é is in GSM-7
		{strings.Repeat("ł", 70), 1},  // ł is not: UCS-2
		{strings.Repeat("ł", 71), 2},
		{strings.Repeat("😀", 35), 1}, // two UTF-16 units each
		{strings.Repeat("😀", 36), 2},
	}
	for _, c := range cases {
		if got := twilio.Segments(c.body); got != c.want {
			t.Errorf("Segments(%d runes of %q) = %d, want %d", len([]rune(c.body)), []rune(c.body + " ")[0], got, c.want)
		}
	}
}

func TestRouteIgnoresWhatIsNotAMessagesPost(t *testing.T) {
	for _, u := range []string{
		"https://api.twilio.com/2010-04-01/Accounts/AC0123/Calls.json",
		"https://api.twilio.com/2010-04-01/Accounts/AC0123/Messages/SM1.json",
		"https://api.twilio.com/2010-04-01/Accounts//Messages.json",
	} {
		req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader("From=%2B15551234567"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if got := twilio.Route(req, nil); len(got) != 1 || got[0].Scope != twilio.ScopeAccount {
			t.Errorf("POST %s: charges %v, want the account scope only", u, got)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, messagesURL, strings.NewReader("MessagingServiceSid=MG1&Body=hi"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if got := twilio.Route(req, nil); len(got) != 1 {
		t.Errorf("a Messaging Service message: charges %v, want the account scope only", got)
	}
}

// A 20429 says the account has too many requests in flight: it lowers the
// account's cap on calls in flight, and leaves the sender's pace alone.
func TestA20429LowersTheAccountsConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const tooMany = `{"code": 20429, "message": "Too Many Requests", "more_info": "https://www.twilio.com/docs/errors/20429", "status": 429}`
		var calls atomic.Int32
		fake := &providertest.Fake{Respond: func(req *http.Request, _ []byte) *http.Response {
			if calls.Add(1) == 1 {
				return providertest.Response(req, http.StatusTooManyRequests, []string{"Content-Type", "application/json"}, tooMany)
			}
			return providertest.Response(req, http.StatusCreated, nil, `{"sid":"SM1"}`)
		}}
		var mu sync.Mutex
		rejected := map[string]int{}
		tr := pacer.New(fake, twilio.Preset(), pacer.WithObserver(observe.Func(func(e observe.Event) {
			if e.Kind == observe.EventRejected {
				mu.Lock()
				rejected[e.Scope]++
				mu.Unlock()
			}
		})))
		if _, err := sendSMS(t, tr.Client(), "+15551234567", "hi"); err != nil {
			t.Fatal(err)
		}
		for _, s := range tr.Stats().Scopes {
			if s.Name == twilio.ScopeAccount && (s.Factor < 0.5 || s.Factor > 0.52) {
				t.Errorf("the account's share of its slots is %v after a 20429 and half a second, want just above 0.5: a call refused alone halves the cap", s.Factor)
			}
		}
		if len(rejected) != 1 || rejected[twilio.ScopeAccount] != 1 {
			t.Errorf("refusals reported for %v, want the account's alone", rejected)
		}
	})
}

// Twilio accepts a body of up to 1,600 characters: a long message, GSM-7
// or UCS-2, is sent (paced by its segments), not refused with
// ErrExceedsCapacity, as it was when a sender's bucket held 10 segments.
func TestALongMessageIsSent(t *testing.T) {
	for name, body := range map[string]string{
		"GSM-7 of 1,600 characters": strings.Repeat("a", twilio.MaxBodyChars),
		"UCS-2 of 1,600 characters": strings.Repeat("я", twilio.MaxBodyChars),
		"UCS-2 of 700 characters":   strings.Repeat("é€я", 700/3),
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := &providertest.Fake{}
				c := pacer.New(fake, twilio.Preset()).Client()
				form := url.Values{"From": {"+15005550006"}, "To": {"+15005550001"}, "Body": {body}}.Encode()
				req, _ := http.NewRequest(http.MethodPost, "https://api.twilio.com/2010-04-01/Accounts/AC1/Messages.json", strings.NewReader(form))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				resp, err := providertest.Do(c, req)
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("a %d-segment message: resp %v, err %v", twilio.Segments(body), resp, err)
				}
			})
		})
	}
}

func TestFiguresHaveSources(t *testing.T) {
	if err := figures.Check(twilio.Figures()); err != nil {
		t.Fatal(err)
	}
}
