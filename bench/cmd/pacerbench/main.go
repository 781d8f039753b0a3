// Command pacerbench runs one workload — goroutines calling as fast as the
// client lets them, for a fixed time — through a plain http.Client,
// x/time/rate, go-retryablehttp, failsafe-go and pacer, in five scenarios,
// against a real nginx it starts afresh for every run, and prints Markdown
// tables of what the server accepted and refused, goodput and latency.
//
//	pacerbench [-duration 12s] [-scenarios 1,2,3,4,5] [-clients all] [-redis host:port] [-out FILE]
//
// With the argument "overhead", it reads `go test -bench` output instead and
// prints each benchmark's overhead over its group's stub transport, and as a
// multiple of the same group's x/time/rate + semaphore:
//
//	pacerbench overhead FILE...
//
// With the argument "matrix", it runs issue 25's matrix instead: every
// server family (bench.Families) × network (loopback, a 200–400 ms round
// trip with 64 callers, a busy host) × situation (limit known, told 2×, an
// unpaced neighbour at 40 %), for pacer, x/time/rate, failsafe-go and
// go-retryablehttp, and prints one table of goodput and refusals, the
// clients side by side; -short runs its subset of a few minutes:
//
//	pacerbench matrix [-short] [-duration 20s] [-families all] [-networks all] [-situations all] [-clients ...] [-out FILE]
//
// scripts/bench runs it with the servers it needs; see BENCHMARKS.md.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pacer-go/pacer/bench"
)

func main() {
	bench.MaybeChild()
	if len(os.Args) > 1 && os.Args[1] == "overhead" {
		if err := overhead(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "pacerbench overhead:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "matrix" {
		if err := matrix(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "pacerbench matrix:", err)
			os.Exit(1)
		}
		return
	}
	var (
		o         bench.Options
		scenarios = flag.String("scenarios", "all", "scenarios to run, by number, or all")
		clients   = flag.String("clients", "all", "clients to run, comma-separated: "+strings.Join(bench.Clients, ","))
		out       = flag.String("out", "", "also write the tables to this file")
	)
	flag.StringVar(&o.NginxBin, "nginx", bench.FindNginx(), "nginx binary")
	flag.StringVar(&o.RedisAddr, "redis", os.Getenv("PACER_REDIS_ADDR"), "Redis host:port for pacer in scenarios 3, 13 and 14")
	flag.DurationVar(&o.LimitSync, "pacer-limit-sync", time.Second, "pacer's store.Policy.LimitSync interval in scenarios 3, 13 and 14, where its processes share Redis; 0: each process learns on its own")
	flag.DurationVar(&o.Duration, "duration", 12*time.Second, "length of each client × scenario run")
	flag.IntVar(&o.Goroutines, "goroutines", 16, "callers, in all processes together")
	flag.IntVar(&o.Server.Rate, "rate", 50, "nginx limit_req rate, requests a second")
	flag.IntVar(&o.Server.Burst, "burst", 10, "nginx limit_req burst")
	flag.IntVar(&o.Server.Conn, "conn", 4, "nginx limit_conn")
	flag.Float64Var(&o.Headroom, "pacer-headroom", 0, "pacer's WithHeadroom; 0 keeps its default (0.9)")
	flag.IntVar(&o.PacerBurst, "pacer-burst", 0, "the Burst of pacer's Limit; 0 keeps its default ((1-headroom) x rate, at least 1)")
	flag.Parse()
	if err := run(o, *scenarios, *clients, *out); err != nil {
		fmt.Fprintln(os.Stderr, "pacerbench:", err)
		os.Exit(1)
	}
}

func run(o bench.Options, scenarioList, clientList, out string) error {
	if o.NginxBin == "" {
		return fmt.Errorf("no nginx: set -nginx or PACER_NGINX_BIN")
	}
	var scs []bench.Scenario
	if scenarioList == "all" {
		scs = bench.Scenarios
		scenarioList = ""
	}
	for _, f := range strings.Split(scenarioList, ",") {
		if f == "" {
			continue
		}
		id, err := strconv.Atoi(strings.TrimSpace(f))
		sc, ok := bench.ScenarioByID(id)
		if err != nil || !ok {
			return fmt.Errorf("-scenarios: no scenario %q", f)
		}
		scs = append(scs, sc)
	}
	cls := bench.Clients
	if clientList != "all" {
		cls = strings.Split(clientList, ",")
		for _, c := range cls {
			if !slices.Contains(bench.Clients, c) {
				return fmt.Errorf("-clients: no client %q (want %v)", c, bench.Clients)
			}
		}
	}
	var results []bench.Result
	for _, sc := range scs {
		for _, c := range cls {
			r, err := bench.Run(o, sc, c)
			if err != nil {
				return fmt.Errorf("scenario %d, %s: %w", sc.ID, c, err)
			}
			fmt.Fprintf(os.Stderr, "scenario %d %-13s accepted %5d  rejected %6d  failed %4d  goodput %.3f\n",
				sc.ID, c, r.Accepted, r.Rejected(), r.Failed, r.Goodput())
			results = append(results, r)
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "nginx: limit_req %d r/s burst=%d nodelay (429); limit_conn %d (503), 64 KiB at 128 KiB/s",
		o.Server.Rate, o.Server.Burst, o.Server.Conn)
	for _, r := range results {
		if r.Service > 0 {
			fmt.Fprintf(&b, ", one call alone %.0f ms", float64(r.Service)/float64(time.Millisecond))
			break
		}
	}
	fmt.Fprintf(&b, ". %d goroutines, %v per run (scenarios 6–11, 13–15: 20 s; 12: 2 min), each server started afresh for every run; "+
		"scenarios 6–9, 12, 14 and 15: go-chi/httprate 100 calls a 1 s sliding window, in the harness's process; "+
		"3, 13 and 14: pacer's four processes share Redis, with store.Policy.LimitSync %v; 15: four processes, each on its own, no store.\n\n", o.Goroutines, o.Duration, o.LimitSync)
	bench.WriteTables(&b, results)
	os.Stdout.Write(b.Bytes())
	if out != "" {
		return os.WriteFile(out, b.Bytes(), 0o644)
	}
	return nil
}

// overhead prints the overhead table of the benchmark output in files.
func overhead(files []string) error {
	var all bytes.Buffer
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		all.Write(b)
		all.WriteByte('\n')
	}
	runs, order, err := bench.ParseBench(&all)
	if err != nil {
		return err
	}
	return bench.WriteOverhead(os.Stdout, runs, order, "rate+semaphore")
}

// matrix runs the matrix's cells that args select.
func matrix(args []string) error {
	fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
	var (
		o          bench.Options
		short      = fs.Bool("short", false, "the subset: limit known, each family on loopback and over the round trip (the concurrency cap on loopback only), 5 s each")
		duration   = fs.Duration("duration", 0, "length of each run; 0: 20s, or 5s with -short")
		families   = fs.String("families", "all", "families to run, by number (1-based, in bench.Families' order), or all")
		networks   = fs.String("networks", "all", "networks to run: loopback, rtt, busy, comma-separated, or all")
		situations = fs.String("situations", "all", "situations to run, by number (1 limit known, 2 told 2×, 3 neighbour at 40%), or all")
		clients    = fs.String("clients", strings.Join(bench.MatrixClients, ","), "clients to run, comma-separated")
		out        = fs.String("out", "", "also write the table to this file")
	)
	fs.StringVar(&o.NginxBin, "nginx", bench.FindNginx(), "nginx binary, for the leaky bucket and the concurrency cap")
	fs.IntVar(&o.Goroutines, "goroutines", 16, "callers on loopback and the busy host (the round trip has 64)")
	fs.DurationVar(&o.Trace, "trace", 0, "write pacer's pace (its Stats) to stderr at this interval; 0: not")
	if err := fs.Parse(args); err != nil {
		return err
	}
	d := *duration
	if d == 0 {
		d = 20 * time.Second
		if *short {
			d = 5 * time.Second
		}
	}
	pick := func(flagName, list string, names []string) (map[string]bool, error) {
		if list == "all" {
			return nil, nil
		}
		m := map[string]bool{}
		for _, f := range strings.Split(list, ",") {
			f = strings.TrimSpace(f)
			if !slices.Contains(names, f) {
				return nil, fmt.Errorf("-%s: no %q (want one of %v, or all)", flagName, f, names)
			}
			m[f] = true
		}
		return m, nil
	}
	var famNames, sitNames []string
	for i := range bench.Families {
		famNames = append(famNames, strconv.Itoa(i+1))
	}
	for i := range bench.Situations {
		sitNames = append(sitNames, strconv.Itoa(i+1))
	}
	netNames := []string{"loopback", "rtt", "busy"}
	famSet, err := pick("families", *families, famNames)
	if err != nil {
		return err
	}
	netSet, err := pick("networks", *networks, netNames)
	if err != nil {
		return err
	}
	sitSet, err := pick("situations", *situations, sitNames)
	if err != nil {
		return err
	}
	cls, err := pick("clients", *clients, bench.Clients)
	if err != nil {
		return err
	}
	clientList := bench.MatrixClients
	if cls != nil {
		clientList = strings.Split(*clients, ",")
	}
	var scs []bench.Scenario
	for _, sc := range bench.Matrix(*short, d) {
		fam := slices.IndexFunc(bench.Families, func(f bench.Family) bool { return f.Name == sc.Family })
		sit := slices.IndexFunc(bench.Situations, func(s bench.Situation) bool { return s.Name == sc.Name })
		net := netNames[slices.IndexFunc(bench.Networks, func(n bench.Network) bool { return n == sc.Net })]
		if (famSet == nil || famSet[famNames[fam]]) && (netSet == nil || netSet[net]) && (sitSet == nil || sitSet[sitNames[sit]]) {
			scs = append(scs, sc)
		}
	}
	if len(scs) == 0 {
		return fmt.Errorf("no cell matches -families %s -networks %s -situations %s", *families, *networks, *situations)
	}
	for _, sc := range scs {
		if sc.Nginx != nil && o.NginxBin == "" {
			return fmt.Errorf("no nginx for the %s: set -nginx or PACER_NGINX_BIN, or pick -families without it", sc.Family)
		}
	}
	var results []bench.Result
	for _, sc := range scs {
		for _, c := range clientList {
			r, err := bench.Run(o, sc, c)
			if err != nil {
				return fmt.Errorf("%s, %s, %s, %s: %w", sc.Family, sc.Net.Name, sc.Name, c, err)
			}
			fmt.Fprintf(os.Stderr, "%-20s %-22s %-17s %-13s accepted %5d  refused %6d  failed %4d  goodput %.3f\n",
				sc.Family, sc.Net.Name, sc.Name, c, r.Accepted, r.Rejected(), r.Failed, r.Goodput())
			results = append(results, r)
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%v a run, each server started afresh for it; %d callers (64 over the round trip).\n\n", d, o.Goroutines)
	bench.WriteMatrix(&b, results, clientList)
	os.Stdout.Write(b.Bytes())
	if *out != "" {
		return os.WriteFile(*out, b.Bytes(), 0o644)
	}
	return nil
}
