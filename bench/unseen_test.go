package bench

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pacer-go/pacer"
)

// Servers and networks the controller's rules were not fitted on: the
// virtual matrix's families at other sizes (a window of a minute, a
// bucket of ten a second, a fixed window of ten seconds, a bucket the
// size of its minute's quota, as OpenAI's), routes from 40 ms to a
// second, and three processes that share a server's key without a shared
// store, each told the whole limit. Each rule of internal/pace names the
// server property it relies on; these cells check that the rules hold
// where that property holds, and say where they do not.
//
// TestUnseenServers runs the cells of unseenRatchets and holds each to its
// floor. With PACER_UNSEEN=all it runs every cell, 120 s of virtual time
// each (about a minute without the race detector), and prints the table
// BENCHMARKS.md quotes; with PACER_UNSEEN=peers, each cell is run again
// with x/time/rate, failsafe-go and go-retryablehttp in pacer's place,
// configured as the wall-clock matrix configures them, beside it in the
// table (a few minutes):
//
//	PACER_UNSEEN=all go test -run TestUnseenServers -v ./bench
//	PACER_UNSEEN=peers go test -run TestUnseenServers -v ./bench
//
// Every cell starts at vStart, 0.370 s after a whole second, and a reset in
// whole seconds makes the phase of the second matter. PACER_UNSEEN_PHASE
// starts every cell that much later (a duration: 200ms), to run the table
// at another phase:
//
//	PACER_UNSEEN=all PACER_UNSEEN_PHASE=200ms go test -run TestUnseenServers -v ./bench
type unseenServer struct {
	name   string
	family Family        // its server, as the virtual matrix makes it (Family.server)
	per    time.Duration // the window a user would configure its limit per
}

// goUnseen is a GoLimiter's library, configured as a user would: per the
// server's own window.
func goUnseen(name string, g GoLimiter, per time.Duration) unseenServer {
	return unseenServer{name: name, family: Family{Name: name, Go: &g, Path: PathLimit}, per: per}
}

// leakyUnseen is the leaky bucket (nginx limit_req's model), with a
// Retry-After: 1 on its 429s if retryAfter.
func leakyUnseen(name string, rate, burst int, retryAfter bool) unseenServer {
	path := PathLimit
	if retryAfter {
		path = PathLimitRetryAfter
	}
	return unseenServer{name: name, family: Family{Name: name, Nginx: &Server{Rate: rate, Burst: burst}, Path: path}, per: time.Second}
}

var unseenServers = []unseenServer{
	goUnseen("sliding 600/min", GoLimiter{Kind: Sliding, Limit: 600, Window: time.Minute, RetryAfter: true}, time.Minute),
	goUnseen("sliding 600/min, no Retry-After", GoLimiter{Kind: Sliding, Limit: 600, Window: time.Minute}, time.Minute),
	goUnseen("sliding 20/s", GoLimiter{Kind: Sliding, Limit: 20, Window: time.Second, RetryAfter: true}, time.Second),
	goUnseen("fixed 600/min", GoLimiter{Kind: Fixed, Limit: 600, Window: time.Minute}, time.Minute),
	goUnseen("fixed 50/10s", GoLimiter{Kind: Fixed, Limit: 50, Window: 10 * time.Second}, 10*time.Second),
	goUnseen("gcra 10/s b5", GoLimiter{Kind: GCRA, Limit: 10, Window: time.Second, Burst: 5}, time.Second),
	goUnseen("gcra 600/min b50", GoLimiter{Kind: GCRA, Limit: 600, Window: time.Minute, Burst: 50}, time.Minute),
	goUnseen("gcra 600/min b599", GoLimiter{Kind: GCRA, Limit: 600, Window: time.Minute, Burst: 599}, time.Minute),
	goUnseen("gcra 1000/s b100", GoLimiter{Kind: GCRA, Limit: 1000, Window: time.Second, Burst: 100}, time.Second),
	leakyUnseen("leaky 10/s b5", 10, 5, false),
	leakyUnseen("leaky 500/s b50, Retry-After", 500, 50, true),
}

// unseenRoute is a route of base plus up to jitter each way, with so many
// callers.
func unseenRoute(base, jitter time.Duration, callers int) VNetwork {
	return VNetwork{Network{Name: fmt.Sprintf("rtt %v–%v", 2*base, 2*(base+jitter)), Delay: base, Jitter: jitter, Goroutines: callers},
		func(x uint64) (time.Duration, time.Duration) {
			return base + uniform(x, jitter), base + uniform(mix(x), jitter)
		}}
}

var unseenNetworks = []VNetwork{
	VLoopback,
	unseenRoute(20*time.Millisecond, 10*time.Millisecond, 32),
	unseenRoute(100*time.Millisecond, 100*time.Millisecond, 64),
	unseenRoute(250*time.Millisecond, 250*time.Millisecond, 128),
	VBusy,
}

type unseenSituation struct {
	name   string
	scale  int     // the configured limit, in the server's
	nshare float64 // an unpaced neighbour's share of the server's rate
	pods   int     // processes on the key, each told the whole limit, no shared store
}

var unseenSituations = []unseenSituation{
	{"limit known", 1, 0, 1},
	{"told 2×", 2, 0, 1},
	{"neighbour at 40%", 1, 0.4, 1},
	{"three pods", 1, 0, 3},
}

type unseenCell struct {
	s   unseenServer
	n   VNetwork
	sit unseenSituation
	d   time.Duration
	// client is the client in every pod: Pacer, or a peer of Clients.
	client string
	// phase is how long after vStart the cell starts.
	phase time.Duration
}

func (c unseenCell) name() string { return c.s.name + " | " + c.n.Name + " | " + c.sit.name }

// run runs the cell in its bubble: pacer (every pod's) beside the
// neighbour, if any. The ceiling is what the server could accept of what
// the neighbour leaves — or what the callers could send, one call a round
// trip each, if that is less: 64 callers over 300 ms send at most about
// 210 a second, whatever the server allows.
func (c unseenCell) run() VResult {
	time.Sleep(time.Until(vStart.Add(c.phase)))
	h, err := c.s.family.server()
	if err != nil {
		panic(err)
	}
	serverRate, capacity := c.s.family.rate()
	server := inProcess{h}
	seed := seedOf(c.name())
	start := time.Now()
	limit := pacer.Limit{Count: int(serverRate*c.s.per.Seconds()) * c.sit.scale, Per: c.s.per}
	client := func(w http.RoundTripper) *http.Client {
		if c.client != Pacer {
			// As the wall-clock matrix configures a peer (harness.go): the
			// rate a second, a burst of one for each limit it was told.
			cfg := ClientConfig{Rate: int(serverRate) * c.sit.scale, Burst: c.sit.scale, MaxWait: c.d}
			cl, _, err := NewClient(c.client, cfg, w)
			if err != nil {
				panic(err)
			}
			return cl
		}
		tr := pacer.New(w, pacer.WithLimit(limit), pacer.WithMaxWait(c.d), pacer.WithLogger(slog.New(slog.DiscardHandler)))
		if err := tr.Err(); err != nil {
			panic(err)
		}
		return tr.Client()
	}
	res := VResult{Result: Result{NeighbourRate: c.sit.nshare * serverRate}}
	url := "http://api.test/limit"
	done := make(chan Counts, 1)
	if res.NeighbourRate > 0 {
		nw := &Wire{next: c.n.wire(seed^1, server)}
		go func() { done <- neighbourOver(nw, url, res.NeighbourRate, start, c.d) }()
	}
	callers := c.n.Goroutines / c.sit.pods
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range c.sit.pods {
		wg.Go(func() {
			w := &Wire{next: c.n.wire(seed^uint64(i+7), server)}
			n := Workload(client(w), w, url, callers, start, c.d)
			mu.Lock()
			res.Accepted += n.Accepted
			res.TooMany += n.TooMany
			res.Unavailable += n.Unavailable
			mu.Unlock()
		})
	}
	wg.Wait()
	if res.NeighbourRate > 0 {
		res.Neighbour = <-done
	}
	rate := serverRate - res.NeighbourRate
	if c.n.Delay > 0 {
		rate = min(rate, float64(c.n.Goroutines)/(2*c.n.Delay+c.n.Jitter).Seconds())
	}
	res.Ceiling = rate*c.n.window(c.d).Seconds() + capacity
	return res
}

// An unseenRatchet is a cell's floor: its goodput no lower, its refusals
// per accepted call no more (the neighbour's per call answered likewise).
type unseenRatchet struct {
	floor, refused, neighbour float64
}

// unseenRatchets are the cells TestUnseenServers holds by default: where
// a rule of issue 25 changed the figures, and a guard for each family over
// a round trip. The floor is 0.03 below the goodput seen (at most 0.97),
// the refusals bound refusalBound of those seen. The comment beside each
// gives the figures seen (goodput · refused per accepted · the
// neighbour's refused per call) and, where a rule changed them, those at
// 5f223ac: paused to each reset, a sliding window of a minute told twice
// its limit spent half of it; spread over a minute's reset without the
// neighbour's take, the first window ran out seconds early, and the
// neighbour was refused one call in twenty.
var unseenRatchets = map[string]unseenRatchet{
	"sliding 600/min, no Retry-After | loopback | told 2×":          {0.97, 0.0083, 0},      // 0.999 · 0.0083; at 5f223ac 0.500 · 0.0150
	"sliding 600/min, no Retry-After | loopback | neighbour at 40%": {0.96, 0.0014, 0.0021}, // 0.996 · 0.0014 · 0.0021; at 5f223ac 0.535 · 0.0026 · 0.0501
	"sliding 600/min, no Retry-After | rtt 200ms–400ms | told 2×":   {0.96, 0.0034, 0},      // 0.997 · 0.0034; at 5f223ac 0.504 · 0.0066
	"sliding 600/min, no Retry-After | rtt 500ms–1s | told 2×":      {0.96, 0, 0},           // 0.990 · 0; at 5f223ac 0.508 · 0.0016
	"sliding 600/min, no Retry-After | rtt 500ms–1s | three pods":   {0.97, 0.0084, 0},      // 1.001 · 0.0084; at 5f223ac 0.998 · 0.0067
	"sliding 600/min, no Retry-After | busy | three pods":           {0.965, 0, 0},          // 0.995 · 0; at half the blind pace beside the others: 0.991 · 0.0185
	"sliding 600/min | rtt 500ms–1s | told 2×":                      {0.96, 0, 0},           // 0.992 · 0; at 5f223ac 0.508 · 0.0033
	"sliding 600/min | rtt 200ms–400ms | neighbour at 40%":          {0.96, 0, 0},           // 0.991 · 0 · 0; at 5f223ac 0.604 · 0.0023 · 0.0481
	"sliding 600/min | loopback | three pods":                       {0.965, 0.0008, 0},     // 0.995 · 0.0008; at half the blind pace into each turn: 0.966 · 0.0017
	"sliding 600/min | rtt 500ms–1s | three pods":                   {0.90, 0.0008, 0},      // 1.000 · 0.0008; at half the blind pace into each turn: 0.505 · 0.0132; one CI run in six on 2026-12-07 got 0.939 (130 runs here under -race, loaded or not, GOMAXPROCS 1–4: 0.997–1.000; cause not found), so the floor guards that regression, not the schedule
	"sliding 20/s | rtt 200ms–400ms | limit known":                  {0.88, 0.0023, 0},      // 0.910 · 0.0023
	"fixed 600/min | loopback | neighbour at 40%":                   {0.97, 0, 0},           // 1.001 · 0 · 0; at 5f223ac 1.035 · 0 · 0.0501
	"fixed 600/min | rtt 200ms–400ms | limit known":                 {0.95, 0, 0},           // 0.983 · 0
	"fixed 600/min | loopback | told 2×":                            {0.96, 0, 0},           // 0.993 · 0; sent into each turn's none left: 1.000 · 0.0133
	"fixed 600/min | rtt 200ms–400ms | told 2×":                     {0.95, 0.0009, 0},      // 0.978 · 0.0009; sent into each turn's none left: 1.002 · 0.0033
	"fixed 600/min | rtt 500ms–1s | neighbour at 40%":               {0.94, 0, 0},           // 0.975 · 0 · 0; at 5f223ac 1.024 · 0.0041 · 0.0482
	"fixed 50/10s | rtt 200ms–400ms | limit known":                  {0.94, 0, 0},           // 0.973 · 0
	"gcra 10/s b5 | rtt 200ms–400ms | limit known":                  {0.94, 0, 0},           // 0.974 · 0
	"gcra 10/s b5 | rtt 40ms–60ms | neighbour at 40%":               {0.96, 0, 0},           // 0.995 · 0 · 0; a quarter of a call as margin below a published limit under the configured one: 1.184 · 0.0559 · 0.2818
	"gcra 10/s b5 | rtt 40ms–60ms | three pods":                     {0.96, 0.0008, 0},      // 0.999 · 0.0008; a quarter of a call as margin: 0.996 · 0.0616
	"gcra 600/min b50 | rtt 40ms–60ms | told 2×":                    {0.96, 0, 0},           // 0.999 · 0; before the moving reset: 0.951 · 0
	"gcra 600/min b50 | loopback | three pods":                      {0.97, 0.0208, 0},      // 0.998 · 0.0208 (the first second's); below the margin at half the blind pace: 0.998 · 0.0384
	"gcra 600/min b50 | rtt 40ms–60ms | three pods":                 {0.97, 0.0216, 0},      // 0.999 · 0.0216; below the margin at half the blind pace: 0.999 · 0.0576
	"gcra 600/min b50 | rtt 200ms–400ms | limit known":              {0.94, 0.0074, 0},      // 0.970 · 0.0074; before the moving reset: 0.930 · 0.0077
	"gcra 600/min b50 | loopback | told 2×":                         {0.96, 0, 0},           // 0.990 · 0; paused to a full bucket at each none left: 0.964 · 0
	"gcra 600/min b50 | busy | told 2×":                             {0.96, 0, 0},           // 0.990 · 0; paused to a full bucket at each none left: 0.964 · 0
	"gcra 1000/s b100 | rtt 200ms–400ms | told 2×":                  {0.96, 0, 0},           // 0.996 · 0
	"leaky 10/s b5 | rtt 200ms–400ms | told 2×":                     {0.94, 0.0085, 0},      // 0.974 · 0.0085
	"leaky 500/s b50, Retry-After | rtt 200ms–400ms | limit known":  {0.96, 0, 0},           // 0.998 · 0
	"leaky 500/s b50, Retry-After | loopback | told 2×":             {0.95, 0.0004, 0},      // 0.982 · 0.0004; a cut history of half a second at 500 a second, every refusal unmeasured: 0.816 · 0.0003
}

// unseenPeers are the clients run beside pacer with PACER_UNSEEN=peers.
var unseenPeers = []string{XRate, Failsafe, RetryableHTTP}

func TestUnseenServers(t *testing.T) {
	mode := os.Getenv("PACER_UNSEEN")
	all := mode == "all" || mode == "peers"
	clients := []string{Pacer}
	if mode == "peers" {
		clients = append(clients, unseenPeers...)
	}
	var phase time.Duration
	if v := os.Getenv("PACER_UNSEEN_PHASE"); v != "" {
		var err error
		if phase, err = time.ParseDuration(v); err != nil || phase < 0 {
			t.Fatalf("PACER_UNSEEN_PHASE=%q: want a duration of 0 or more, as 200ms", v)
		}
	}
	var cells []unseenCell
	for _, s := range unseenServers {
		for _, n := range unseenNetworks {
			for _, sit := range unseenSituations {
				c := unseenCell{s: s, n: n, sit: sit, d: 120 * time.Second, client: Pacer, phase: phase}
				if _, held := unseenRatchets[c.name()]; held || all {
					cells = append(cells, c)
				}
			}
		}
	}
	if !all && len(cells) != len(unseenRatchets) {
		t.Fatalf("%d cells for %d ratchets: a ratchet names no cell", len(cells), len(unseenRatchets))
	}
	var table strings.Builder
	for _, c := range cells {
		fmt.Fprintf(&table, "| %s |", c.name())
		for _, client := range clients {
			c.client = client
			t.Run(c.name()+" | "+client, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { c.check(t, &table) })
			})
		}
		table.WriteString("\n")
	}
	if testing.Verbose() {
		fmt.Printf("\nServers the rules were not fitted on, 120 s each, starting %v after vStart:\n\n| server | network | situation | %s |\n|---|---|---|%s\n%s\n",
			phase, strings.Join(clients, " | "), strings.Repeat("---|", len(clients)), table.String())
	}
}

// check runs the cell, adds its figures to the table — goodput · refused
// per accepted (· the neighbour's refused per call) — and holds pacer to
// the cell's ratchet, if it has one.
func (c unseenCell) check(t *testing.T, table *strings.Builder) {
	r := c.run()
	s := r.Score()
	nb := ""
	if r.NeighbourRate > 0 {
		nb = fmt.Sprintf(" · %.4f", r.NeighbourRefused())
	}
	fmt.Fprintf(table, " %.3f · %.4f%s |", s.Goodput(), s.RefusedPerAccepted(), nb)
	want, held := unseenRatchets[c.name()]
	if !held || c.client != Pacer {
		return
	}
	if g := s.Goodput(); g < want.floor {
		t.Errorf("goodput %.3f, below its floor %.3f", g, want.floor)
	}
	if f, bound := s.RefusedPerAccepted(), refusalBound(want.refused); f > bound {
		t.Errorf("%d refused for %d accepted (%.4f a call), above its bound %.4f", s.Refused, s.Accepted, f, bound)
	}
	if r.NeighbourRate > 0 {
		if f, bound := r.NeighbourRefused(), refusalBound(want.neighbour); f > bound {
			t.Errorf("the neighbour's refusals %.4f a call, above their bound %.4f", f, bound)
		}
	}
}

// httprate's window of a minute answers each refusal with Retry-After: 60,
// which pacer honours. Told twice the limit, the first window's last call
// was refused at the turn, and a minute went unspent; over ten minutes, a
// refusal at every second turn, 0.505 of the quota. Since none left is
// waited out to the reset's slack in a window this long (pace's
// slackShare), the first turn is not refused either; since a count below
// its margin at the turn lets one call through at a time (pace's
// atLongTurn), neither is any later one, wherever in the second the run
// starts: before, a refusal at a later turn at three phases in five
// (0.892), drawn by half the blind pace and the wake's burst. After, 0.990
// with none at every phase.
func TestAMinuteWindowThatAsksForAMinute(t *testing.T) {
	for _, s := range unseenServers {
		if s.name != "sliding 600/min" {
			continue
		}
		for phase := time.Duration(0); phase < time.Second; phase += 200 * time.Millisecond {
			c := unseenCell{s: s, n: VLoopback, sit: unseenSituations[1], d: 10 * time.Minute, client: Pacer, phase: phase}
			t.Run(phase.String(), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					r := c.run()
					sc := r.Score()
					if g := sc.Goodput(); g < 0.98 || sc.Refused > 0 {
						t.Errorf("%s over %v, %v into the second: goodput %.3f with %d refused, want ≥ 0.98 with none", c.name(), c.d, phase, g, sc.Refused)
					}
				})
			})
		}
		return
	}
	t.Fatal("no sliding 600/min among the unseen servers")
}

// httprate starts its windows when its limiter starts, and says their end
// in whole seconds: the turn of a minute comes up to a second after its
// reset. Where the run starts in the second decides whether the last calls
// of a window meet the turn. Over a route of 200–400 ms, before the count
// woke one call at a time below its margin at a long window's turn
// (pace's atLongTurn), half the blind pace sent calls into it: told twice
// the limit, a refusal at every phase of the second (0.501–0.503 of the
// quota, each refusal asking for a minute); beside the neighbour, at three
// phases in six (0.504). After: 0.992–0.994, and 0.945–0.992.
func TestAMinutesTurnAtEveryPhase(t *testing.T) {
	route := unseenNetworks[2]
	for _, s := range unseenServers {
		if s.name != "sliding 600/min" {
			continue
		}
		for _, sit := range unseenSituations[1:3] {
			for phase := time.Duration(0); phase < time.Second; phase += 200 * time.Millisecond {
				c := unseenCell{s: s, n: route, sit: sit, d: 120 * time.Second, client: Pacer, phase: phase}
				t.Run(fmt.Sprintf("%s | %v", c.name(), phase), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						r := c.run()
						sc := r.Score()
						if g := sc.Goodput(); g < 0.92 || sc.Refused > 0 {
							t.Errorf("goodput %.3f with %d refused, want ≥ 0.92 with none", g, sc.Refused)
						}
					})
				})
			}
		}
		return
	}
	t.Fatal("no sliding 600/min among the unseen servers")
}
