package providertest

import (
	"testing"
	"time"
)

func TestMostInWindow(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	at := func(ms ...int) []time.Time {
		var ts []time.Time
		for _, m := range ms {
			ts = append(ts, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return ts
	}
	cases := []struct {
		name  string
		times []time.Time
		cost  []int64
		want  int64
	}{
		{"none", nil, nil, 0},
		{"apart", at(0, 1000, 2000), nil, 1},
		{"window is half-open", at(0, 999, 1000), nil, 2},
		{"unsorted", at(1500, 0, 500, 900), nil, 3},
		{"weighted", at(0, 100, 2000), []int64{5, 1, 5}, 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := MostInWindow(c.times, c.cost, time.Second); got != c.want {
				t.Fatalf("MostInWindow = %d, want %d", got, c.want)
			}
		})
	}
}
