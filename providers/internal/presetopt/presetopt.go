// Package presetopt words what is wrong with the arguments a provider
// preset's options were given, in the words the caller wrote — the
// option and its argument ("openai.WithConcurrency(-1)") — not in those of
// the scopes the preset would have declared with them.
package presetopt

import (
	"fmt"
	"strings"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/internal/optionerr"
)

// A Field is a named count of a preset's limits: "RPM", 500.
type Field struct {
	Name string
	N    int
}

// Negative returns what is wrong with the fields below zero, nil when none
// is: "RPM -5 and TPM -1 must not be negative (0 means no limit)".
func Negative(fields ...Field) error {
	var bad []string
	for _, f := range fields {
		if f.N < 0 {
			bad = append(bad, fmt.Sprintf("%s %d", f.Name, f.N))
		}
	}
	switch len(bad) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%s must not be negative (0 means no limit)", bad[0])
	}
	return fmt.Errorf("%s must not be negative (0 means no limit)", strings.Join(bad, " and "))
}

// Errors collects what is wrong with a preset's arguments, each under the
// option that was given it.
type Errors []error

// Add records err, if not nil, under option, and reports whether it did.
func (e *Errors) Add(option string, err error) bool {
	if err == nil {
		return false
	}
	*e = append(*e, fmt.Errorf("%s: %w", option, err))
	return true
}

// Options returns the options that make pacer.New's Err report them.
func (e Errors) Options() []pacer.Option {
	o := make([]pacer.Option, len(e))
	for i, err := range e {
		o[i] = optionerr.Report[pacer.Option](err)
	}
	return o
}
