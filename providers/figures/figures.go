// Package figures is the source table of pacer's provider presets: every
// number a preset paces by, with the provider's page it was read from, the
// date it was read and the words that state it.
//
// A figure the provider does not publish is kept in the table too, marked
// with the reason it stays unverified, so that "pacer presets" can show it
// and a user can judge it before trusting it. The presets make such figures
// provisional (learned over from the provider's headers where it sends
// them) or conservative (set below what the provider is known to allow).
package figures

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// A Figure is one number a preset uses.
type Figure struct {
	Preset string  // the preset and its variant: "stripe live", "anthropic start"
	Name   string  // what it limits: "global requests", "code search requests"
	Scope  string  // the pacer scope it sets; "" when it sets none (an error code, a segment size)
	Value  float64 // the number
	Unit   string  // what Value counts and per what: "requests/s", "tokens/min", "segments"
	// Source is the address of the provider's own page that states it.
	Source string
	// Read is the date the page was read, YYYY-MM-DD.
	Read string
	// Quote is the page's own words for the figure, short. On an
	// unverified figure it is what the page in Source does say — a copy's
	// words, or the provider's words that stop short of the figure — and
	// Unverified says why that is not enough.
	Quote string
	// Unverified, when not empty, says why the figure could not be found in
	// a primary source, and how the preset copes (provisional or
	// conservative). A verified figure leaves it empty.
	Unverified string
	// Note says anything else a reader should know: a disagreement between
	// sources and which one was chosen, a provider's caveat.
	Note string
}

// Verified reports whether the figure is quoted from the provider's page.
func (f Figure) Verified() bool { return f.Unverified == "" }

// String returns the figure in one line, for logs and errors.
func (f Figure) String() string {
	return fmt.Sprintf("%s: %s = %s %s", f.Preset, f.Name, formatValue(f.Value), f.Unit)
}

func formatValue(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%g", v)
}

// FormatValue returns v as the table prints it: an integer without a
// fraction, anything else in its shortest form.
func FormatValue(v float64) string { return formatValue(v) }

// Check returns an error naming every figure of fs that lacks what a figure
// must carry: a preset, a name, a unit, and either a source address, a date
// read and a quote, or the reason it stays unverified (with the address of
// the page that was searched or that came closest, when there is one).
func Check(fs []Figure) error {
	var errs []error
	for _, f := range fs {
		var missing []string
		if f.Preset == "" {
			missing = append(missing, "preset")
		}
		if f.Name == "" {
			missing = append(missing, "name")
		}
		if f.Unit == "" {
			missing = append(missing, "unit")
		}
		if f.Verified() {
			if !strings.HasPrefix(f.Source, "https://") {
				missing = append(missing, "source address")
			}
			if f.Quote == "" {
				missing = append(missing, "quote")
			}
		}
		if f.Read != "" || f.Verified() {
			if _, err := time.Parse(time.DateOnly, f.Read); err != nil {
				missing = append(missing, "date read (YYYY-MM-DD)")
			}
		}
		if len(missing) > 0 {
			errs = append(errs, fmt.Errorf("figure %v lacks %s", f, strings.Join(missing, ", ")))
		}
	}
	return errors.Join(errs...)
}

// Find returns the figure of fs with this preset and name, and whether
// there is one.
func Find(fs []Figure, preset, name string) (Figure, bool) {
	for _, f := range fs {
		if f.Preset == preset && f.Name == name {
			return f, true
		}
	}
	return Figure{}, false
}

// LastVerified returns the latest date on which a verified figure of fs was
// read, "" when none is verified.
func LastVerified(fs []Figure) string {
	last := ""
	for _, f := range fs {
		if f.Verified() && f.Read > last {
			last = f.Read
		}
	}
	return last
}

// Compare returns an error naming each figure of want, keyed
// "preset/name", that fs lacks or gives another value than want's. The
// emulator tests hold a preset to the emulator's documented numbers with
// it, so that a preset figure changed alone fails.
func Compare(fs []Figure, want map[string]float64) error {
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(want)) {
		preset, name, _ := strings.Cut(key, "/")
		f, ok := Find(fs, preset, name)
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s: no such figure in the table, the emulator documents %v", key, formatValue(want[key])))
		case f.Value != want[key]:
			errs = append(errs, fmt.Errorf("%s: preset figure %v, the emulator documents %v", key, formatValue(f.Value), formatValue(want[key])))
		}
	}
	return errors.Join(errs...)
}
