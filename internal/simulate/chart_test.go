package simulate

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestWriteSVGIsWellFormedForEveryScenario(t *testing.T) {
	shared := tinyConfig()
	shared.Clients = 3
	clumped := tinyConfig()
	clumped.Arrivals = Clumped
	quiet := tinyConfig()
	quiet.Rate, quiet.SpikeRate = 0, 0 // nothing offered: every series is flat zero
	for name, c := range map[string]Config{"tiny": tinyConfig(), "shared": shared, "clumped": clumped, "quiet": quiet, "default": Default()} {
		r, err := Run(c)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteSVG(&b, r, "a <scenario> & more"); err != nil {
			t.Fatal(err)
		}
		dec := xml.NewDecoder(&b)
		panels := 0
		for {
			tok, err := dec.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: not well-formed XML: %v", name, err)
			}
			if s, ok := tok.(xml.StartElement); ok && s.Name.Local == "g" {
				panels++
			}
		}
		if panels != 4 {
			t.Errorf("%s: %d panels, want 4", name, panels)
		}
		if strings.Contains(b.String(), "NaN") || strings.Contains(b.String(), "Inf") {
			t.Errorf("%s: the SVG has a coordinate that is not a number", name)
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteSVGReportsWriteErrors(t *testing.T) {
	r, err := Run(tinyConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteSVG(failingWriter{}, r, "tiny"); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("WriteSVG to a failing writer = %v, want its error", err)
	}
}

func TestNiceTicks(t *testing.T) {
	for _, tc := range []struct {
		top  float64
		want int
		last float64
	}{
		{200, 4, 200}, {149, 4, 150}, {60, 6, 60}, {1396, 2, 2000}, {0, 2, 1}, {4, 6, 4},
	} {
		ticks := niceTicks(tc.top, tc.want)
		if got := ticks[len(ticks)-1]; got != tc.last || ticks[0] != 0 {
			t.Errorf("niceTicks(%v, %d) = %v, want 0 … %v", tc.top, tc.want, ticks, tc.last)
		}
	}
}
