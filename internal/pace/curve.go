package pace

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// A Curve is the climb back of a cut pace: the share of the full pace in
// use at a time t seconds after the cut, wmax + c·(t − k)³, between F0 and
// 1, which reaches 1 Over after it would from the bottom of the curve: fast
// at first, flat near Wmax (the level the server last refused above), then
// faster again beyond it. A Curve is immutable: a new cut makes a new one.
type Curve struct {
	At   int64   // UnixNano of the cut
	Wmax float64 // the share the server was measured to accept
	F0   float64 // the share just after the cut
	c    float64 // per second cubed
	k    float64 // seconds until the curve is back at Wmax
	Full int64   // UnixNano when the curve reaches 1
	Over time.Duration
	// Measured says Wmax is what the server was measured to accept, not a
	// guess from too little history.
	Measured bool
	// Overruled says the cut came from a refusal no count explained: the
	// server refused while each count the answer carried said the call
	// fitted. The counts are not all the server limits by (a second limit
	// it does not report, as GitHub's secondary ones), so the climb paces
	// the scope below what they allow until it ends (Model.Pace).
	Overruled bool
}

// NewCurve returns the climb back from a cut at at, from f0 to wmax and on
// to 1: Over from the floor to the full pace when nothing is refused on
// the way.
func NewCurve(at time.Time, wmax, f0 float64, over time.Duration, measured bool) *Curve {
	r := &Curve{At: at.UnixNano(), Wmax: wmax, F0: f0, Over: over, Measured: measured}
	s := over.Seconds()
	r.c = 1 / (s * s * s)
	r.k = math.Cbrt((wmax - f0) / r.c)
	// wmax + c·(t−k)³ = 1  ⇔  t = k + ∛((1−wmax)/c)
	r.Full = r.At + int64((r.k+math.Cbrt((1-wmax)/r.c))*1e9)
	return r
}

// Factor returns the share of the full pace at now (UnixNano).
func (r *Curve) Factor(now int64) float64 {
	if now >= r.Full {
		return 1
	}
	t := float64(now-r.At)/1e9 - r.k
	return min(1, max(r.F0, r.Wmax+r.c*t*t*t))
}

// Reaches returns when the curve first reaches x, as UnixNano: the cut's
// own time if it is there from the start, Full at the latest.
func (r *Curve) Reaches(x float64) int64 {
	switch {
	case x >= 1:
		return r.Full
	case x <= r.F0:
		return r.At
	}
	// wmax + c·(t−k)³ = x  ⇔  t = k + ∛((x−wmax)/c)
	t := r.k + math.Cbrt((x-r.Wmax)/r.c)
	return min(r.Full, r.At+int64(t*1e9))
}

// Record returns the curve as a pace record, the short printable text a
// fleet's store keeps (store.CheckPaceRecord): what another instance needs
// to climb the same curve. Its last field is the flags: 1 Measured, 2
// Overruled.
func (r *Curve) Record() string {
	flags := 0
	if r.Measured {
		flags |= 1
	}
	if r.Overruled {
		flags |= 2
	}
	return fmt.Sprintf("cut1 %d %s %s %d %d", r.At, strconv.FormatFloat(r.Wmax, 'g', -1, 64),
		strconv.FormatFloat(r.F0, 'g', -1, 64), int64(r.Over), flags)
}

// ParseRecord reads a pace record that Record wrote; false for any other,
// and for one whose climb would last longer than maxOver: a record written
// by a later version, or by something else, never holds a scope down for
// longer.
func ParseRecord(rec string, maxOver time.Duration) (*Curve, bool) {
	f := strings.Fields(rec)
	if len(f) != 6 || f[0] != "cut1" {
		return nil, false
	}
	at, err1 := strconv.ParseInt(f[1], 10, 64)
	wmax, err2 := strconv.ParseFloat(f[2], 64)
	f0, err3 := strconv.ParseFloat(f[3], 64)
	over, err4 := strconv.ParseInt(f[4], 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil || at <= 0 || len(f[5]) != 1 || f[5][0] < '0' || f[5][0] > '3' {
		return nil, false
	}
	if !(f0 >= MinFactor && f0 <= wmax && wmax <= 1) || over <= 0 || time.Duration(over) > maxOver {
		return nil, false
	}
	flags := f[5][0] - '0'
	r := NewCurve(time.Unix(0, at), wmax, f0, time.Duration(over), flags&1 != 0)
	r.Overruled = flags&2 != 0
	return r, true
}

// MinFactor is the least share of its pace a cut leaves a scope.
const MinFactor = 1.0 / 1024
