// Command twilio sends an SMS through twilio-go with pacer underneath: the
// twilio preset caps the account's concurrent requests, paces each sender's
// messages per second, and retries a request Twilio refused with error
// 20429, which Twilio documents as never processed.
//
// twilio-go takes an *http.Client through its client.Client, passed to
// NewRestClientWithParams: its documented way to replace the HTTP client.
// twilio-go does not retry by itself, so pacer's retries are the only ones.
//
// Usage:
//
//	TWILIO_ACCOUNT_SID=AC... TWILIO_AUTH_TOKEN=... go run ./twilio -from +15551234567 -to +15557654321
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/pacer-go/pacer"
	pacertwilio "github.com/pacer-go/pacer/providers/twilio"
	"github.com/twilio/twilio-go"
	twclient "github.com/twilio/twilio-go/client"
	api "github.com/twilio/twilio-go/rest/api/v2010"
)

func main() {
	from := flag.String("from", "", "the sending number (E.164), short code or sender ID")
	to := flag.String("to", "", "the recipient (E.164)")
	flag.Parse()
	err := run(context.Background(), os.Stdout, os.Getenv("TWILIO_ACCOUNT_SID"), os.Getenv("TWILIO_AUTH_TOKEN"), *from, *to, nil)
	if err != nil {
		log.Fatal(err)
	}
}

// run sends one SMS, through base (http.DefaultTransport when nil) under
// pacer.
func run(_ context.Context, out io.Writer, accountSid, authToken, from, to string, base http.RoundTripper) error {
	t := pacer.New(base, pacertwilio.Preset())
	if err := t.Err(); err != nil {
		return err
	}
	httpClient := &http.Client{
		Transport: t,
		Timeout:   30 * time.Second, // long enough for pacer to wait out a sender's queue
		// As twilio-go's own default client: hand redirects back, not follow them.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	c := &twclient.Client{Credentials: twclient.NewCredentials(accountSid, authToken), HTTPClient: httpClient}
	c.SetAccountSid(accountSid)
	rc := twilio.NewRestClientWithParams(twilio.ClientParams{Client: c})

	// twilio-go's CreateMessage takes no context; pacer's waits are bounded
	// by the http.Client's Timeout instead.
	msg, err := rc.Api.CreateMessage((&api.CreateMessageParams{}).SetFrom(from).SetTo(to).SetBody("Your code is 271828"))
	if err != nil {
		return fmt.Errorf("sending a message: %w", err)
	}
	fmt.Fprintf(out, "sent message %s, status %s\n", deref(msg.Sid), deref(msg.Status))
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
