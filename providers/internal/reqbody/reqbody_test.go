package reqbody

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func newRequest(t *testing.T, contentType, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://api.test/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return req
}

func TestFieldLeavesTheBodyToBeSent(t *testing.T) {
	req := newRequest(t, "application/x-www-form-urlencoded", "From=%2B15551234567&Body=hi")
	if got := Field(req, "From"); got != "+15551234567" {
		t.Fatalf("From = %q", got)
	}
	sent, _ := io.ReadAll(req.Body)
	if string(sent) != "From=%2B15551234567&Body=hi" {
		t.Fatalf("the body to send was consumed: %q", sent)
	}
}

func TestField(t *testing.T) {
	cases := []struct {
		name, contentType, body, field, want string
	}{
		{"form", "application/x-www-form-urlencoded; charset=utf-8", "channel=C1&text=x", "channel", "C1"},
		{"json", "application/json; charset=utf-8", `{"channel":"C2","text":"x"}`, "channel", "C2"},
		{"json without a content type", "", `{"to":"+4912345"}`, "to", "+4912345"},
		{"json field not a string", "application/json", `{"channel":7}`, "channel", ""},
		{"absent", "application/json", `{"text":"x"}`, "channel", ""},
		{"garbage json", "application/json", `{"channel":`, "channel", ""},
		{"garbage form", "application/x-www-form-urlencoded", "%zz", "channel", ""},
		{"other media type", "text/plain", "channel=C1", "channel", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Field(newRequest(t, c.contentType, c.body), c.field); got != c.want {
				t.Fatalf("Field = %q, want %q", got, c.want)
			}
		})
	}
}

func TestPeekWithoutGetBodyReadsNothing(t *testing.T) {
	req := newRequest(t, "application/json", `{"channel":"C1"}`)
	req.GetBody = nil
	if got := Field(req, "channel"); got != "" {
		t.Fatalf("Field = %q from a body that cannot be replayed", got)
	}
	if b, _ := io.ReadAll(req.Body); len(b) == 0 {
		t.Fatal("the body was consumed")
	}
}
