package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/pacer-go/pacer/internal/simulate"
)

// A scenario presets how the traffic arrives and how many clients offer it;
// the flags --arrivals and --clients override it.
type scenario struct {
	name     string
	arrivals simulate.Pattern
	clients  int
	about    string
}

var scenarios = []scenario{
	{"spike", simulate.Even, 1, "one client, requests spread evenly within each second"},
	{"clumped", simulate.Clumped, 1, "one client, each second's requests in its first --clump-width"},
	{"shared", simulate.Even, 3, "several clients (--clients) each offering the traffic, behind one shared limit"},
}

func findScenario(name string) (scenario, bool) {
	for _, s := range scenarios {
		if s.name == name {
			return s, true
		}
	}
	return scenario{}, false
}

// simulateFlags is what the simulate command's flags set.
type simulateFlags struct {
	simulate.Config
	scenario string
	json     bool
	svg      string
}

func newSimulateFlagSet(f *simulateFlags) *flag.FlagSet {
	d := simulate.Default()
	f.Config = d
	// Zero, so that the usage shows no default: the scenario gives it.
	f.Arrivals, f.Clients = "", 0
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run reports errors and usage itself
	fs.StringVar(&f.scenario, "scenario", "spike", "spike, clumped or shared (see Scenarios above)")

	fs.DurationVar(&f.Duration, "duration", d.Duration, "length of the run, in whole seconds")
	fs.IntVar(&f.Rate, "rate", d.Rate, "requests a second each client offers outside the spike")
	fs.IntVar(&f.SpikeRate, "spike-rate", d.SpikeRate, "requests a second each client offers during the spike")
	fs.DurationVar(&f.SpikeStart, "spike-start", d.SpikeStart, "when the spike starts (whole seconds)")
	fs.DurationVar(&f.SpikeEnd, "spike-end", d.SpikeEnd, "when the spike ends (whole seconds); equal to --spike-start for none")
	fs.Var(&f.Arrivals, "arrivals", "the `pattern` of arrivals within each second: even, clumped or poisson (default: the scenario's)")
	fs.DurationVar(&f.ClumpWidth, "clump-width", d.ClumpWidth, "for clumped arrivals: the start of each second that holds its requests")
	fs.Uint64Var(&f.Seed, "seed", d.Seed, "for poisson arrivals: the random seed; the same seed gives the same run")
	fs.IntVar(&f.Clients, "clients", 0, "clients offering the traffic behind one limit (default: the scenario's; 3 for shared)")

	fs.IntVar(&f.Capacity, "capacity", d.Capacity, "token bucket: tokens it holds (and starts with)")
	fs.Float64Var(&f.Refill, "refill", d.Refill, "token bucket: tokens added a second; also the long-run rate of the windows and of pacer's limit")
	fs.DurationVar(&f.Window, "window", d.Window, "fixed and sliding windows: the window, allowing refill × window requests")
	fs.DurationVar(&f.PacerPer, "pacer-per", d.PacerPer, "pacer: the period of the limit it is told of, refill × period per period")
	fs.Float64Var(&f.Headroom, "headroom", d.Headroom, "pacer: the share of the limit it uses, in (0, 1]")

	fs.BoolVar(&f.json, "json", false, "print the results as JSON instead of a table")
	fs.StringVar(&f.svg, "svg", "", "also write a chart of the run to this SVG `file`")
	return fs
}

func printSimulateUsage(w io.Writer) {
	var f simulateFlags
	fs := newSimulateFlagSet(&f)
	fmt.Fprint(w, `Usage: pacer simulate [flags]

Runs a token bucket, a fixed window, a sliding window and pacer's own pacing
side by side on the same synthetic traffic, in virtual time, and prints what
each let through: offered, allowed, rejected, and the busiest single second.

The default run: 60s of 40 requests a second with a spike to 200 a second
from second 20 to second 30; a bucket of 100 tokens refilled at 50 a second;
10s windows (500 each); pacer told of 50 a second and keeping 90% of it.

Scenarios:
`)
	for _, s := range scenarios {
		fmt.Fprintf(w, "  %-8s %s\n", s.name, s.about)
	}
	fmt.Fprint(w, "\nFlags:\n")
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// runSimulate is the simulate command.
func runSimulate(args []string, stdout, stderr io.Writer) int {
	var f simulateFlags
	fs := newSimulateFlagSet(&f)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printSimulateUsage(stdout)
			return exitOK
		}
		return usageError(stderr, err)
	}
	if fs.NArg() > 0 {
		return usageError(stderr, fmt.Errorf("unexpected argument %q; simulate takes only flags", fs.Arg(0)))
	}
	sc, ok := findScenario(f.scenario)
	if !ok {
		return usageError(stderr, fmt.Errorf("unknown scenario %q; use spike, clumped or shared", f.scenario))
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if !set["arrivals"] {
		f.Arrivals = sc.arrivals
	}
	if !set["clients"] {
		f.Clients = sc.clients
	}

	report, err := simulate.Run(f.Config)
	if err != nil {
		return usageError(stderr, err)
	}
	if f.svg != "" {
		if err := writeChart(f.svg, report, sc.name); err != nil {
			fmt.Fprintf(stderr, "pacer simulate: %v\n", err)
			return exitFailed
		}
	}
	if f.json {
		err = writeJSON(stdout, report, sc.name)
	} else {
		err = writeTable(stdout, report, sc.name)
	}
	if err != nil {
		fmt.Fprintf(stderr, "pacer simulate: %v\n", err)
		return exitFailed
	}
	return exitOK
}

func usageError(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "pacer simulate: %v\nRun \"pacer simulate -h\" for the flags.\n", err)
	return exitUsage
}

// writeChart writes the report's chart to the named file.
func writeChart(name string, r *simulate.Report, scenario string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := simulate.WriteSVG(f, r, scenario); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return f.Close()
}
