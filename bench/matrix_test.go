package bench

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestFamiliesHeaders probes each in-process family: its library limits
// (a burst of 150 calls at a 100/s limiter draws 429s), and its headers say
// what GoLimiter's doc says they do — above all the GCRA bucket's
// X-RateLimit-Limit, its capacity (11), not its rate.
func TestFamiliesHeaders(t *testing.T) {
	want := map[Kind]struct {
		limit      string
		retryAfter bool
	}{
		Sliding: {"100", true},
		Fixed:   {"100", false},
		GCRA:    {"11", true},
	}
	for _, f := range Families {
		if f.Go == nil {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			g, err := StartGoServer(*f.Go)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Stop()
			wire := NewWire()
			defer wire.CloseIdle()
			c := &http.Client{Transport: wire}
			var first, refused http.Header
			for i := range 150 {
				resp, err := c.Get(g.URL + f.Path)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if i == 0 {
					first = resp.Header
				}
				if resp.StatusCode == http.StatusTooManyRequests && refused == nil {
					refused = resp.Header
				}
			}
			t.Logf("first 200: Limit %q Remaining %q Reset %q; first 429: Limit %q Remaining %q Reset %q Retry-After %q",
				first.Get("X-RateLimit-Limit"), first.Get("X-RateLimit-Remaining"), first.Get("X-RateLimit-Reset"),
				refused.Get("X-RateLimit-Limit"), refused.Get("X-RateLimit-Remaining"), refused.Get("X-RateLimit-Reset"), refused.Get("Retry-After"))
			w := want[f.Go.Kind]
			if refused == nil {
				t.Fatalf("150 calls at once drew no 429: the limiter does not limit")
			}
			if got := first.Get("X-RateLimit-Limit"); got != w.limit {
				t.Errorf("X-RateLimit-Limit %q, want %q", got, w.limit)
			}
			if first.Get("X-RateLimit-Remaining") == "" || first.Get("X-RateLimit-Reset") == "" {
				t.Errorf("no Remaining or Reset: %v", first)
			}
			if got := refused.Get("Retry-After") != ""; got != w.retryAfter {
				t.Errorf("429 carries Retry-After: %v, want %v", got, w.retryAfter)
			}
		})
	}
}

// stamp answers at once, recording the order requests reached it.
type stamp struct {
	mu    sync.Mutex
	order []string
}

func (s *stamp) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.order = append(s.order, req.URL.Path)
	s.mu.Unlock()
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

// TestDelayedReorders checks the round trip's wrapper: each call takes at
// least twice the fixed delay, and calls started together come back in
// another order than the one they reached the server in.
func TestDelayedReorders(t *testing.T) {
	s := &stamp{}
	d := delayed{Network{Delay: 5 * time.Millisecond, Jitter: 20 * time.Millisecond}.ways, s}
	var mu sync.Mutex
	var back []string
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, "http://x/"+string(rune('A'+i)), nil)
			t0 := time.Now()
			resp, err := d.RoundTrip(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if el := time.Since(t0); el < 10*time.Millisecond {
				t.Errorf("a call took %v, under the two fixed delays (10ms)", el)
			}
			mu.Lock()
			back = append(back, req.URL.Path)
			mu.Unlock()
		})
	}
	wg.Wait()
	if strings.Join(back, "") == strings.Join(s.order, "") {
		t.Errorf("40 calls with 20 ms of jitter each way came back in the order they arrived: %v", back)
	}
}

// TestMatrixCells runs a few of the matrix's cells briefly, for pacer: the
// GCRA family beside a neighbour on a busy host and over the round trip,
// and the fixed window on loopback. It checks the harness, not the targets:
// something is accepted, within the ceiling, and the neighbour's calls are
// counted.
func TestMatrixCells(t *testing.T) {
	if testing.Short() {
		t.Skip("real servers, a few seconds")
	}
	var picked []Scenario
	for _, sc := range Matrix(false, time.Second) {
		switch {
		case sc.Family == "token bucket (GCRA)" && sc.NeighbourShare > 0 && sc.Net.Busy,
			sc.Family == "token bucket (GCRA)" && sc.Scale == 1 && sc.NeighbourShare == 0 && sc.Net.Delay > 0,
			sc.Family == "fixed window" && sc.Scale == 2 && sc.Net == Loopback:
			picked = append(picked, sc)
		}
	}
	if len(picked) != 3 {
		t.Fatalf("picked %d cells, want 3", len(picked))
	}
	var results []Result
	for _, sc := range picked {
		res, err := Run(Options{Goroutines: 16}, sc, Pacer)
		if err != nil {
			t.Fatalf("%s, %s, %s: %v", sc.Family, sc.Net.Name, sc.Name, err)
		}
		results = append(results, res)
		t.Logf("%s, %s, %s: accepted %d refused %d goodput %.3f neighbour %+v", sc.Family, sc.Net.Name, sc.Name,
			res.Accepted, res.Rejected(), res.Goodput(), res.Neighbour.Accepted+res.Neighbour.TooMany)
		if res.Accepted == 0 {
			t.Errorf("%s, %s, %s: nothing accepted", sc.Family, sc.Net.Name, sc.Name)
		}
		// A window's server lets a whole quota through from idle.
		if float64(res.Accepted) > 1.05*res.Ceiling+float64(sc.Go.Limit)+1 {
			t.Errorf("%s: %d accepted, above the ceiling %.0f", sc.Name, res.Accepted, res.Ceiling)
		}
		if sc.NeighbourShare > 0 && res.Neighbour.Accepted+res.Neighbour.TooMany < 20 {
			t.Errorf("the neighbour at 40/s for 1 s was answered %d times", res.Neighbour.Accepted+res.Neighbour.TooMany)
		}
	}
	var b bytes.Buffer
	WriteMatrix(&b, results, MatrixClients)
	if n := strings.Count(b.String(), "\n| token") + strings.Count(b.String(), "\n| fixed"); n != 4 {
		t.Errorf("the matrix's tables have %d rows for 3 cells and 1 neighbour:\n%s", n, b.String())
	}
}
