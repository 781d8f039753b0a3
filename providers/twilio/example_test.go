package twilio_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/twilio"
)

func Example() {
	// Preset takes Twilio's own settings only (it has none), as every
	// provider's does; pacer's options go to pacer.New beside it, and one
	// given after the preset wins.
	t := pacer.New(nil, twilio.Preset(),
		// An account whose concurrency Twilio raised.
		pacer.WithScope(pacer.Scope{Name: twilio.ScopeAccount, Concurrency: 200}),
	)
	if err := t.Err(); err != nil {
		panic(err)
	}
	_ = t.Client() // give it to twilio-go's client.Client{Client: *t.Client()}

	for _, from := range []string{"+15551234567", "+18005550100", "12345"} {
		scope := twilio.SenderScope(from)
		limit, _ := twilio.Throughput(scope)
		fmt.Println(from, scope, limit)
	}
	fmt.Println(twilio.Segments(strings.Repeat("x", 161)), "segments")
	// Output:
	// +15551234567 twilio/messages/long-code 1/1s burst 24
	// +18005550100 twilio/messages/toll-free 3/1s burst 24
	// 12345 twilio/messages/short-code 100/1s burst 24
	// 2 segments
}

// Three numbers of one account behind one client: each message goes out
// from one of them, at that number's own rate, and the account's cap on
// requests in flight is charged once whichever number sends.
func ExampleSenderPool() {
	t := pacer.New(nil, twilio.SenderPool(
		twilio.Sender{Name: "long-1", From: "+15551230001"},
		twilio.Sender{Name: "long-2", From: "+15551230002"},
		twilio.Sender{Name: "toll-free", From: "+18885550100"}))
	if err := t.Err(); err != nil {
		panic(err)
	}
	// The form leaves From out: the pool sets it.
	form := url.Values{"To": {"+15557654321"}, "Body": {"Your code is 123456"}}
	req, _ := http.NewRequest(http.MethodPost, "https://api.twilio.com/2010-04-01/Accounts/AC0123/Messages.json", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	_ = req // t.Client().Do(req)
	for _, s := range t.Stats().Scopes {
		if strings.HasPrefix(s.Name, "twilio/sender/") {
			fmt.Printf("%s: %.1f messages a second\n", s.Name, s.Rate)
		}
	}
	// Output:
	// twilio/sender/long-1: 0.9 messages a second
	// twilio/sender/long-2: 0.9 messages a second
	// twilio/sender/toll-free: 2.7 messages a second
}
