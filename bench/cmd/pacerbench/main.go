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
	var (
		o         bench.Options
		scenarios = flag.String("scenarios", "all", "scenarios to run, by number, or all")
		clients   = flag.String("clients", "all", "clients to run, comma-separated: "+strings.Join(bench.Clients, ","))
		out       = flag.String("out", "", "also write the tables to this file")
	)
	flag.StringVar(&o.NginxBin, "nginx", bench.FindNginx(), "nginx binary")
	flag.StringVar(&o.RedisAddr, "redis", os.Getenv("PACER_REDIS_ADDR"), "Redis host:port for pacer in scenarios 3, 13 and 14")
	flag.DurationVar(&o.LimitSync, "pacer-limit-sync", time.Second, "pacer's WithLimitSync interval in scenarios 3, 13 and 14, where its processes share Redis; 0: each process learns on its own")
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
	fmt.Fprintf(&b, ". %d goroutines, %v per run (scenarios 6–11, 13, 14: 20 s; 12: 2 min), each server started afresh for every run; "+
		"scenarios 6–9, 12 and 14: go-chi/httprate 100 calls a 1 s sliding window, in the harness's process; "+
		"3, 13 and 14: pacer's four processes share Redis, with WithLimitSync(%v).\n\n", o.Goroutines, o.Duration, o.LimitSync)
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
