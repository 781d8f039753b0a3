package twilio_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/figures"
	"github.com/pacer-go/pacer/providers/internal/emulator"
	emu "github.com/pacer-go/pacer/providers/internal/emulator/twilio"
	"github.com/pacer-go/pacer/providers/internal/providertest"
	"github.com/pacer-go/pacer/providers/twilio"
)

// The workload's three senders, with the throughput Twilio documents for
// each, and the account cap on concurrent requests the test assumes (Twilio
// publishes none: the preset and the emulator are given the same).
var senders = []struct {
	from string
	mps  int
}{
	{"+15551230001", emu.LongCodeMPS},
	{"+18885550100", emu.TollFreeMPS},
	{"55555", emu.ShortCodeMPS},
}

const accountCap = 10

// Long and short bodies, GSM-7 and UCS-2: 3, 1, 1 and 2 segments. The
// UCS-2 body fits one segment, the size Twilio's pages give; the size of
// a longer UCS-2 message's segments (67) was not read on them.
var bodies = []string{
	strings.Repeat("Your order has shipped. ", 17), // 408 GSM-7 characters
	"Your code is 123456",
	"Ваш код 123456",
	strings.Repeat("€", 100), // extension characters: 200 septets
}

func message(from string, n int) *http.Request {
	form := url.Values{"From": {from}, "To": {"+15557654321"}, "Body": {bodies[n%len(bodies)]}}.Encode()
	req, _ := http.NewRequest(http.MethodPost, messagesURL, strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req
}

// newAccount returns the emulated account with the workload's senders,
// answering in 50 ms and allowing accountCap requests in flight.
func newAccount(t *testing.T) *emu.Server {
	server := emu.New()
	server.Concurrency, server.Latency = accountCap, 50*time.Millisecond
	for _, s := range senders {
		if err := server.AddSender(s.from, s.mps); err != nil {
			t.Fatal(err)
		}
	}
	return server
}

// drive sends the workload through client for run: per sender, more
// workers than its throughput needs, so that the preset, not the
// workload, sets the pace.
func drive(client *http.Client, run time.Duration) map[int]int {
	workers := []int{2, 4, 8} // long code, toll-free, short code
	var owner []int
	for i, n := range workers {
		for range n {
			owner = append(owner, i)
		}
	}
	return providertest.Drive(client, len(owner), run, func(w, n int) *http.Request {
		return message(senders[owner[w]].from, n+w)
	})
}

// The preset, driven for ten minutes with long and short SMS from a long
// code, a toll-free number and a short code against an emulator of
// Twilio's documented behaviour, is refused nothing (no 20429, no 21611)
// and gets at least 85% of each sender's documented throughput, counted in
// the segments the emulator accepted. Twilio queues rather than refuses
// what exceeds a sender's rate, so the other half of the criterion is the
// queue: at no time does a sender's queue at Twilio hold more than the
// preset's SenderBurst segments, which is the backlog the preset means to
// allow (one bucket, so that the longest message Twilio accepts can pass),
// and so no message waits there longer than SenderBurst segments take to
// release.
func TestPresetAgainstTheEmulator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server := newAccount(t)
		client := pacer.New(emulator.Transport(server), twilio.Preset(),
			pacer.WithScope(pacer.Scope{Name: twilio.ScopeAccount, Concurrency: accountCap}),
		).Client()
		const run = 10 * time.Minute
		statuses := drive(client, run)
		t.Logf("statuses %v", statuses)
		if refused := server.Tally.Refused(); len(refused) > 0 {
			t.Errorf("refused: %v", refused)
		}
		// Status 0 counts the calls pacer declined because their wait
		// would outlast the run's deadline, a worker at most each.
		for code, n := range statuses {
			if code != http.StatusCreated && (code != 0 || n > 14) {
				t.Errorf("statuses %v, want 201, and at most one declined wait for each of the 14 workers", statuses)
			}
		}
		for _, s := range senders {
			ceiling := float64(s.mps) * run.Seconds()
			got := server.Tally.Units(s.from)
			t.Logf("%s: %d segments in %d messages (%.1f%% of %.0f), at most %d queued, longest wait %v",
				s.from, got, server.Tally.Accepted(s.from), 100*float64(got)/ceiling, ceiling, server.MostQueued(s.from), server.LongestWait(s.from))
			if float64(got) < 0.85*ceiling {
				t.Errorf("%s: %d segments in %v, want at least 85%% of %.0f", s.from, got, run, ceiling)
			}
			if q := server.MostQueued(s.from); q > twilio.SenderBurst {
				t.Errorf("%s: %d segments queued at Twilio at once, the preset means to allow %d", s.from, q, twilio.SenderBurst)
			}
			if wait, most := server.LongestWait(s.from), time.Duration(twilio.SenderBurst)*time.Second/time.Duration(s.mps); wait > most {
				t.Errorf("%s: a message waited %v in Twilio's queue, want at most %v", s.from, wait, most)
			}
		}
	})
}

// A sender figure above Twilio's is not refused — Twilio queues — so it
// shows as a queue that grows past SenderBurst: the criterion above fails
// for it. Here the long code is paced at 2 segments a second.
func TestATooHighSenderFigureBuildsTwiliosQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server := newAccount(t)
		client := pacer.New(emulator.Transport(server), twilio.Preset(),
			pacer.WithScope(pacer.Scope{Name: twilio.ScopeAccount, Concurrency: accountCap}),
			pacer.WithScope(pacer.Scope{Name: twilio.ScopeLongCode, Unit: twilio.UnitSegments,
				Limit: pacer.Limit{Count: 2, Per: time.Second, Burst: twilio.SenderBurst}}),
		).Client()
		drive(client, 2*time.Minute)
		long := senders[0].from
		if q := server.MostQueued(long); q <= twilio.SenderBurst {
			t.Errorf("%d segments queued at most with the long code paced at twice its rate: the emulator does not queue", q)
		}
		if refused := server.Tally.Refused(); len(refused) > 0 {
			t.Errorf("refused: %v; Twilio queues within 10 hours of segments", refused)
		}
	})
}

// A preset cap on requests in flight above the account's meets 429s with
// error 20429: the preset retries each (Twilio did not process it) and
// lowers its cap, so that every message is created once, the refusals stay
// few, and the senders keep most of their throughput.
func TestA20429FromTheEmulatorLowersTheCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server := newAccount(t)
		client := pacer.New(emulator.Transport(server), twilio.Preset(),
			pacer.WithScope(pacer.Scope{Name: twilio.ScopeAccount, Concurrency: 2 * accountCap}),
		).Client()
		const run = 2 * time.Minute
		// More short-code workers than the account's cap, so that the
		// preset's cap of 20 is reached.
		statuses := providertest.Drive(client, 3*accountCap, run, func(w, n int) *http.Request {
			return message(senders[2].from, n+w)
		})
		refused := server.Tally.Refused()
		t.Logf("statuses %v, refused %v", statuses, refused)
		if refused[emu.RefusedConcurrency] == 0 {
			t.Fatal("no 20429 with the preset's cap at twice the account's: the emulator does not cap concurrency")
		}
		if refused[emu.RefusedConcurrency] > 20 {
			t.Errorf("%d refusals: the preset did not lower its cap", refused[emu.RefusedConcurrency])
		}
		if statuses[http.StatusTooManyRequests] > 0 {
			t.Errorf("%d 429s reached the caller: a 20429 is retried", statuses[http.StatusTooManyRequests])
		}
		ceiling := float64(emu.ShortCodeMPS) * run.Seconds()
		if got := server.Tally.Units(senders[2].from); float64(got) < 0.85*ceiling {
			t.Errorf("%d segments in %v, want at least 85%% of %.0f", got, run, ceiling)
		}
	})
}

// Without pacer, a long code's queue fills: Twilio accepts 10 hours of its
// segments, 36,000, and refuses the next message with 21611. The preset's
// Classify leaves that error alone (it is not about concurrency).
func TestTheEmulatorQueuesThenRefuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server := emu.New()
		long := senders[0].from
		if err := server.AddSender(long, emu.LongCodeMPS); err != nil {
			t.Fatal(err)
		}
		client := &http.Client{Transport: emulator.Transport(server)}
		body := strings.Repeat("a", 3*emu.GSM7MultiSegment) // 3 segments
		var last *http.Response
		for n := 0; ; n++ {
			form := url.Values{"From": {long}, "To": {"+15557654321"}, "Body": {body}}.Encode()
			req, _ := http.NewRequest(http.MethodPost, messagesURL, strings.NewReader(form))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusCreated {
				last = resp
				if want := int(emu.QueueWindow.Seconds()) * emu.LongCodeMPS / 3; n != want {
					t.Errorf("refused after %d messages of 3 segments, want %d", n, want)
				}
				break
			}
			resp.Body.Close()
		}
		b := new(strings.Builder)
		_, _ = io.Copy(b, last.Body)
		if last.StatusCode != http.StatusBadRequest || !strings.Contains(b.String(), `"code":21611`) {
			t.Errorf("a full queue answered %d %s, want 400 with error 21611", last.StatusCode, b)
		}
		if v := twilio.Classify(last, []byte(b.String())); v.NeverProcessed || v.BackPressure || len(v.Scopes) > 0 {
			t.Errorf("21611 classified as %+v", v)
		}
	})
}

// The preset's segment count agrees with the emulator's on the workload's
// bodies and on each side of every verified boundary.
func TestSegmentsAgreeWithTheEmulator(t *testing.T) {
	cases := append([]string{""}, bodies...)
	for _, n := range []int{emu.GSM7SingleSegment, emu.GSM7SingleSegment + 1, 2 * emu.GSM7MultiSegment, 2*emu.GSM7MultiSegment + 1, emu.MaxBodyChars} {
		cases = append(cases, strings.Repeat("a", n))
	}
	for _, n := range []int{emu.UCS2SingleSegment, emu.UCS2SingleSegment + 1} {
		cases = append(cases, strings.Repeat("я", n))
	}
	for _, body := range cases {
		if got, want := twilio.Segments(body), emu.Segments(body); got != want {
			t.Errorf("Segments(%d runes of %q) = %d, the emulator counts %d", len([]rune(body)), []rune(body + " ")[0], got, want)
		}
	}
}

// The preset's figures are the emulator's documented ones, each checked on
// its own, so that a wrong figure fails here even where a run would hide it
// (153 GSM-7 characters a segment read as 160 still makes the workload's
// long body three segments).
// The UCS-2 segment of a longer message (67) is left out: neither side has
// read it on Twilio's pages, so agreeing on it proves nothing.
func TestFiguresMatchTheEmulator(t *testing.T) {
	want := map[string]float64{
		"twilio/long code segments":                               emu.LongCodeMPS,
		"twilio/toll-free segments":                               emu.TollFreeMPS,
		"twilio/short code segments":                              emu.ShortCodeMPS,
		"twilio/international sender segments":                    emu.InternationalMPS,
		"twilio/GSM-7 characters in one segment":                  emu.GSM7SingleSegment,
		"twilio/GSM-7 characters per segment of a longer message": emu.GSM7MultiSegment,
		"twilio/UCS-2 characters in one segment":                  emu.UCS2SingleSegment,
		"twilio/body length":                                      emu.MaxBodyChars,
		"twilio/sender queue":                                     emu.QueueWindow.Hours(),
		"twilio/concurrency error code":                           emu.CodeTooManyRequests,
	}
	fs := twilio.Figures()
	if err := figures.Compare(fs, want); err != nil {
		t.Error(err)
	}
	for key := range want {
		if f, _ := figures.Find(fs, "twilio", strings.TrimPrefix(key, "twilio/")); !f.Verified() {
			t.Errorf("%s: the emulator carries it as documented, the table says it is unverified", key)
		}
	}
	for _, s := range []struct {
		scope string
		mps   int
	}{{twilio.ScopeLongCode, emu.LongCodeMPS}, {twilio.ScopeTollFree, emu.TollFreeMPS}, {twilio.ScopeShortCode, emu.ShortCodeMPS}, {twilio.ScopeInternational, emu.InternationalMPS}} {
		if l, _ := twilio.Throughput(s.scope); l.Count != s.mps || l.Per != time.Second {
			t.Errorf("%s paces at %v, the emulator releases %d segments a second", s.scope, l, s.mps)
		}
	}
}
