package figures

import (
	"strings"
	"testing"
)

func TestCheckNamesWhatAFigureLacks(t *testing.T) {
	good := Figure{Preset: "p", Name: "n", Unit: "requests/s", Value: 1,
		Source: "https://example.com/limits", Read: "2026-12-01", Quote: "1 request per second"}
	unverified := Figure{Preset: "p", Name: "u", Unit: "calls", Read: "2026-12-01", Unverified: "not published"}
	if err := Check([]Figure{good, unverified}); err != nil {
		t.Fatalf("a sourced and an unverified figure: %v", err)
	}
	for _, c := range []struct {
		f    func(*Figure)
		want string
	}{
		{func(f *Figure) { f.Source = "" }, "source address"},
		{func(f *Figure) { f.Source = "docs.example.com" }, "source address"},
		{func(f *Figure) { f.Quote = "" }, "quote"},
		{func(f *Figure) { f.Read = "" }, "date read"},
		{func(f *Figure) { f.Read = "1 Dec 2026" }, "date read"},
		{func(f *Figure) { f.Unit = "" }, "unit"},
	} {
		f := good
		c.f(&f)
		if err := Check([]Figure{f}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want it to name %q", f, err, c.want)
		}
	}
}

func TestLastVerifiedSkipsUnverified(t *testing.T) {
	fs := []Figure{{Read: "2026-11-30", Quote: "q"}, {Read: "2026-12-02", Unverified: "why"}}
	if got := LastVerified(fs); got != "2026-11-30" {
		t.Fatalf("LastVerified = %q", got)
	}
}

func TestCompareNamesEachDifference(t *testing.T) {
	fs := []Figure{{Preset: "p", Name: "a", Value: 1}, {Preset: "p", Name: "b", Value: 2}}
	if err := Compare(fs, map[string]float64{"p/a": 1, "p/b": 2}); err != nil {
		t.Fatalf("equal figures: %v", err)
	}
	err := Compare(fs, map[string]float64{"p/a": 1, "p/b": 3, "p/c": 4})
	if err == nil || !strings.Contains(err.Error(), "p/b: preset figure 2, the emulator documents 3") ||
		!strings.Contains(err.Error(), "p/c: no such figure") || strings.Contains(err.Error(), "p/a") {
		t.Fatalf("error %v, want p/b's value and p/c's absence named, p/a not", err)
	}
}
