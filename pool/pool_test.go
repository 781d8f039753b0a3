package pool

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestFormFieldSetsTheFieldOnAForm(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "https://api.test/Messages.json", strings.NewReader("To=%2B15550001&Body=hi&From=old"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if err := FormField("From", "+15559999")(req); err != nil {
		t.Fatal(err)
	}
	for _, read := range []func() (io.ReadCloser, error){func() (io.ReadCloser, error) { return req.Body, nil }, req.GetBody} {
		body, _ := read()
		b, _ := io.ReadAll(body)
		form, _ := url.ParseQuery(string(b))
		if form.Get("From") != "+15559999" || form.Get("To") != "+15550001" || form.Get("Body") != "hi" || len(form["From"]) != 1 {
			t.Errorf("form = %v, want From replaced and the rest kept", form)
		}
		if req.ContentLength != int64(len(b)) {
			t.Errorf("ContentLength = %d, body %d bytes", req.ContentLength, len(b))
		}
	}
}

func TestFormFieldRefusesWhatIsNotAForm(t *testing.T) {
	req, _ := http.NewRequest(http.MethodPost, "https://api.test/", strings.NewReader(`{"a":1}`))
	req.Header.Set("Content-Type", "application/json")
	err := FormField("From", "+15559999")(req)
	if err == nil || !strings.Contains(err.Error(), "application/x-www-form-urlencoded") {
		t.Fatalf("err = %v, want one that names the content type a form needs", err)
	}
	if strings.Contains(err.Error(), "+15559999") {
		t.Errorf("the error shows the value: %v", err)
	}
}

func TestHeaderAndURL(t *testing.T) {
	req, _ := http.NewRequest(http.MethodGet, "https://old.test/openai/deployments/x/chat", nil)
	req.Host = "old.test"
	Bearer("tok")(req)
	Header("api-key", "k")(req)
	URL(func(u *url.URL) { u.Host = "eastus.test"; u.Path = strings.Replace(u.Path, "/x/", "/gpt-east/", 1) })(req)
	if req.Header.Get("Authorization") != "Bearer tok" || req.Header.Get("api-key") != "k" {
		t.Errorf("headers = %v", req.Header)
	}
	if req.URL.String() != "https://eastus.test/openai/deployments/gpt-east/chat" || req.Host != "" {
		t.Errorf("URL = %v, Host = %q; want the rewritten URL, its host the one sent", req.URL, req.Host)
	}
}
