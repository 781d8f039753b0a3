package main

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeTwilio answers like Twilio's Messages resource: the first POST is
// refused with error 20429, as Twilio does when an account exceeds its
// concurrency, and the next is queued.
type fakeTwilio struct {
	mu     sync.Mutex
	bodies []string
}

func (f *fakeTwilio) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Method != http.MethodPost || r.URL.Path != "/2010-04-01/Accounts/AC0123456789abcdef/Messages.json" {
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"code": 20404, "message": "The requested resource was not found", "more_info": "https://www.twilio.com/docs/errors/20404", "status": 404}`))
		return
	}
	r.ParseForm()
	f.mu.Lock()
	f.bodies = append(f.bodies, r.PostForm.Encode())
	first := len(f.bodies) == 1
	f.mu.Unlock()
	if first {
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte(`{"code": 20429, "message": "Too Many Requests", "more_info": "https://www.twilio.com/docs/errors/20429", "status": 429}`))
		return
	}
	w.WriteHeader(http.StatusCreated)
	w.Write([]byte(`{"sid": "SM0123456789abcdef0123456789abcdef", "status": "queued", "from": "` + r.PostForm.Get("From") + `", "to": "` + r.PostForm.Get("To") + `"}`))
}

// toFake returns a transport that sends every request, whatever its host
// (twilio-go always calls https://api.twilio.com), to srv.
func toFake(srv *httptest.Server) http.RoundTripper {
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.DialTLSContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
		if err != nil {
			return nil, err
		}
		tlsConn := tls.Client(conn, &tls.Config{RootCAs: tr.TLSClientConfig.RootCAs, ServerName: "example.com"})
		return tlsConn, tlsConn.HandshakeContext(ctx)
	}
	return tr
}

func TestRunAgainstAFakeTwilio(t *testing.T) {
	fake := &fakeTwilio{}
	srv := httptest.NewTLSServer(fake)
	defer srv.Close()
	var out strings.Builder
	err := run(context.Background(), &out, "AC0123456789abcdef", "token", "+15551234567", "+15557654321", toFake(srv))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "sent message SM0123456789abcdef0123456789abcdef, status queued") {
		t.Fatalf("output:\n%s", out.String())
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	// The POST was sent again after 20429, and whole both times.
	if len(fake.bodies) != 2 || fake.bodies[0] != fake.bodies[1] || !strings.Contains(fake.bodies[0], "From=%2B15551234567") {
		t.Fatalf("the fake got %q, want the same message twice", fake.bodies)
	}
}
