package pace

import (
	"testing"
	"time"
)

// The model's figures at explicit times: each row one rule of Model.Pace.
func TestModelPace(t *testing.T) {
	at := time.Unix(1000, 0)
	now := at.UnixNano()
	sec := int64(time.Second)
	// 100 a second at 90 %, a burst of 10; at the edge 100 a second, a burst of 2.
	cfg := Configured{Capacity: Capacity{Rate: 90, Burst: 10, Raw: 100, EdgeBurst: 2}}
	// A token bucket's capacity published as its limit: 11 "a second".
	eleven := &Capacity{Rate: 9.9, Burst: 1, Raw: 11, EdgeBurst: 1}
	cut := NewCurve(at, 0.5, 0.4, 10*time.Second, true) // at 0.4 now
	overruling := NewCurve(at, 0.5, 0.4, 10*time.Second, true)
	overruling.Overruled = true
	for _, tt := range []struct {
		name        string
		m           *Model
		cfg         Configured
		rate, burst float64
	}{
		{"nothing learned: the configured limit", nil, cfg, 90, 10},
		{"a published limit replaces the configured one", &Model{Published: eleven}, cfg, 9.9, 1},
		{"a live count within the limit paces by what it says", &Model{Live: LivePace{Rate: 40, Until: now + sec}}, cfg, 40, 10},
		{"a live count at the edge aims at the limit with the edge's burst", &Model{Live: LivePace{Rate: 500, Until: now + sec, Edge: true}}, cfg, 100, 2},
		{"not at the edge, the headroom holds", &Model{Live: LivePace{Rate: 500, Until: now + sec}}, cfg, 90, 10},
		// The configured 100 a second paces while counts come, not the published 11.
		{"live counts outrank a published limit below the configured one", &Model{Published: eleven, Live: LivePace{Rate: 500, Until: now + sec, Edge: true}}, cfg, 100, 2},
		// A provisional limit's replacement paces, at its own edge (all of 11).
		{"a provisional limit is replaced, not outranked", &Model{Published: eleven, Live: LivePace{Rate: 500, Until: now + sec, Edge: true}},
			Configured{Capacity: cfg.Capacity, Provisional: true}, 11, 1},
		{"a count that ran out paces no more", &Model{Live: LivePace{Rate: 1, Until: now}}, cfg, 90, 10},
		// A call waiting at 1 a second must wake by the count's end: a burst of 10 over 0.5 s.
		{"a slow count still wakes a call by its end", &Model{Live: LivePace{Rate: 1, Until: now + sec/2}}, cfg, 20, 10},
		// ... refilling no more than the count has shown the server holds: 4 over 0.5 s.
		{"the wake refills what the server was shown to hold, not a burst beyond it", &Model{Live: LivePace{Rate: 1, Until: now + sec/2, Holds: 4}}, cfg, 8, 10},
		{"a server shown to hold more than the burst: the burst", &Model{Live: LivePace{Rate: 1, Until: now + sec/2, Holds: 40}}, cfg, 20, 10},
		// Once a refusal has cost more than the call: one call by its end, not the burst.
		{"a count of a costly server wakes one call by its end, and no burst", &Model{Live: LivePace{Rate: 1, Until: now + sec/2, WakeOne: true}}, cfg, 2, 1},
		{"what the count allows still paces a costly server", &Model{Live: LivePace{Rate: 40, Until: now + sec/2, WakeOne: true}}, cfg, 40, 10},
		// Run out with no count since: the blind pace, one call at a time.
		{"a report that woke one call ran out", &Model{Live: LivePace{WakeOne: true, Then: now + sec}}, cfg, 90, 1},
		{"one call at a time ends at Then", &Model{Live: LivePace{WakeOne: true, Then: now}}, cfg, 90, 10},
		{"a roomless count's holding caps the burst", &Model{Live: LivePace{Rate: 40, Until: now + sec, Roomless: true, Holds: 1}}, cfg, 40, 1},
		{"a cut scales the blind pace", &Model{Climb: cut}, cfg, 36, 10},
		{"a cut does not scale a live count's pace", &Model{Climb: cut, Live: LivePace{Rate: 40, Until: now + sec}}, cfg, 40, 10},
		// A refusal the count did not explain: the cut scales the count's
		// pace, from the blind one under the limit, not the edge.
		{"a cut overrules a count it contradicts, without the edge", &Model{Climb: overruling, Live: LivePace{Rate: 500, Until: now + sec, Edge: true}}, cfg, 36, 10},
		{"a cut scales a roomless count's", &Model{Climb: cut, Live: LivePace{Rate: 40, Until: now + sec, Roomless: true, Holds: 1}}, cfg, 16, 1},
		{"no rate: a count sets none", &Model{Live: LivePace{Rate: 40, Until: now + sec}}, Configured{}, 0, 0},
	} {
		rate, burst := tt.m.Pace(now, tt.cfg)
		if !near(rate, tt.rate) || burst != tt.burst {
			t.Errorf("%s: pace %v/s, burst %v; want %v/s, %v", tt.name, rate, burst, tt.rate, tt.burst)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestModelBlindAndUnreported(t *testing.T) {
	cfg := Configured{Capacity: Capacity{Rate: 90, Burst: 10}}
	low := &Model{Published: &Capacity{Rate: 9.9, Burst: 1}}
	high := &Model{Published: &Capacity{Rate: 180, Burst: 20}}
	for _, tt := range []struct {
		name              string
		m                 *Model
		cfg               Configured
		blind, unreported float64
	}{
		{"nothing learned", nil, cfg, 90, 90},
		{"published below the configured: counts may outrank it", low, cfg, 9.9, 90},
		{"published below a provisional one: it replaces it", low, Configured{Capacity: cfg.Capacity, Provisional: true}, 9.9, 9.9},
		{"published above the configured", high, cfg, 180, 180},
	} {
		if got := tt.m.Blind(tt.cfg); got != tt.blind {
			t.Errorf("%s: Blind %v, want %v", tt.name, got, tt.blind)
		}
		if got := tt.m.Unreported(tt.cfg); got != tt.unreported {
			t.Errorf("%s: Unreported %v, want %v", tt.name, got, tt.unreported)
		}
	}
}

func TestModelTidy(t *testing.T) {
	at := time.Unix(1000, 0)
	now := at.UnixNano()
	over := NewCurve(at.Add(-time.Hour), 0.5, 0.4, time.Second, true)
	climbing := NewCurve(at, 0.5, 0.4, time.Minute, true)
	pub := &Capacity{Rate: 1}
	live := LivePace{Rate: 5, Until: now + 1}
	for _, tt := range []struct {
		name    string
		m       *Model
		want    *Model // nil: none left; same: m itself
		same    bool
		climbed bool
	}{
		{"nil", nil, nil, false, false},
		{"nothing ran out", &Model{Live: live, Climb: climbing}, nil, true, false},
		{"a count ran out, nothing else left", &Model{Live: LivePace{Rate: 5, Until: now}}, nil, false, false},
		{"a climb ended", &Model{Climb: over, Published: pub}, &Model{Published: pub}, false, true},
		{"a count ran out beside a climb", &Model{Live: LivePace{Rate: 5, Until: now - 1}, Climb: climbing}, &Model{Climb: climbing}, false, false},
		{"both ran out", &Model{Live: LivePace{Until: now}, Climb: over}, nil, false, true},
		// Run out with no count since, a report that woke one call goes on
		// waking one at a time until its Then, and no longer.
		{"a report that woke one call ran out", &Model{Live: LivePace{Rate: 5, Until: now, WakeOne: true, Then: now + 1}}, &Model{Live: LivePace{WakeOne: true, Then: now + 1}}, false, false},
		{"one call at a time, until its Then", &Model{Live: LivePace{WakeOne: true, Then: now + 1}}, nil, true, false},
		{"one call at a time ended", &Model{Live: LivePace{WakeOne: true, Then: now}}, nil, false, false},
	} {
		got, climbed := tt.m.Tidy(now)
		switch {
		case climbed != tt.climbed:
			t.Errorf("%s: climbed %v, want %v", tt.name, climbed, tt.climbed)
		case tt.same && got != tt.m:
			t.Errorf("%s: a new model, want the same", tt.name)
		case !tt.same && (got == nil) != (tt.want == nil):
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		case !tt.same && got != nil && *got != *tt.want:
			t.Errorf("%s: %+v, want %+v", tt.name, *got, *tt.want)
		}
	}
	if m := (&Model{Live: live}); m.Empty() || !(*Model)(nil).Empty() || !(&Model{}).Empty() {
		t.Error("Empty: a live count is something; nil and the zero model are nothing")
	}
}

func TestModelWhy(t *testing.T) {
	at := time.Unix(1000, 0)
	now := at.UnixNano()
	cfg := Configured{Capacity: Capacity{Rate: 90, Burst: 10}}
	cut := &Model{Climb: NewCurve(at, 0.5, 0.4, time.Minute, true), Live: LivePace{Rate: 5, Until: now + 1}}
	for _, tt := range []struct {
		name      string
		m         *Model
		cfg       Configured
		slotsOnly bool
		want      string
	}{
		{"nothing learned", nil, cfg, false, "the configured limit"},
		{"no pace at all", nil, Configured{}, false, ""},
		{"published", &Model{Published: &Capacity{Rate: 1}}, cfg, false, "the provider's published limit"},
		{"a count, and its reading", &Model{Live: LivePace{Rate: 5, Until: now + 1, Why: "spent by the reset"}}, cfg, false, "what the provider reports remains: spent by the reset"},
		{"a count that ran out", &Model{Live: LivePace{Rate: 5, Until: now, Why: "x"}}, cfg, false, "the configured limit"},
		{"a count that woke one call ran out", &Model{Live: LivePace{WakeOne: true, Then: now + 1}}, cfg, false,
			"what the provider reported remains ran out with no news since: one call at a time until it reports again"},
		{"a climb says so first", cut, cfg, false, "recovering from a refusal"},
		{"a climb of a cap on calls in flight", cut, Configured{}, true, "a refusal lowered the cap on calls in flight; it climbs back by time"},
	} {
		if got := tt.m.Why(now, tt.cfg, tt.slotsOnly); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestEdgeBurst(t *testing.T) {
	for _, tt := range []struct {
		requests            bool
		count, burst, wants float64
	}{
		{true, 100, 10, 2},  // 2 % of 100
		{true, 600, 60, 12}, // 2 % of 600
		{true, 600, 5, 5},   // no more than the burst
		{true, 10, 1, 1},    // at least one
		{false, 600, 60, 0}, // tokens keep their burst and headroom
		{true, 0, 10, 0},    // no count, no edge
		{true, 3000, 300, 60},
	} {
		if got := EdgeBurst(tt.requests, tt.count, tt.burst); got != tt.wants {
			t.Errorf("EdgeBurst(%v, %v, %v) = %v, want %v", tt.requests, tt.count, tt.burst, got, tt.wants)
		}
	}
}
