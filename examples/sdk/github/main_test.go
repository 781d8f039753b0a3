package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeGitHub answers like the REST API, with its x-ratelimit-* headers on
// every response. The first issue listing meets a secondary rate limit: a
// 403 with retry-after and GitHub's message.
type fakeGitHub struct {
	mu      sync.Mutex
	lists   []time.Time
	used    int
	created int
}

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.used++
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-Ratelimit-Limit", "5000")
	h.Set("X-Ratelimit-Remaining", strconv.Itoa(5000-f.used))
	h.Set("X-Ratelimit-Used", strconv.Itoa(f.used))
	h.Set("X-Ratelimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	h.Set("X-Ratelimit-Resource", "core")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/repos/octo/hello/issues":
		f.lists = append(f.lists, time.Now())
		if len(f.lists) == 1 {
			h.Set("Retry-After", "1")
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID 8844:3EDF1D:1F13C4:2BB820:652AAB04.","documentation_url":"https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits","status":"403"}`))
			return
		}
		w.Write([]byte(`[{"number":1347,"title":"Found a bug","state":"open"}]`))
	case r.Method == http.MethodPost && r.URL.Path == "/repos/octo/hello/issues":
		f.created++
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"number":1348,"title":"Paced by pacer","state":"open"}`))
	default:
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"message":"Not Found","documentation_url":"https://docs.github.com/rest","status":"404"}`))
	}
}

func TestRunAgainstAFakeGitHub(t *testing.T) {
	fake := &fakeGitHub{}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	var out strings.Builder
	if err := run(context.Background(), &out, srv.URL+"/", "ghp_test", "octo/hello", nil); err != nil {
		t.Fatal(err)
	}
	want := "#1347 Found a bug\nopened #1348; 4997 of 5000 core requests left\n"
	if out.String() != want {
		t.Fatalf("output:\n%s\nwant:\n%s", out.String(), want)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	// pacer waited out the 403's retry-after, then sent the listing again.
	if len(fake.lists) != 2 || fake.lists[1].Sub(fake.lists[0]) < time.Second {
		t.Fatalf("listings at %v: want a second one at least 1 s after the first", fake.lists)
	}
	if fake.created != 1 {
		t.Fatalf("%d issues opened, want 1", fake.created)
	}
}
