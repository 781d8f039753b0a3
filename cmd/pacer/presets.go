package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/pacer-go/pacer/providers/anthropic"
	"github.com/pacer-go/pacer/providers/figures"
	"github.com/pacer-go/pacer/providers/github"
	"github.com/pacer-go/pacer/providers/openai"
	"github.com/pacer-go/pacer/providers/slack"
	"github.com/pacer-go/pacer/providers/stripe"
	"github.com/pacer-go/pacer/providers/twilio"
	"github.com/pacer-go/pacer/providers/whatsapp"
)

// presetTables are the providers whose figures carry a source table, in
// the order "pacer presets" lists them.
var presetTables = []struct {
	name    string
	figures func() []figures.Figure
}{
	{"anthropic", anthropic.Figures},
	{"github", github.Figures},
	{"openai", openai.Figures},
	{"slack", slack.Figures},
	{"stripe", stripe.Figures},
	{"twilio", twilio.Figures},
	{"whatsapp", whatsapp.Figures},
}

func runPresets(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pacer presets", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the figures as JSON, for tooling")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: pacer presets [-json] [name]")
		fmt.Fprintln(fs.Output())
		fmt.Fprintln(fs.Output(), "Prints each provider preset's figures: the scope each sets, the number, the")
		fmt.Fprintln(fs.Output(), "page it was read from, the date it was read and the page's words, or why the")
		fmt.Fprintln(fs.Output(), "figure stays unverified. Check them against your own account before trusting them.")
		fmt.Fprintln(fs.Output())
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fs.SetOutput(stdout)
			fs.Usage()
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 1 {
		fmt.Fprintln(stderr, "pacer presets: name at most one preset")
		return exitUsage
	}
	want := ""
	if fs.NArg() == 1 {
		want = strings.ToLower(fs.Arg(0))
	}
	type preset struct {
		Name         string           `json:"name"`
		LastVerified string           `json:"last_verified,omitempty"`
		Figures      []figures.Figure `json:"figures"`
	}
	var out []preset
	for _, p := range presetTables {
		if want == "" || want == p.name {
			fs := p.figures()
			out = append(out, preset{p.name, figures.LastVerified(fs), fs})
		}
	}
	if want != "" && len(out) == 0 {
		fmt.Fprintf(stderr, "pacer presets: no preset %q; the presets are %s\n", want, strings.Join(presetNames(), ", "))
		return exitUsage
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			fmt.Fprintln(stderr, "pacer presets:", err)
			return exitFailed
		}
		return exitOK
	}
	for i, p := range out {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		if p.LastVerified != "" {
			fmt.Fprintf(stdout, "%s (last verified %s)\n", p.Name, p.LastVerified)
		} else {
			// Say so rather than print an empty date: every figure below
			// carries the reason it could not be verified.
			fmt.Fprintf(stdout, "%s (no figure verified against the provider's own pages)\n", p.Name)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		for _, f := range p.Figures {
			scope := f.Scope
			if scope == "" {
				scope = "-"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s %s\t%s\n", f.Preset, f.Name, figures.FormatValue(f.Value), f.Unit, scope)
		}
		tw.Flush()
		for _, f := range p.Figures {
			fmt.Fprintf(stdout, "  - %s, %s: ", f.Preset, f.Name)
			if f.Verified() {
				fmt.Fprintf(stdout, "%s (read %s): %q\n", f.Source, f.Read, f.Quote)
			} else {
				fmt.Fprintf(stdout, "UNVERIFIED: %s (searched %s, %s)\n", f.Unverified, f.Source, f.Read)
				if f.Quote != "" {
					fmt.Fprintf(stdout, "    it says: %q\n", f.Quote)
				}
			}
			if f.Note != "" {
				fmt.Fprintf(stdout, "    note: %s\n", f.Note)
			}
		}
	}
	return exitOK
}

func presetNames() []string {
	var names []string
	for _, p := range presetTables {
		names = append(names, p.name)
	}
	slices.Sort(names)
	return names
}
