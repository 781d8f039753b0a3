package bench

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// ParseBench reads `go test -bench` output and returns each benchmark's
// ns/op runs, by name without the -GOMAXPROCS suffix, and the names in the
// order they first appear.
func ParseBench(r io.Reader) (map[string][]float64, []string, error) {
	runs := make(map[string][]float64)
	var order []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		for i := 2; i+1 < len(f); i += 2 {
			if f[i+1] != "ns/op" {
				continue
			}
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, nil, fmt.Errorf("%q: %v", sc.Text(), err)
			}
			if _, seen := runs[name]; !seen {
				order = append(order, name)
			}
			runs[name] = append(runs[name], v)
		}
	}
	return runs, order, sc.Err()
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// WriteOverhead writes a Markdown table of each benchmark's overhead: its
// median ns/op less the median of its sibling ".../stub" (the same benchmark
// group's bare transport), and that overhead as a multiple of the overhead
// of its sibling ".../"+reference — so that every ratio compares figures
// from one binary and one run. Benchmarks without a stub sibling are left
// out; a group without the reference gets no ratio.
func WriteOverhead(w io.Writer, runs map[string][]float64, order []string, reference string) error {
	over := func(name string) (float64, bool) {
		i := strings.LastIndexByte(name, '/')
		if i < 0 || name[i+1:] == "stub" {
			return 0, false
		}
		stub, ok := runs[name[:i]+"/stub"]
		if !ok || len(runs[name]) == 0 {
			return 0, false
		}
		return median(runs[name]) - median(stub), true
	}
	fmt.Fprintf(w, "| benchmark | ns/op (median) | overhead over stub | × %s's |\n", reference)
	fmt.Fprintln(w, "|-----------|---------------:|-------------------:|------:|")
	rows := 0
	for _, name := range order {
		o, ok := over(name)
		if !ok {
			continue
		}
		rows++
		ratio := "—"
		if ref, ok := over(name[:strings.LastIndexByte(name, '/')+1] + reference); ok && ref > 0 {
			ratio = fmt.Sprintf("%.2f×", o/ref)
		}
		fmt.Fprintf(w, "| %s | %.0f | %.0f ns | %s |\n", name, median(runs[name]), o, ratio)
	}
	if rows == 0 {
		return fmt.Errorf("no benchmark with a stub beside it in the output")
	}
	return nil
}
