package main

import (
	"bytes"
	"strings"
	"testing"
)

// runCLI runs the program with args and returns its exit code and outputs.
func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		code       int
		wantStdout string // "" when usage goes to stderr
		wantStderr string
	}{
		{nil, exitUsage, "", "Usage: pacer <command>"},
		{[]string{"-h"}, exitOK, "Usage: pacer <command>", ""},
		{[]string{"--help"}, exitOK, "simulate", ""},
		{[]string{"help"}, exitOK, "Commands:", ""},
		{[]string{"help", "help"}, exitOK, "Commands:", ""},
		{[]string{"help", "simulate"}, exitOK, "-spike-rate", ""},
		{[]string{"simulate", "-h"}, exitOK, "Usage: pacer simulate", ""},
		{[]string{"frobnicate"}, exitUsage, "", `unknown command "frobnicate"`},
		{[]string{"help", "frobnicate"}, exitUsage, "", `unknown command "frobnicate"`},
		{[]string{"help", "simulate", "extra"}, exitUsage, "", "at most one command"},
	} {
		code, stdout, stderr := runCLI(tc.args...)
		if code != tc.code {
			t.Errorf("pacer %q: exit %d, want %d", tc.args, code, tc.code)
		}
		if tc.wantStdout != "" && !strings.Contains(stdout, tc.wantStdout) {
			t.Errorf("pacer %q: stdout %q, want it to contain %q", tc.args, stdout, tc.wantStdout)
		}
		if tc.wantStderr != "" && !strings.Contains(stderr, tc.wantStderr) {
			t.Errorf("pacer %q: stderr %q, want it to contain %q", tc.args, stderr, tc.wantStderr)
		}
		if tc.code != exitOK && stdout != "" {
			t.Errorf("pacer %q failed but printed to stdout: %q", tc.args, stdout)
		}
	}
}
