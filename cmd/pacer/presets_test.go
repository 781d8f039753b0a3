package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pacer-go/pacer/providers/figures"
)

// Every figure of every preset with a table carries its source, and the
// command prints them.
func TestPresetsPrintsEveryFigureWithItsSource(t *testing.T) {
	code, stdout, stderr := runCLI("presets")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, p := range presetTables {
		fs := p.figures()
		if err := figures.Check(fs); err != nil {
			t.Errorf("%s: %v", p.name, err)
		}
		header := p.name + " (last verified 2026-"
		if figures.LastVerified(fs) == "" {
			header = p.name + " (no figure verified"
		}
		if !strings.Contains(stdout, header) {
			t.Errorf("no dated header for %s in:\n%s", p.name, stdout)
		}
		for _, f := range fs {
			if !strings.Contains(stdout, f.Source) {
				t.Errorf("%v: source %s not printed", f, f.Source)
			}
			// What the page says is printed, verified or not.
			if q := fmt.Sprintf("%q", f.Quote); f.Quote != "" && !strings.Contains(stdout, q) {
				t.Errorf("%v: quote %s not printed", f, q)
			}
		}
	}
	if !strings.Contains(stdout, "UNVERIFIED") {
		t.Error("no unverified figure shown; the tables hold some")
	}
}

func TestPresetsJSON(t *testing.T) {
	code, stdout, stderr := runCLI("presets", "-json", "stripe")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got []struct {
		Name         string           `json:"name"`
		LastVerified string           `json:"last_verified"`
		Figures      []figures.Figure `json:"figures"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "stripe" || len(got[0].Figures) == 0 || got[0].LastVerified == "" {
		t.Fatalf("got %+v", got)
	}
	if f, ok := figures.Find(got[0].Figures, "stripe live", "global requests"); !ok || f.Value != 100 || f.Source == "" {
		t.Errorf("stripe live global: %+v", f)
	}
}

func TestPresetsUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"presets", "nosuch"}, exitUsage, `no preset "nosuch"`},
		{[]string{"presets", "a", "b"}, exitUsage, "at most one preset"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("pacer %q: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

// "pacer presets stripe" says what a workload's Max gives on one endpoint,
// where the global figure alone suggests four times as much.
func TestPresetsStripeSaysMaxIsPerEndpoint(t *testing.T) {
	code, stdout, stderr := runCLI("presets", "stripe")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "one endpoint 15.8/s") || !strings.Contains(stdout, "not the 63/s") {
		t.Errorf("pacer presets stripe does not say that Max 0.7 gives 15.8/s on one endpoint, not 63/s:\n%s", stdout)
	}
}
