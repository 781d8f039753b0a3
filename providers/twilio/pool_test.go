package twilio_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/internal/emulator"
	"github.com/pacer-go/pacer/providers/internal/providertest"
	"github.com/pacer-go/pacer/providers/twilio"
)

// The workload's three senders behind one pool, driven for five minutes
// with long and short messages (3, 1, 1 and 2 segments) whose form names
// no From: each sender is paced at its own type's rate in segments
// (Twilio's queue for it never holds more than SenderBurst segments, and
// it sends at least 85% of them), the account's cap on requests in flight
// holds across the three (no 20429), and every sender carries messages.
func TestSenderPoolAgainstTheEmulator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server := newAccount(t)
		pooled := make([]twilio.Sender, len(senders))
		for i, s := range senders {
			pooled[i] = twilio.Sender{Name: fmt.Sprintf("sender-%d", i), From: s.from}
		}
		tr := pacer.New(emulator.Transport(server), twilio.SenderPool(pooled...),
			pacer.WithScope(pacer.Scope{Name: twilio.ScopeAccount, Concurrency: accountCap}))
		if err := tr.Err(); err != nil {
			t.Fatal(err)
		}
		const run = 5 * time.Minute
		statuses := providertest.Drive(tr.Client(), 32, run, func(w, n int) *http.Request {
			form := url.Values{"To": {"+15557654321"}, "Body": {bodies[(w+n)%len(bodies)]}}.Encode()
			req, _ := http.NewRequest(http.MethodPost, messagesURL, strings.NewReader(form))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return req
		})
		t.Logf("statuses %v, refused %v", statuses, server.Tally.Refused())
		if refused := server.Tally.Refused(); len(refused) > 0 {
			t.Errorf("refused: %v", refused)
		}
		for _, s := range senders {
			ceiling := float64(s.mps) * run.Seconds()
			got := server.Tally.Units(s.from)
			t.Logf("%s: %d segments (%.1f%% of %.0f), at most %d queued", s.from, got, 100*float64(got)/ceiling, ceiling, server.MostQueued(s.from))
			if float64(got) < 0.85*ceiling {
				t.Errorf("%s: %d segments in %v, want at least 85%% of %.0f", s.from, got, run, ceiling)
			}
			if q := server.MostQueued(s.from); q > twilio.SenderBurst {
				t.Errorf("%s: %d segments queued at Twilio at once: the sender was paced above its rate", s.from, q)
			}
		}
		st := tr.Stats()
		for i, m := range st.Members {
			if m.Admitted == 0 || strings.Contains(fmt.Sprintf("%+v", m), senders[i].from) {
				t.Errorf("Stats().Members[%d] = %+v: want calls, and no number shown", i, m)
			}
		}
	})
}

func TestSenderPoolRefusesASenderWithoutFrom(t *testing.T) {
	if err := pacer.New(nil, twilio.SenderPool(twilio.Sender{Name: "a"})).Err(); err == nil {
		t.Fatal("no error")
	}
}
