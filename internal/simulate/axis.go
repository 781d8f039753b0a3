package simulate

import (
	"math"
	"strconv"
)

// niceTicks returns tick values from 0 to at least top, at a step of 1, 2
// or 5 times a power of ten chosen to give about want ticks. The last tick
// is the axis's top. top ≤ 0 gives the ticks of an axis up to 1.
func niceTicks(top float64, want int) []float64 {
	if !(top > 0) || math.IsInf(top, 0) {
		top = 1
	}
	raw := top / float64(max(want, 1))
	magnitude := math.Pow(10, math.Floor(math.Log10(raw)))
	step := magnitude
	for _, m := range []float64{1, 2, 5, 10} {
		if step = m * magnitude; step >= raw {
			break
		}
	}
	var ticks []float64
	for i := 0; ; i++ {
		v := float64(i) * step
		ticks = append(ticks, v)
		if v >= top-1e-9 {
			return ticks
		}
	}
}

// label formats a tick value without a trailing .0: 0, 2.5, 100.
func label(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// A scale maps a value in [0, top] onto pixels from low (at 0) to high.
type scale struct {
	top       float64
	low, high float64
}

func (s scale) at(v float64) float64 {
	return s.low + (s.high-s.low)*v/s.top
}
