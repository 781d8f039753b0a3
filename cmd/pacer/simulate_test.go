package main

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestSimulateDefaultTable(t *testing.T) {
	code, stdout, stderr := runCLI("simulate")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// The default run, worked out by hand (60 s; 40/s, 200/s in [20 s, 30 s),
	// arrivals 25 ms apart, 5 ms in the spike):
	//   token bucket, 100 at 50/s: all 800 before the spike; in it, the 100
	//     tokens and 50/s × 9.995 s of refill until its last arrival, 599;
	//     all 1200 after. Its busiest second is the spike's first: 100 + 49.
	//   fixed window, 500 per 10 s: 400 in each window but [20 s, 30 s),
	//     which allows 500, its first 400 in the first two seconds.
	//   sliding window, 500 in any 10 s: the window holds 400 when the spike
	//     starts, so 100 more at once, then 40/s as the old ones leave.
	//   pacer, 45/s with a burst of 5: all 800 before the spike at once
	//     (40/s is under its pace); from 20 s on the burst and 45/s,
	//     5 + 45 × 40 − 1 for the nanosecond rounding of the last wait.
	for _, want := range []string{
		`token-bucket\s+4000\s+2599\s+1401\s+149\s+-`,
		`fixed-window\s+4000\s+2500\s+1500\s+200\s+-`,
		`sliding-window\s+4000\s+2500\s+1500\s+140\s+-`,
		`pacer\s+4000\s+2604\s+0\s+49\s+1396\s`,
	} {
		if !regexp.MustCompile(want).MatchString(stdout) {
			t.Errorf("the table has no row matching %s:\n%s", want, stdout)
		}
	}
	for _, want := range []string{"Scenario spike", "busiest second", "45/s with a burst of 5", "sliding log"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestSimulateJSON(t *testing.T) {
	code, stdout, stderr := runCLI("simulate", "--json", "--scenario", "shared", "--clients", "2", "--duration", "10s", "--spike-start", "2s", "--spike-end", "4s")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out struct {
		Scenario string
		Limiters []map[string]any
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if out.Scenario != "shared" {
		t.Errorf("scenario %q, want shared", out.Scenario)
	}
	var names []string
	for _, l := range out.Limiters {
		name, _ := l["name"].(string)
		names = append(names, name)
		for _, key := range []string{"offered", "allowed", "rejected", "busiest_second"} {
			if _, ok := l[key].(float64); !ok {
				t.Errorf("%s: %q is %v, want a number", name, key, l[key])
			}
		}
		if l["offered"] != 2*(8*40+2*200.0) {
			t.Errorf("%s: offered %v, want 2 clients × (8 s × 40 + 2 s × 200)", name, l["offered"])
		}
		if clients, _ := l["clients"].([]any); len(clients) != 2 {
			t.Errorf("%s: clients %v, want 2 entries", name, l["clients"])
		}
		if _, queued := l["queued_at_end"]; queued != (name == "pacer") {
			t.Errorf("%s: queued_at_end present: %v; want it for pacer only", name, queued)
		}
	}
	if strings.Join(names, ",") != "token-bucket,fixed-window,sliding-window,pacer" {
		t.Errorf("limiters %v", names)
	}
	if l := out.Limiters[3]; l["rejected"] != 0.0 || l["delay_p50_ms"] == nil {
		t.Errorf("pacer: %v, want rejected 0 and its delays", l)
	}
}

func TestSimulateRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rate", "-1"}, "rate -1"},
		{[]string{"--spike-rate", "-200"}, "spike-rate"},
		{[]string{"--duration", "0s"}, "duration"},
		{[]string{"--duration", "1.5s"}, "whole number of seconds"},
		{[]string{"--window", "0s"}, "window"},
		{[]string{"--refill", "-50"}, "refill"},
		{[]string{"--refill", "NaN"}, "refill"},
		{[]string{"--refill", "abc"}, "invalid value"},
		{[]string{"--capacity", "0"}, "capacity"},
		{[]string{"--headroom", "1.5"}, "headroom"},
		{[]string{"--clients", "0"}, "clients"},
		{[]string{"--spike-start", "50s", "--spike-end", "40s"}, "spike-start"},
		{[]string{"--arrivals", "bursty"}, "must be one of"},
		{[]string{"--scenario", "nope"}, `unknown scenario "nope"`},
		{[]string{"--clump-width", "-1s", "--scenario", "clumped"}, "clump-width"},
		{[]string{"--pacer-per", "0s"}, "pacer-per"},
		{[]string{"--rate", "99999999999999999999"}, "invalid value"},
		{[]string{"--no-such-flag"}, "not defined"},
		{[]string{"extra"}, "unexpected argument"},
	} {
		code, stdout, stderr := runCLI(append([]string{"simulate"}, tc.args...)...)
		if code != exitUsage {
			t.Errorf("simulate %q: exit %d, want %d", tc.args, code, exitUsage)
		}
		if !strings.Contains(stderr, tc.want) || !strings.HasPrefix(stderr, "pacer simulate: ") {
			t.Errorf("simulate %q: stderr %q, want an error mentioning %q", tc.args, stderr, tc.want)
		}
		if stdout != "" {
			t.Errorf("simulate %q: printed %q to stdout", tc.args, stdout)
		}
	}
}

func TestSimulateWritesAValidSVG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chart.svg")
	code, _, stderr := runCLI("simulate", "--svg", path)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Decode every token of the file: any XML error fails the test.
	dec := xml.NewDecoder(f)
	var root string
	panels := map[string][]string{} // panel id → classes of its paths
	var panel string
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not valid XML: %v", err)
		}
		start, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root == "" {
			root = start.Name.Space + " " + start.Name.Local
		}
		switch attr(start, "class") {
		case "panel":
			panel = attr(start, "id")
		case "offered", "allowed", "level":
			panels[panel] = append(panels[panel], attr(start, "class"))
		}
	}
	if root != "http://www.w3.org/2000/svg svg" {
		t.Errorf("root element %q, want svg in the SVG namespace", root)
	}
	for _, name := range []string{"token-bucket", "fixed-window", "sliding-window", "pacer"} {
		if got := strings.Join(panels["panel-"+name], ","); got != "offered,allowed,level" {
			t.Errorf("panel %s draws %q, want offered,allowed,level", name, got)
		}
	}
}

func attr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func TestSimulateReportsAnUnwritableSVG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no-such-dir", "chart.svg")
	code, stdout, stderr := runCLI("simulate", "--svg", path)
	if code != exitFailed || !strings.Contains(stderr, "no-such-dir") || stdout != "" {
		t.Errorf("exit %d, stderr %q, stdout %q; want exit %d naming the path and no table", code, stderr, stdout, exitFailed)
	}
}
