package bench

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// A Family is one kind of server-side limiter in the matrix: a third-party
// library's own code (or nginx), with its configuration.
type Family struct {
	Name    string // in the tables
	Library string // the library and version, or the nginx directive
	Go      *GoLimiter
	Nginx   *Server
	Path    string
}

// Families are the matrix's servers, each at 100 calls a second on one key:
// a sliding window, a fixed window, a token bucket that publishes its
// capacity as its limit, a leaky bucket, and a concurrency cap (4 at once,
// about 16 calls a second at its calls' length). The versions are bench's
// go.mod's; nginx's is the one installed.
var Families = []Family{
	{Name: "sliding window", Library: "go-chi/httprate v0.16.1", Go: &httprate100, Path: PathLimit},
	{Name: "fixed window", Library: "ulule/limiter/v3 v3.11.2, memory store, stdlib middleware", Go: &fixed100, Path: PathLimit},
	{Name: "token bucket (GCRA)", Library: "throttled/throttled/v2 v2.15.0, memstore, HTTPRateLimiterCtx; 100/s, burst 10", Go: &gcra100, Path: PathLimit},
	{Name: "leaky bucket", Library: "nginx limit_req 100 r/s burst=20 nodelay, bare 429", Nginx: &nginx100, Path: PathLimit},
	{Name: "concurrency cap", Library: "nginx limit_conn 4, 503", Nginx: &nginx100, Path: PathConn},
}

var (
	fixed100 = GoLimiter{Kind: Fixed, Limit: 100, Window: time.Second}
	gcra100  = GoLimiter{Kind: GCRA, Limit: 100, Window: time.Second, Burst: 10}
)

// A Situation is what the client is told and who else calls.
type Situation struct {
	Name           string
	Scale          int     // the client is configured at Scale × the server's rate
	NeighbourShare float64 // an unpaced neighbour at this share of the server's rate
}

// Situations are the matrix's three per cell.
var Situations = []Situation{
	{Name: "limit known", Scale: 1},
	{Name: "told 2×", Scale: 2},
	{Name: "neighbour at 40%", Scale: 1, NeighbourShare: 0.4},
}

// Networks are the matrix's conditions.
var Networks = []Network{Loopback, RoundTrip, BusyHost}

// MatrixClients are the clients the matrix compares, pacer first.
var MatrixClients = []string{Pacer, XRate, Failsafe, RetryableHTTP}

// Matrix returns the matrix's scenarios, d each: every family × network ×
// situation, or with short the first situation of each family on loopback
// and over the round trip (the concurrency cap on loopback alone: over a
// round trip a client's slot spans the trip, so no client held to the
// server's cap can fill it). IDs start at 101, in that order.
func Matrix(short bool, d time.Duration) []Scenario {
	nets, sits := Networks, Situations
	if short {
		nets, sits = []Network{Loopback, RoundTrip}, Situations[:1]
	}
	var out []Scenario
	for _, f := range Families {
		for _, n := range nets {
			if short && f.Path == PathConn && n.Delay > 0 {
				continue
			}
			for _, s := range sits {
				out = append(out, Scenario{ID: 101 + len(out), Name: s.Name, Path: f.Path, Scale: s.Scale, Procs: 1,
					Go: f.Go, Nginx: f.Nginx, Duration: d, NeighbourShare: s.NeighbourShare, Net: n, Family: f.Name})
			}
		}
	}
	return out
}

// WriteMatrix writes the matrix's results as one table, a row a cell and
// the clients side by side: each client's goodput as a share of the ceiling
// (of what the neighbour leaves, where there is one), then its refusals
// (429s and 503s, every attempt) as a share of the calls accepted, then
// the best goodput of a peer held to issue 25's target (refusals at most
// 1 % of accepted) over pacer's. A second table gives the
// neighbour's refusals beside each client.
func WriteMatrix(w io.Writer, results []Result, clients []string) {
	type key struct {
		family, net, sit string
	}
	var rows []key
	cells := map[key]map[string]Result{}
	for _, r := range results {
		k := key{r.Scenario.Family, r.Scenario.Net.Name, r.Scenario.Name}
		if cells[k] == nil {
			cells[k] = map[string]Result{}
			rows = append(rows, k)
		}
		cells[k][r.Client] = r
	}
	fmt.Fprintf(w, "Goodput (share of the ceiling) · refused/accepted, per client:\n\n| family | network | scenario | %s | best peer at ≤ 1 %% refused ÷ pacer |\n",
		strings.Join(clients, " | "))
	fmt.Fprintf(w, "|---|---|---|%s---:|\n", strings.Repeat("---:|", len(clients)))
	for _, k := range rows {
		fmt.Fprintf(w, "| %s | %s | %s |", k.family, k.net, k.sit)
		best := 0.0
		for _, c := range clients {
			r, ok := cells[k][c]
			if !ok {
				fmt.Fprint(w, " — |")
				continue
			}
			fmt.Fprintf(w, " %.3f · %s |", r.Goodput(), percent(r.Rejected(), r.Accepted))
			if c != Pacer && r.Rejected()*100 <= r.Accepted {
				best = max(best, r.Goodput())
			}
		}
		p, ok := cells[k][Pacer]
		if ok && best > 0 {
			fmt.Fprintf(w, " %s |\n", ratio(best, p.Goodput()))
		} else {
			fmt.Fprint(w, " — |\n")
		}
	}
	header := false
	for _, k := range rows {
		var parts []string
		rate := 0.0
		for _, c := range clients {
			r, ok := cells[k][c]
			if !ok || r.NeighbourRate == 0 {
				continue
			}
			rate = r.NeighbourRate
			n := r.Neighbour
			parts = append(parts, fmt.Sprintf("%s %d of %d", c, n.TooMany+n.Unavailable, n.Accepted+n.TooMany+n.Unavailable))
		}
		if len(parts) == 0 {
			continue
		}
		header = tableHeader(w, header, "The unpaced neighbour's refusals beside each client (refused of its calls answered):",
			"| family | network | neighbour's rate | refused |", "|---|---|---:|---|")
		fmt.Fprintf(w, "| %s | %s | %.1f/s | %s |\n", k.family, k.net, rate, strings.Join(parts, "; "))
	}
}
