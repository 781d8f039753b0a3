package whatsapp_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/providers/internal/emulator"
	emu "github.com/pacer-go/pacer/providers/internal/emulator/whatsapp"
	"github.com/pacer-go/pacer/providers/internal/providertest"
	"github.com/pacer-go/pacer/providers/whatsapp"
)

// Three numbers of two levels behind one pool, broadcasting to ever new
// users for a minute: each number is paced at its own level, none is
// refused, and the pool sends about the sum of the three.
func TestPhoneNumbersAgainstTheEmulator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		numbers := []whatsapp.Number{
			{Name: "support", ID: "100000000000001", Throughput: whatsapp.Standard},
			{Name: "sales", ID: "100000000000002", Throughput: whatsapp.Standard},
			{Name: "shop", ID: "100000000000003", Throughput: whatsapp.Coexistence},
		}
		server := emu.New(emu.StandardMPS, 0)
		server.MPSOf = map[string]int{numbers[2].ID: emu.CoexistenceMPS}
		tr := pacer.New(emulator.Transport(server), whatsapp.PhoneNumbers(numbers...))
		if err := tr.Err(); err != nil {
			t.Fatal(err)
		}
		const run = time.Minute
		// The caller's path names a placeholder: the pool puts the number in.
		statuses := providertest.Drive(tr.Client(), 64, run, func(w, n int) *http.Request {
			body := fmt.Sprintf(`{"messaging_product":"whatsapp","to":"+1555%03d%04d","type":"text","text":{"body":"hi"}}`, w, n)
			req, _ := http.NewRequest(http.MethodPost, "https://graph.facebook.com/v21.0/POOL/messages", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			return req
		})
		t.Logf("statuses %v, refused %v", statuses, server.Tally.Refused())
		if refused := server.Tally.Refused(); len(refused) > 0 {
			t.Errorf("refused: %v", refused)
		}
		for i, mps := range []int{emu.StandardMPS, emu.StandardMPS, emu.CoexistenceMPS} {
			got, ceiling := server.Tally.Accepted(emu.KeyNumber+numbers[i].ID), float64(mps)*run.Seconds()
			if float64(got) < 0.85*ceiling || float64(got) > ceiling+float64(mps) {
				t.Errorf("%s sent %d messages in %v, want 85%% to 100%% of its %d a second (%.0f)", numbers[i].Name, got, run, mps, ceiling)
			}
		}
		st := tr.Stats()
		for i, m := range st.Members {
			if m.Name != numbers[i].Name || m.Admitted == 0 {
				t.Errorf("Stats().Members[%d] = %+v, want %s, with calls", i, m, numbers[i].Name)
			}
		}
	})
}

// A number that draws a 130429 anyway (its inbound messages spent the
// throughput) is slowed alone: the message goes to another number.
func TestPhoneNumbersThrottledNumberRotates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := &providertest.Fake{Respond: func(req *http.Request, _ []byte) *http.Response {
			if strings.Contains(req.URL.Path, "/111/") {
				return providertest.Response(req, 400, nil, `{"error":{"message":"(#130429) Rate limit hit","type":"OAuthException","code":130429}}`)
			}
			return providertest.Response(req, 200, nil, `{"messages":[{"id":"wamid.1"}]}`)
		}}
		tr := pacer.New(fake, whatsapp.PhoneNumbers(
			whatsapp.Number{Name: "a", ID: "111", Throughput: whatsapp.Standard},
			whatsapp.Number{Name: "b", ID: "222", Throughput: whatsapp.Standard}))
		for i := range 20 {
			req, _ := http.NewRequest(http.MethodPost, "https://graph.facebook.com/v21.0/POOL/messages", strings.NewReader(fmt.Sprintf(`{"to":"+1555000%04d"}`, i)))
			resp, err := providertest.Do(tr.Client(), req)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("message %d: %v %v, want it sent through b", i, resp, err)
			}
		}
		// Each 130429 cuts a's own pace, so b, with more headroom, takes
		// the calls after the first few; were a's scope not cut, the two
		// would take turns.
		if a := tr.Stats().Members[0]; a.Refused == 0 || a.Refused > 5 {
			t.Errorf("a = %+v: want a few 130429s, then its own scope slowed", a)
		}
		for _, s := range fake.Requests() {
			if s.Path != "/v21.0/111/messages" && s.Path != "/v21.0/222/messages" {
				t.Errorf("sent to %s: the placeholder was not replaced", s.Path)
			}
		}
	})
}

func TestPhoneNumbersRefusesABadNumber(t *testing.T) {
	for _, n := range []whatsapp.Number{{Name: "x", Throughput: whatsapp.High}, {Name: "y", ID: "1", Throughput: 7}} {
		if err := pacer.New(nil, whatsapp.PhoneNumbers(n)).Err(); err == nil {
			t.Errorf("%+v: no error", n)
		}
	}
}
