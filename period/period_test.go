package period

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Skipf("no time zone database: %v", err)
	}
	return loc
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestBoundsExamples(t *testing.T) {
	la := zone(t, "America/Los_Angeles")
	for _, tc := range []struct {
		name       string
		p          Period
		at         string
		start, end string
	}{
		// 2026-03-08: Los Angeles springs forward, 02:00 PST → 03:00 PDT
		// (10:00 UTC). 02:30 does not exist: the reset is at the jump.
		{"spring forward, 02:30 skipped: the day before", Daily(2, 30, la), "2026-03-08T09:59:59Z", "2026-03-07T10:30:00Z", "2026-03-08T10:00:00Z"},
		{"spring forward, 02:30 skipped: at the jump", Daily(2, 30, la), "2026-03-08T10:00:00Z", "2026-03-08T10:00:00Z", "2026-03-09T09:30:00Z"},
		{"spring forward, midnight", Daily(0, 0, la), "2026-03-08T12:00:00Z", "2026-03-08T08:00:00Z", "2026-03-09T07:00:00Z"},
		// 2026-11-01: Los Angeles falls back, 02:00 PDT → 01:00 PST (09:00
		// UTC). 01:30 happens twice: the reset is at the first, once.
		{"fall back, 01:30 twice: first", Daily(1, 30, la), "2026-11-01T08:30:00Z", "2026-11-01T08:30:00Z", "2026-11-02T09:30:00Z"},
		{"fall back, 01:30 twice: second is no reset", Daily(1, 30, la), "2026-11-01T09:45:00Z", "2026-11-01T08:30:00Z", "2026-11-02T09:30:00Z"},
		{"fall back, 01:30 twice: before", Daily(1, 30, la), "2026-11-01T08:29:59Z", "2026-10-31T08:30:00Z", "2026-11-01T08:30:00Z"},
		{"fall back, 02:30 once", Daily(2, 30, la), "2026-11-01T10:00:00Z", "2026-10-31T09:30:00Z", "2026-11-01T10:30:00Z"},
		{"UTC daily", Daily(0, 0, time.UTC), "2026-12-01T13:14:15Z", "2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z"},
		{"weekly on Monday", Weekly(time.Monday, 9, 0, time.UTC), "2026-12-01T08:00:00Z", "2026-11-30T09:00:00Z", "2026-12-07T09:00:00Z"},
		{"weekly on Monday, before its reset", Weekly(time.Monday, 9, 0, time.UTC), "2026-11-30T08:59:59Z", "2026-11-23T09:00:00Z", "2026-11-30T09:00:00Z"},
		{"weekly on Sunday, across spring forward", Weekly(time.Sunday, 2, 30, la), "2026-03-10T00:00:00Z", "2026-03-08T10:00:00Z", "2026-03-15T09:30:00Z"},
		{"monthly on the 31st: April has 30 days", Monthly(31, 0, 0, time.UTC), "2026-05-15T00:00:00Z", "2026-04-30T00:00:00Z", "2026-05-31T00:00:00Z"},
		{"monthly on the 31st: February", Monthly(31, 0, 0, time.UTC), "2026-03-01T00:00:00Z", "2026-02-28T00:00:00Z", "2026-03-31T00:00:00Z"},
		{"monthly on the 29th: leap February", Monthly(29, 0, 0, time.UTC), "2028-03-01T00:00:00Z", "2028-02-29T00:00:00Z", "2028-03-29T00:00:00Z"},
		{"monthly on the 29th: common February", Monthly(29, 0, 0, time.UTC), "2027-03-01T00:00:00Z", "2027-02-28T00:00:00Z", "2027-03-29T00:00:00Z"},
		{"monthly across the year", Monthly(15, 12, 0, time.UTC), "2027-01-10T00:00:00Z", "2026-12-15T12:00:00Z", "2027-01-15T12:00:00Z"},
		{"monthly in Los Angeles, across spring forward", Monthly(1, 0, 0, la), "2026-03-20T00:00:00Z", "2026-03-01T08:00:00Z", "2026-04-01T07:00:00Z"},
		{"window", Window(24 * time.Hour), "2026-12-01T13:00:00Z", "2026-12-01T13:00:00Z", "2026-12-02T13:00:00Z"},
	} {
		start, end := tc.p.Bounds(utc(tc.at))
		if !start.Equal(utc(tc.start)) || !end.Equal(utc(tc.end)) {
			t.Errorf("%s: %v at %s: [%v, %v), want [%s, %s)", tc.name, tc.p, tc.at,
				start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), tc.start, tc.end)
		}
	}
}

// Time runs, minute by minute, across the days Los Angeles changes its
// clocks: a budget that resets daily at 02:30 resets exactly once a day, at
// 02:30 local time, or at the jump on the day 02:30 does not exist.
func TestDailyResetsAcrossDSTInVirtualTime(t *testing.T) {
	la := zone(t, "America/Los_Angeles")
	p := Daily(2, 30, la)
	for _, span := range []struct{ from, to string }{
		{"2026-03-06T00:00:00Z", "2026-03-11T00:00:00Z"},
		{"2026-10-30T00:00:00Z", "2026-11-04T00:00:00Z"},
	} {
		var resets []string
		now := utc(span.from)
		_, end := p.Bounds(now)
		for ; now.Before(utc(span.to)); now = now.Add(time.Minute) {
			if !now.Before(end) {
				var start time.Time
				start, end = p.Bounds(now)
				resets = append(resets, start.In(la).Format("Jan 2 15:04 MST"))
				if !start.Equal(now) {
					t.Fatalf("the period starting %v began at %v, not when time reached it", start, now)
				}
			}
		}
		got := strings.Join(resets, ", ")
		want := map[string]string{
			"2026-03-06T00:00:00Z": "Mar 6 02:30 PST, Mar 7 02:30 PST, Mar 8 03:00 PDT, Mar 9 02:30 PDT, Mar 10 02:30 PDT",
			"2026-10-30T00:00:00Z": "Oct 30 02:30 PDT, Oct 31 02:30 PDT, Nov 1 02:30 PST, Nov 2 02:30 PST, Nov 3 02:30 PST",
		}[span.from]
		if got != want {
			t.Errorf("resets: %s\nwant:   %s", got, want)
		}
	}
}

// For any instant, the period holds it, is the period of each of its own
// instants, and is followed by the next with neither gap nor overlap.
func TestBoundsProperties(t *testing.T) {
	zones := []*time.Location{time.UTC}
	for _, name := range []string{"America/Los_Angeles", "Europe/London", "Australia/Lord_Howe", "Asia/Kolkata", "Pacific/Apia", "America/Santiago"} {
		zones = append(zones, zone(t, name))
	}
	rng := rand.New(rand.NewPCG(2, 3))
	from, span := utc("2010-01-01T00:00:00Z"), 20*365*24*time.Hour
	for range 20000 {
		loc := zones[rng.IntN(len(zones))]
		hour, minute := rng.IntN(24), rng.IntN(60)
		var p Period
		switch rng.IntN(3) {
		case 0:
			p = Daily(hour, minute, loc)
		case 1:
			p = Weekly(time.Weekday(rng.IntN(7)), hour, minute, loc)
		default:
			p = Monthly(1+rng.IntN(31), hour, minute, loc)
		}
		at := from.Add(time.Duration(rng.Int64N(int64(span))))
		start, end := p.Bounds(at)
		if at.Before(start) || !at.Before(end) {
			t.Fatalf("%v at %v: [%v, %v) does not hold it", p, at, start, end)
		}
		if s, e := p.Bounds(start); !s.Equal(start) || !e.Equal(end) {
			t.Fatalf("%v: the period of its start %v is [%v, %v), not [%v, %v)", p, start, s, e, start, end)
		}
		if s, e := p.Bounds(end.Add(-time.Nanosecond)); !s.Equal(start) || !e.Equal(end) {
			t.Fatalf("%v: the period of its last instant is [%v, %v), not [%v, %v)", p, s, e, start, end)
		}
		if s, _ := p.Bounds(end); !s.Equal(end) {
			t.Fatalf("%v: the period after [%v, %v) starts at %v", p, start, end, s)
		}
		if max := 32 * 24 * time.Hour; end.Sub(start) > max {
			t.Fatalf("%v: [%v, %v) is longer than a month", p, start, end)
		}
	}
}

// Pacific/Apia skipped 30 December 2011: the clocks went from 29 December
// 23:59:59 (-10) to 31 December 00:00 (+14). The reset of the skipped day
// falls at the jump.
func TestSkippedDay(t *testing.T) {
	apia := zone(t, "Pacific/Apia")
	p := Daily(2, 30, apia)
	start, end := p.Bounds(utc("2011-12-30T10:00:00Z")) // the jump
	if want := utc("2011-12-30T10:00:00Z"); !start.Equal(want) {
		t.Errorf("start %v, want %v", start.UTC(), want)
	}
	if want := utc("2011-12-30T12:30:00Z"); !end.Equal(want) { // 31 Dec 02:30 +14
		t.Errorf("end %v, want %v", end.UTC(), want)
	}
}

func TestValidate(t *testing.T) {
	la := zone(t, "America/Los_Angeles")
	for _, tc := range []struct {
		p    Period
		want string // "" for valid
	}{
		{Daily(2, 30, la), ""},
		{Window(time.Hour), ""},
		{Monthly(31, 23, 59, time.UTC), ""},
		{Period{}, "zero Period"},
		{Window(0), "must be positive"},
		{Daily(24, 0, la), "not a time of day"},
		{Daily(0, 60, la), "not a time of day"},
		{Daily(-1, 0, la), "not a time of day"},
		{Daily(0, 0, nil), "time zone is nil"},
		{Weekly(7, 0, 0, la), "not a weekday"},
		{Monthly(0, 0, 0, la), "between 1 and 31"},
		{Monthly(32, 0, 0, la), "between 1 and 31"},
	} {
		err := tc.p.Validate()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: Validate() = %v, want %q", tc.p, err, tc.want)
		}
		if err != nil {
			now := utc("2026-12-01T00:00:00Z")
			if s, e := tc.p.Bounds(now); !s.Equal(now) || !e.Equal(now) {
				t.Errorf("%v: invalid, yet Bounds = [%v, %v)", tc.p, s, e)
			}
		}
	}
}

func TestString(t *testing.T) {
	la := zone(t, "America/Los_Angeles")
	for p, want := range map[Period]string{
		Daily(2, 30, la):              "daily at 02:30 America/Los_Angeles",
		Weekly(time.Monday, 9, 0, la): "weekly on Monday at 09:00 America/Los_Angeles",
		Monthly(31, 0, 0, time.UTC):   "monthly on day 31 at 00:00 UTC",
		Window(24 * time.Hour):        "window of 24h0m0s",
		Period{}:                      "none",
		{kind: 9}:                     "invalid period",
	} {
		if got := p.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}
