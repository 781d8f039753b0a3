// Command pacer is pacer's command-line companion.
//
//	pacer simulate [flags]   run limiters side by side on synthetic traffic
//	pacer probe [flags] URL  send one request and say what pacer understands of the response
//	pacer presets [name]     print the presets' figures with their sources
//	pacer help [command]     print usage
//
// Exit codes: 0 on success, 1 when the command failed while running, 2 for
// bad usage (an unknown command, a bad flag, a setting out of range).
package main

import (
	"fmt"
	"io"
	"os"
)

// A command is one subcommand. Adding one is adding an entry to commands.
type command struct {
	name    string
	summary string // one line, for the list of commands
	// run runs the command with the arguments after its name and returns the
	// exit code. It prints its own usage for -h.
	run func(args []string, stdout, stderr io.Writer) int
}

// commands is filled in init, because help refers back to it.
var commands []command

func init() {
	commands = []command{
		{"simulate", "run limiters side by side on the same synthetic traffic", runSimulate},
		{"probe", "send one request and print what pacer understands of the response's limits", runProbe},
		{"presets", "print each provider preset's figures, sources and dates read", runPresets},
		{"help", "print this help, or a command's: pacer help simulate", runHelp},
	}
}

const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole program, with its arguments (without the program name)
// and outputs passed in so that tests can call it.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		return runHelp(nil, stdout, stderr)
	}
	cmd, ok := findCommand(args[0])
	if !ok {
		return unknownCommand(stderr, "pacer", args[0])
	}
	return cmd.run(args[1:], stdout, stderr)
}

func findCommand(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func unknownCommand(stderr io.Writer, who, name string) int {
	fmt.Fprintf(stderr, "%s: unknown command %q\n\n", who, name)
	printUsage(stderr)
	return exitUsage
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage: pacer <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "pacer <command> -h" for a command's flags.`)
}

// runHelp prints the usage of the program, or of the command it names.
func runHelp(args []string, stdout, stderr io.Writer) int {
	if len(args) > 1 {
		fmt.Fprintln(stderr, "pacer help: name at most one command")
		return exitUsage
	}
	if len(args) == 0 || args[0] == "help" {
		printUsage(stdout)
		return exitOK
	}
	cmd, ok := findCommand(args[0])
	if !ok {
		return unknownCommand(stderr, "pacer help", args[0])
	}
	return cmd.run([]string{"-h"}, stdout, stderr)
}
