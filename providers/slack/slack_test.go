package slack_test

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
	"github.com/pacer-go/pacer/providers/internal/providertest"
	"github.com/pacer-go/pacer/providers/slack"
)

func call(t *testing.T, c *http.Client, method, contentType, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "https://slack.com/api/"+method, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := providertest.Do(c, req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return resp
}

func channelOf(s providertest.Sent) string {
	if form, err := url.ParseQuery(string(s.Body)); err == nil && form.Get("channel") != "" {
		return form.Get("channel")
	}
	if i := strings.Index(string(s.Body), `"channel":"`); i >= 0 {
		rest := string(s.Body[i+len(`"channel":"`):])
		return rest[:strings.IndexByte(rest, '"')]
	}
	return ""
}

// chat.postMessage goes at most once a second per channel, channels apart;
// a Tier 2 method at most 20 times a minute.
func TestPresetNeverExceedsThePublishedLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &providertest.Fake{}
		c := pacer.New(fake, slack.Preset(nil)).Client()
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				for range 5 {
					call(t, c, "chat.postMessage", "application/json; charset=utf-8", `{"channel":"C1","text":"hi"}`)
				}
			})
			wg.Go(func() {
				for range 5 {
					call(t, c, "chat.postMessage", "application/x-www-form-urlencoded", "channel=C2&text=hi")
				}
			})
			wg.Go(func() {
				for range 10 {
					call(t, c, "conversations.list", "application/x-www-form-urlencoded", "limit=200")
				}
			})
		}
		wg.Wait()
		sent := fake.Requests()
		for _, ch := range []string{"C1", "C2"} {
			times := providertest.Times(sent, func(s providertest.Sent) bool { return channelOf(s) == ch })
			if len(times) != 15 {
				t.Fatalf("%d messages to %s, want 15", len(times), ch)
			}
			if got := providertest.MostInWindow(times, nil, time.Second); got > 1 {
				t.Errorf("%d messages to %s in one second, limit 1", got, ch)
			}
		}
		c1 := providertest.Times(sent, func(s providertest.Sent) bool { return channelOf(s) == "C1" })
		c2 := providertest.Times(sent, func(s providertest.Sent) bool { return channelOf(s) == "C2" })
		if !c1[0].Equal(c2[0]) {
			t.Errorf("the first messages to C1 and C2 went at %v and %v: channels should not wait for each other", c1[0], c2[0])
		}
		lists := providertest.Times(sent, func(s providertest.Sent) bool { return s.Path == "/api/conversations.list" })
		if got := providertest.MostInWindow(lists, nil, time.Minute); got > 20 {
			t.Errorf("%d conversations.list calls in a minute, limit 20 (Tier 2)", got)
		}
	})
}

// A 429's Retry-After pauses the method that got it, not the others.
func TestRetryAfterPausesTheMethod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var limited atomic.Bool
		limited.Store(true)
		fake := &providertest.Fake{Respond: func(req *http.Request, _ []byte) *http.Response {
			if req.URL.Path == "/api/users.list" && limited.Swap(false) {
				return providertest.Response(req, http.StatusTooManyRequests, []string{"Retry-After", "30"}, `{"ok":false,"error":"ratelimited"}`)
			}
			return providertest.Response(req, 200, nil, `{"ok":true}`)
		}}
		c := pacer.New(fake, slack.Preset(nil), pacer.WithoutRetry()).Client()
		start := time.Now()
		call(t, c, "users.list", "application/x-www-form-urlencoded", "")
		call(t, c, "users.info", "application/x-www-form-urlencoded", "user=U1")
		if waited := time.Since(start); waited != 0 {
			t.Errorf("users.info waited %v after users.list's 429", waited)
		}
		call(t, c, "users.list", "application/x-www-form-urlencoded", "")
		if waited := time.Since(start); waited < 30*time.Second {
			t.Errorf("users.list went again after %v, before its Retry-After of 30 s", waited)
		}
	})
}

func TestTiersAreOverridable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &providertest.Fake{}
		tiers := slack.MethodTiers()
		tiers["conversations.history"] = slack.Tier1 // a non-Marketplace app
		c := pacer.New(fake, slack.Preset(tiers)).Client()
		for range 3 {
			call(t, c, "conversations.history", "application/x-www-form-urlencoded", "channel=C1")
		}
		times := providertest.Times(fake.Requests(), func(providertest.Sent) bool { return true })
		if got := providertest.MostInWindow(times, nil, time.Minute); got > 1 {
			t.Errorf("%d calls in a minute, limit 1 (Tier 1)", got)
		}
	})
}

func TestTierLimits(t *testing.T) {
	want := map[slack.Tier]string{slack.Tier1: "1/1m0s", slack.Tier2: "20/1m0s", slack.Tier3: "50/1m0s", slack.Tier4: "100/1m0s", 5: "unlimited"}
	for tier, w := range want {
		if got := tier.Limit().String(); got != w {
			t.Errorf("Tier %d: %s, want %s", tier, got, w)
		}
	}
}
