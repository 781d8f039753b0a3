package prices

import (
	"math"
	"strconv"
	"strings"
)

// Money is an amount of US dollars, held as a whole number of micro-dollars
// (1 micro-dollar = $0.000001), so that sums are exact whatever their
// order. It is a struct so that a plain number never passes for money:
// say an amount with Dollars or Micros. The zero Money is $0.
type Money struct{ micros int64 }

// MicrosPerDollar is how many micro-dollars make a dollar.
const MicrosPerDollar = 1_000_000

// Dollars returns d dollars: Dollars(0.5) is $0.50, Dollars(3) is $3.00.
//
// It keeps d as written to the sixth decimal place and drops the digits
// beyond it (toward zero): Dollars(0.3) is exactly 300,000 micro-dollars,
// not the 299,999.99… the float holds, and Dollars(0.0000019) is 1
// micro-dollar, never 2, so a limit is never more money than was said.
// An amount beyond what an int64 of micro-dollars holds (about $9.2
// trillion), or +Inf, saturates; -Inf and NaN give the most negative
// amount, which every check of a price or a budget refuses as negative.
func Dollars(d float64) Money {
	switch {
	case math.IsNaN(d) || math.IsInf(d, -1):
		return Money{math.MinInt64}
	case d >= math.MaxInt64/MicrosPerDollar: // whole dollars only below: the micro-dollars fit
		return Money{math.MaxInt64}
	case d <= math.MinInt64/MicrosPerDollar:
		return Money{math.MinInt64}
	}
	// The shortest decimal that reads back as d is what the caller wrote.
	s := strconv.FormatFloat(math.Abs(d), 'f', -1, 64)
	whole, frac, _ := strings.Cut(s, ".")
	frac = (frac + "000000")[:6]
	w, _ := strconv.ParseInt(whole, 10, 64)
	f, _ := strconv.ParseInt(frac, 10, 64)
	m := w*MicrosPerDollar + f
	if d < 0 {
		m = -m
	}
	return Money{m}
}

// Micros returns n micro-dollars: Micros(500_000) is $0.50.
func Micros(n int64) Money { return Money{n} }

// Micros returns m in micro-dollars.
func (m Money) Micros() int64 { return m.micros }

// Dollars returns m in dollars, as a float: for display and metrics, not
// for sums (add Money, which is exact).
func (m Money) Dollars() float64 { return float64(m.micros) / MicrosPerDollar }

// IsZero reports whether m is $0.
func (m Money) IsZero() bool { return m.micros == 0 }

// Add returns m + o, saturating at the largest and smallest amounts an
// int64 of micro-dollars holds rather than wrapping around.
func (m Money) Add(o Money) Money {
	s := m.micros + o.micros
	switch {
	case o.micros > 0 && s < m.micros:
		return Money{math.MaxInt64}
	case o.micros < 0 && s > m.micros:
		return Money{math.MinInt64}
	}
	return Money{s}
}

// String returns m in dollars with cents, and the micro-dollars below a
// cent when there are any: "$0.50", "$12.00", "$0.000222", "-$1.25".
func (m Money) String() string {
	n := m.micros
	sign := ""
	var u uint64
	if n < 0 {
		sign, u = "-", uint64(-(n+1))+1
	} else {
		u = uint64(n)
	}
	frac := strconv.FormatUint(u%MicrosPerDollar+MicrosPerDollar, 10)[1:] // six digits
	frac = strings.TrimRight(frac, "0")
	if len(frac) < 2 {
		frac = (frac + "00")[:2]
	}
	return sign + "$" + strconv.FormatUint(u/MicrosPerDollar, 10) + "." + frac
}
