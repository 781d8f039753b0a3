// Package period says when a budget's period starts and ends: a window of
// fixed length, or a calendar period — daily, weekly or monthly at a time of
// day in a named time zone — the way providers' invoices and users' plans
// reset.
//
// Bounds is a pure function of the instant it is given: every process of a
// fleet that asks about the same instant gets the same period, so a store
// can key a period's spend by its start without any process coordinating.
//
// # Daylight saving time
//
// A calendar period resets on its day at the first instant the local clock
// reads the reset time or later. So:
//
//   - When the reset time does not exist that day (the clocks skip it:
//     02:30 on a day America/Los_Angeles springs forward from 02:00 to
//     03:00), the period resets as the clocks jump, at 03:00 local time.
//   - When the reset time exists twice (the clocks repeat it: 01:30 on a
//     day Los Angeles falls back from 02:00 to 01:00), the period resets
//     at the first, and only once.
//   - A day the zone skips entirely (Pacific/Apia skipped 30 December 2011)
//     resets at the instant the clocks jump over it.
//
// A day's period is therefore 23 or 25 hours long, or shorter, around a
// transition; it is never empty, and periods never overlap or leave gaps.
package period

import (
	"fmt"
	"time"
)

// A Period is a budget's period. The zero Period is invalid; make one with
// Window, Daily, Weekly or Monthly.
type Period struct {
	kind    kind
	window  time.Duration
	loc     *time.Location
	hour    int
	minute  int
	weekday time.Weekday
	day     int
}

type kind uint8

const (
	invalid kind = iota
	window
	daily
	weekly
	monthly
)

// Window returns a period of length d that starts with the first call after
// the previous period ended — pacer's budgets before calendar periods. Its
// start depends on when calls come, not on the calendar, so it is kept by
// the store; Bounds(t) returns the window that a call at t would start.
func Window(d time.Duration) Period { return Period{kind: window, window: d} }

// Daily returns a period that resets every day at hour:minute in loc.
func Daily(hour, minute int, loc *time.Location) Period {
	return Period{kind: daily, hour: hour, minute: minute, loc: loc}
}

// Weekly returns a period that resets every week on day at hour:minute in
// loc.
func Weekly(day time.Weekday, hour, minute int, loc *time.Location) Period {
	return Period{kind: weekly, weekday: day, hour: hour, minute: minute, loc: loc}
}

// Monthly returns a period that resets every month on the given day (1 to
// 31) at hour:minute in loc. A month shorter than day resets on its last
// day: Monthly(31, …) resets on 30 April and on 28 or 29 February.
func Monthly(day, hour, minute int, loc *time.Location) Period {
	return Period{kind: monthly, day: day, hour: hour, minute: minute, loc: loc}
}

// IsWindow reports whether p is a Window, whose start the store keeps,
// rather than a calendar period.
func (p Period) IsWindow() bool { return p.kind == window }

// Validate reports what is wrong with p, if anything.
func (p Period) Validate() error {
	switch p.kind {
	case invalid:
		return fmt.Errorf("period: the zero Period is not a period; use period.Window, Daily, Weekly or Monthly")
	case window:
		if p.window <= 0 {
			return fmt.Errorf("period: Window(%v) must be positive", p.window)
		}
		return nil
	}
	switch {
	case p.loc == nil:
		return fmt.Errorf("period %v: the time zone is nil; use time.UTC or time.LoadLocation(\"America/Los_Angeles\")", p)
	case p.hour < 0 || p.hour > 23 || p.minute < 0 || p.minute > 59:
		return fmt.Errorf("period %v: the reset time %d:%02d is not a time of day (hour 0 to 23, minute 0 to 59)", p, p.hour, p.minute)
	case p.kind == weekly && (p.weekday < time.Sunday || p.weekday > time.Saturday):
		return fmt.Errorf("period %v: %d is not a weekday (time.Sunday to time.Saturday)", p, p.weekday)
	case p.kind == monthly && (p.day < 1 || p.day > 31):
		return fmt.Errorf("period %v: day %d of the month must be between 1 and 31", p, p.day)
	}
	return nil
}

// String describes p: "daily at 02:30 America/Los_Angeles". The zero
// Period, which a Budget without a calendar period holds, is "none"; any
// other that does not Validate is "invalid period".
func (p Period) String() string {
	if p == (Period{}) {
		return "none"
	}
	zone := "<nil>"
	if p.loc != nil {
		zone = p.loc.String()
	}
	switch p.kind {
	case window:
		return fmt.Sprintf("window of %v", p.window)
	case daily:
		return fmt.Sprintf("daily at %02d:%02d %s", p.hour, p.minute, zone)
	case weekly:
		return fmt.Sprintf("weekly on %v at %02d:%02d %s", p.weekday, p.hour, p.minute, zone)
	case monthly:
		return fmt.Sprintf("monthly on day %d at %02d:%02d %s", p.day, p.hour, p.minute, zone)
	}
	return "invalid period"
}

// Bounds returns the period that contains t: start ≤ t < end. For a Window
// it is [t, t+d). A Period that does not Validate has no bounds: Bounds
// returns t, t.
func (p Period) Bounds(t time.Time) (start, end time.Time) {
	if p.Validate() != nil {
		return t, t
	}
	if p.kind == window {
		return t, t.Add(p.window)
	}
	// k numbers the periods; boundary(k) is when period k starts. Start from
	// the period of t's local date, then step, since around a transition the
	// local date and the period may disagree.
	k := p.index(t.In(p.loc))
	start = p.boundary(k)
	for start.After(t) {
		k--
		start = p.boundary(k)
	}
	end = p.boundary(k + 1)
	for !end.After(t) {
		k++
		start, end = end, p.boundary(k+1)
	}
	return start, end
}

// Start returns the start of the period that contains t.
func (p Period) Start(t time.Time) time.Time { s, _ := p.Bounds(t); return s }

// End returns the end of the period that contains t: when spending may
// resume if the budget is exhausted.
func (p Period) End(t time.Time) time.Time { _, e := p.Bounds(t); return e }

// A civil day is a date counted in days since 1970-01-01, without a zone.
func civil(y int, m time.Month, d int) int64 {
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

func date(day int64) (int, time.Month, int) { return time.Unix(day*86400, 0).UTC().Date() }

// index returns the number of the period that local's date falls in.
func (p Period) index(local time.Time) int64 {
	y, m, d := local.Date()
	switch p.kind {
	case daily:
		return civil(y, m, d)
	case weekly:
		// 1970-01-01 was a Thursday: shift so that weeks start on p.weekday.
		day := civil(y, m, d) - int64(p.weekday-time.Thursday)
		return floorDiv(day, 7)
	default:
		return int64(y)*12 + int64(m) - 1
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// boundary returns when period k starts.
func (p Period) boundary(k int64) time.Time {
	switch p.kind {
	case daily:
		y, m, d := date(k)
		return p.resetOn(y, m, d)
	case weekly:
		y, m, d := date(k*7 + int64(p.weekday-time.Thursday))
		return p.resetOn(y, m, d)
	default:
		y, m := int(floorDiv(k, 12)), time.Month(k-floorDiv(k, 12)*12+1)
		last := time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
		return p.resetOn(y, m, min(p.day, last))
	}
}

// resetOn returns the first instant the local clock reads the reset time,
// or later, on the date y-m-d.
func (p Period) resetOn(y int, m time.Month, d int) time.Time {
	t := time.Date(y, m, d, p.hour, p.minute, 0, 0, p.loc)
	zoneStart, zoneEnd := t.ZoneBounds()
	if wall(t) == wallOf(y, m, d, p.hour, p.minute) {
		// The time exists; if the clocks fell back over it, it exists
		// twice, and time.Date may have chosen either: take the first,
		// in the zone before the transition.
		if !zoneStart.IsZero() {
			_, before := zoneStart.Add(-time.Nanosecond).Zone()
			_, now := t.Zone()
			if first := t.Add(time.Duration(now-before) * time.Second); before > now && first.Before(zoneStart) {
				return first
			}
		}
		return t
	}
	// The clocks jumped over the reset time: the first instant past it is
	// the jump, which time.Date's answer lies on one side of.
	if wall(t) > wallOf(y, m, d, p.hour, p.minute) {
		return zoneStart
	}
	return zoneEnd
}

// wall returns t's local date and time of day, to the minute, as a number
// that orders like them.
func wall(t time.Time) int64 {
	y, m, d := t.Date()
	return wallOf(y, m, d, t.Hour(), t.Minute())
}

func wallOf(y int, m time.Month, d, hour, minute int) int64 {
	return (civil(y, m, d)*24+int64(hour))*60 + int64(minute)
}
