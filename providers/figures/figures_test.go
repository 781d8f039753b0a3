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
