package whatsapp_test

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
	emu "github.com/pacer-go/pacer/providers/internal/emulator/whatsapp"
	"github.com/pacer-go/pacer/providers/internal/providertest"
	"github.com/pacer-go/pacer/providers/whatsapp"
)

func message(to string) *http.Request {
	body := fmt.Sprintf(`{"messaging_product":"whatsapp","recipient_type":"individual","to":%q,"type":"text","text":{"body":"hi"}}`, to)
	req, _ := http.NewRequest(http.MethodPost, messagesURL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return req
}

// Twenty recipients, each written to as fast as the pair rate allows, for
// ten minutes: the pair rate binds. Then a broadcast to ever new recipients
// from a number that also receives messages: the throughput binds, less
// what the inbound messages take. Both are refused nothing and use at
// least 85% of what the emulator allows.
func TestPresetAgainstTheEmulator(t *testing.T) {
	t.Run("twenty recipients", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			server := emu.New(emu.StandardMPS, 0)
			client := pacer.New(emulator.Transport(server), whatsapp.Preset(whatsapp.Standard)).Client()
			const run = 10 * time.Minute
			statuses := providertest.Drive(client, 20, run, func(w, _ int) *http.Request {
				return message(fmt.Sprintf("+1555%07d", w))
			})
			t.Logf("statuses %v", statuses)
			if refused := server.Tally.Refused(); len(refused) > 0 {
				t.Errorf("refused: %v", refused)
			}
			ceiling := float64(run / emu.PairInterval)
			for w := range 20 {
				to := fmt.Sprintf("+1555%07d", w)
				if got := server.Tally.Accepted(to); float64(got) < 0.85*ceiling {
					t.Errorf("%d messages to %s in %v, want at least 85%% of %.0f", got, to, run, ceiling)
				}
			}
		})
	})
	t.Run("broadcast while receiving", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			const inbound = 5
			server := emu.New(emu.CoexistenceMPS, inbound)
			reserve, err := whatsapp.Coexistence.ReserveInbound(inbound)
			if err != nil {
				t.Fatal(err)
			}
			client := pacer.New(emulator.Transport(server), whatsapp.Preset(whatsapp.Coexistence), reserve).Client()
			const run = time.Minute
			statuses := providertest.Drive(client, 50, run, func(w, n int) *http.Request {
				return message(fmt.Sprintf("+44%04d%06d", w, n))
			})
			t.Logf("statuses %v, inbound %d", statuses, server.Tally.Accepted(emu.KeyInbound))
			if refused := server.Tally.Refused(); len(refused) > 0 {
				t.Errorf("refused: %v", refused)
			}
			ceiling := float64(emu.CoexistenceMPS-inbound) * run.Seconds()
			if got := server.Tally.Accepted(emu.KeySent); float64(got) < 0.85*ceiling {
				t.Errorf("%d messages sent in %v, want at least 85%% of %.0f", got, run, ceiling)
			}
		})
	})
}

// Without the reservation, the inbound messages push the number over its
// throughput: Meta counts them, pacer cannot see them. This is why
// ReserveInbound exists, and it proves the emulator counts them.
func TestInboundMessagesSpendTheThroughput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		server := emu.New(emu.CoexistenceMPS, 5)
		client := pacer.New(emulator.Transport(server), whatsapp.Preset(whatsapp.Coexistence)).Client()
		providertest.Drive(client, 50, time.Minute, func(w, n int) *http.Request {
			return message(fmt.Sprintf("+44%04d%06d", w, n))
		})
		if server.Tally.Refused()["throughput"] == 0 {
			t.Error("no throughput refusal with 5 inbound messages a second on top of a paced 20: the emulator does not count inbound messages")
		}
	})
}

func TestReserveInbound(t *testing.T) {
	for _, n := range []int{-1, 20, 21} {
		if _, err := whatsapp.Coexistence.ReserveInbound(n); err == nil || !strings.Contains(err.Error(), "inbound rate must be") {
			t.Errorf("ReserveInbound(%d) on 20 mps: error %v, want one saying the inbound rate's bounds", n, err)
		}
	}
	if _, err := whatsapp.Coexistence.ReserveInbound(19); err != nil {
		t.Errorf("ReserveInbound(19) on 20 mps: %v", err)
	}
}

// The error codes whose rows on Meta's page could not be read stay
// unclassified: a final error, not back-pressure, not retried.
func TestUnverifiedCodesStayUnclassified(t *testing.T) {
	for _, code := range []int{131049, 131048, 80007} {
		body := fmt.Sprintf(`{"error":{"message":"(#%d) x","type":"OAuthException","code":%d}}`, code, code)
		if v := whatsapp.Classify(nil, []byte(body)); v.BackPressure || v.NeverProcessed || len(v.Scopes) > 0 {
			t.Errorf("code %d classified as %+v", code, v)
		}
		if _, ok := figures.Find(whatsapp.Figures(), "whatsapp", fmt.Sprintf("%s error code (left unclassified)", codeName(code))); !ok {
			t.Errorf("code %d is not in the source table", code)
		}
	}
}

func codeName(code int) string {
	return map[int]string{131049: "marketing limit", 131048: "spam rate limit", 80007: "account rate limit"}[code]
}

func TestFiguresHaveSources(t *testing.T) {
	if err := figures.Check(whatsapp.Figures()); err != nil {
		t.Fatal(err)
	}
}

// The preset's figures are the emulator's documented ones, each checked on
// its own: a figure above Meta's hides behind pacer's headroom in a run.
func TestFiguresMatchTheEmulator(t *testing.T) {
	want := map[string]float64{
		"whatsapp standard/messages per number":    emu.StandardMPS,
		"whatsapp high/messages per number":        emu.HighMPS,
		"whatsapp coexistence/messages per number": emu.CoexistenceMPS,
		"whatsapp/throughput error code":           emu.CodeThroughput,
		"whatsapp/pair interval":                   emu.PairInterval.Seconds(),
		"whatsapp/pair rate error code":            emu.CodePairRate,
	}
	if err := figures.Compare(whatsapp.Figures(), want); err != nil {
		t.Error(err)
	}
	for level, mps := range map[whatsapp.Throughput]int{whatsapp.Standard: emu.StandardMPS, whatsapp.High: emu.HighMPS, whatsapp.Coexistence: emu.CoexistenceMPS} {
		if got := level.Limit(); got != pacer.PerSecond(mps) {
			t.Errorf("level %d paces at %v, the emulator allows %d/s", level, got, mps)
		}
	}
}
