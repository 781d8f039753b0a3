package pace

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// Whatever a server says — counts beyond any limit, limits of one or of
// billions, resets of nothing or of a year, answers that overtake each
// other, marks that run backwards, send times from the future — and
// whatever the scope's paces, a Record never panics, and its verdicts are
// numbers: a pace that is finite and never below the floor, a hold within
// the maximum wait, a left that is no NaN.
func TestAHostileServerGetsNumbers(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 11))
	pick := func(vs ...int64) int64 { return vs[rng.IntN(len(vs))] }
	for run := range 200 {
		o := &Record{}
		now := t0
		spent := int64(0)
		sc := Scope{Blind: []float64{0.01, 10, 90, 1e6}[run%4], Configured: 100, Unreported: 100, Floor: 1.0 / 30,
			Per: []time.Duration{0, time.Second, time.Minute}[run%3], BlindWithin: run%2 == 0, CountsRequests: run%5 != 0, MaxWait: 30 * time.Second}
		for range 200 {
			now = now.Add(time.Duration(rng.Int64N(int64(300 * time.Millisecond))))
			spent += rng.Int64N(5)
			c := Count{
				Remaining: pick(0, 1, 10, 99, 100, 1e9, rng.Int64N(200)),
				Reset:     time.Duration(pick(0, int64(time.Second), int64(time.Millisecond), int64(365*24*time.Hour), rng.Int64N(int64(2*time.Second)))),
				Limit:     pick(-1, 1, 11, 100, 1e12),
				Mark:      spent - rng.Int64N(40) + pick(0, 0, 0, -1e6, 1e6),
				Refused:   pick(0, 0, 1, 1e9),
				Sent:      now.Add(-time.Duration(rng.Int64N(int64(time.Second)))).UnixNano() + pick(0, 0, int64(time.Hour)),
				Local:     run%3 != 0,
				Fleet:     run%7 == 0,
			}
			sc.Spent = spent
			if rng.IntN(10) == 0 {
				o.Refused(now, c.Mark, 1, c.Sent)
			}
			o.LearnWindow(now.Add(c.Reset), c.Reset%time.Second == 0)
			v := o.Count(now, c, sc)
			if math.IsNaN(v.Left) {
				t.Fatalf("run %d: %+v read a NaN left", run, c)
			}
			if v.Paced && (math.IsNaN(v.Rate) || math.IsInf(v.Rate, 0) || v.Rate < sc.Floor && !v.Roomless) {
				t.Fatalf("run %d: %+v set a pace of %v (floor %v)", run, c, v.Rate, sc.Floor)
			}
			if v.Hold < 0 || v.Hold > sc.MaxWait {
				t.Fatalf("run %d: %+v held for %v, beyond the maximum wait %v", run, c, v.Hold, sc.MaxWait)
			}
			if r := o.Refill(now, sc.Per); r < 0 {
				t.Fatalf("run %d: the next refill is %v from now", run, r)
			}
		}
	}
}
