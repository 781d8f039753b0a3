package simulate

import (
	"math"
	"slices"
	"testing"
	"time"
)

func smallConfig() Config {
	c := Default()
	c.Duration = 4 * time.Second
	c.Rate = 4
	c.SpikeRate = 8
	c.SpikeStart, c.SpikeEnd = time.Second, 2*time.Second
	return c
}

func times(arrivals []Arrival) []time.Duration {
	var out []time.Duration
	for _, a := range arrivals {
		out = append(out, a.At)
	}
	return out
}

func ms(ns ...int) []time.Duration {
	var out []time.Duration
	for _, n := range ns {
		out = append(out, time.Duration(n)*time.Millisecond)
	}
	return out
}

func TestEvenArrivals(t *testing.T) {
	got := times(Arrivals(smallConfig()))
	want := ms(0, 250, 500, 750,
		1000, 1125, 1250, 1375, 1500, 1625, 1750, 1875, // the spike: 8 in second 1
		2000, 2250, 2500, 2750,
		3000, 3250, 3500, 3750)
	if !slices.Equal(got, want) {
		t.Errorf("arrivals %v, want %v", got, want)
	}
}

func TestClumpedArrivals(t *testing.T) {
	c := smallConfig()
	c.Arrivals = Clumped
	c.Duration = 2 * time.Second
	got := times(Arrivals(c))
	want := ms(0, 25, 50, 75,
		1000, 1012, 1025, 1037, 1050, 1062, 1075, 1087) // 100 ms / 8, rounded down to the nanosecond
	for i := range want {
		if i < len(got) && got[i]-want[i] >= 0 && got[i]-want[i] < time.Millisecond {
			got[i] = want[i]
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("arrivals %v, want %v", got, want)
	}
}

func TestSharedArrivalsInterleaveTheClients(t *testing.T) {
	c := smallConfig()
	c.Clients = 3
	c.Duration = time.Second
	got := Arrivals(c)
	// Four a second each, twelve in all: every 1/12 s, the clients in turn.
	if len(got) != 12 {
		t.Fatalf("%d arrivals, want 3 clients × 4", len(got))
	}
	for i, a := range got {
		want := Arrival{At: time.Duration(i) * time.Second / 12, Client: i % 3}
		if a != want {
			t.Errorf("arrival %d = %+v, want %+v", i, a, want)
		}
	}
}

func TestPoissonArrivalsAreReproducibleAndHaveTheirRate(t *testing.T) {
	c := Default()
	c.Arrivals = Poisson
	a, b := Arrivals(c), Arrivals(c)
	if !slices.Equal(a, b) {
		t.Error("the same seed gave different arrivals")
	}
	c.Seed = 2
	if slices.Equal(a, Arrivals(c)) {
		t.Error("another seed gave the same arrivals")
	}
	// 4000 expected; a Poisson count's standard deviation is its root.
	if n := float64(len(a)); math.Abs(n-4000) > 5*math.Sqrt(4000) {
		t.Errorf("%v arrivals, want about 4000", n)
	}
	if !slices.IsSortedFunc(a, func(x, y Arrival) int { return compare(x.At, y.At) }) {
		t.Error("arrivals out of order")
	}
	if a[len(a)-1].At >= c.Duration {
		t.Errorf("an arrival at %v, after the run", a[len(a)-1].At)
	}
}
