package bench

import (
	"bytes"
	"strings"
	"testing"
)

func TestWriteOverhead(t *testing.T) {
	out := `goos: linux
BenchmarkRoundTrip/stub-2   	 100	 100.0 ns/op	 144 B/op	 1 allocs/op
BenchmarkRoundTrip/stub-2   	 100	 120.0 ns/op	 144 B/op	 1 allocs/op
BenchmarkRoundTrip/stub-2   	 100	 500.0 ns/op	 144 B/op	 1 allocs/op
BenchmarkRoundTrip/rate+semaphore-2	 100	 300 ns/op
BenchmarkRoundTrip/pacer-2  	 100	 520 ns/op
BenchmarkParseQuotas_IETF-2 	 100	 999 ns/op
BenchmarkPeers/stub-2       	 100	 70 ns/op
BenchmarkPeers/rate+semaphore-2	 100	 250 ns/op
BenchmarkPeers/retryablehttp-2	 100	 430 ns/op
BenchmarkOther/stub-2       	 100	 10 ns/op
BenchmarkOther/thing-2      	 100	 20 ns/op
PASS
`
	runs, order, err := ParseBench(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if got := runs["BenchmarkRoundTrip/stub"]; len(got) != 3 {
		t.Fatalf("stub runs = %v, want 3 of them", got)
	}
	var b bytes.Buffer
	if err := WriteOverhead(&b, runs, order, "rate+semaphore"); err != nil {
		t.Fatal(err)
	}
	// Overheads against each group's own stub median (120, 70 and 10),
	// and as multiples of the same group's rate+semaphore (180 and 180).
	for _, want := range []string{
		"| BenchmarkRoundTrip/rate+semaphore | 300 | 180 ns | 1.00× |",
		"| BenchmarkRoundTrip/pacer | 520 | 400 ns | 2.22× |",
		"| BenchmarkPeers/retryablehttp | 430 | 360 ns | 2.00× |",
		"| BenchmarkOther/thing | 20 | 10 ns | — |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "ParseQuotas") || strings.Contains(b.String(), "/stub |") {
		t.Errorf("table lists a benchmark that has no stub sibling, or a stub:\n%s", b.String())
	}
	runs, order, _ = ParseBench(strings.NewReader("BenchmarkX/a-2 1 5 ns/op\n"))
	if err := WriteOverhead(&b, runs, order, "rate+semaphore"); err == nil {
		t.Error("output without any stub gave no error")
	}
}
