package twilio_test

import (
	"fmt"
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
