package pacer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/store"
)

func TestLimitPace(t *testing.T) {
	tests := []struct {
		limit     Limit
		headroom  float64
		rate      float64
		burst     float64
		rationale string
	}{
		{PerSecond(100), 0.9, 90, 10, "a tenth of the count is left for the burst"},
		{PerMinute(3500), 0.9, 52.5, 350, "OpenAI-sized RPM"},
		{PerSecond(10), 0.9, 9, 1, "a burst is at least one"},
		{PerSecond(10), 1, 10, 1, "no headroom still allows one call at a time"},
		{PerHour(5000), 0.8, 5000 * 0.8 / 3600, 1000, "GitHub's REST limit with more headroom"},
		{Limit{Count: 100, Per: time.Second, Burst: 40}, 0.9, 90, 40, "an explicit burst is kept"},
		{Limit{}, 0.9, 0, 0, "the zero limit paces nothing"},
	}
	for _, tt := range tests {
		rate, burst := tt.limit.shape(tt.headroom)
		if diff := rate - tt.rate; diff > 1e-9 || diff < -1e-9 || burst != tt.burst {
			t.Errorf("%v at headroom %v: rate %v burst %v, want %v and %v (%s)", tt.limit, tt.headroom, rate, burst, tt.rate, tt.burst, tt.rationale)
		}
	}
}

func TestLimitValidate(t *testing.T) {
	bad := []Limit{{Count: -1, Per: time.Second}, {Count: 10}, {Per: time.Second}, {Count: 1, Per: time.Second, Burst: -1}}
	for _, l := range bad {
		if l.validate() == nil {
			t.Errorf("%#v: validate() = nil, want an error", l)
		}
	}
	for _, l := range []Limit{{}, PerSecond(1), PerHour(1)} {
		if err := l.validate(); err != nil {
			t.Errorf("%v: %v", l, err)
		}
	}
}

// A limit of one per 290 years is absurd, not impossible: the second
// request waits, saturated at LongestWait, and is refused as a wait that
// does not fit its deadline, not as a request too big for its bucket
// (ErrExceedsCapacity), which would tell the caller to make it smaller.
func TestAbsurdLimitWaitSaturates(t *testing.T) {
	tr := New(&stubAPI{clock: clock.System}, WithLimit(Limit{Count: 1, Per: 290 * 365 * 24 * time.Hour}), WithoutRetry())
	mustNotErr(t, tr.Err())
	mustNotErr(t, get(tr, context.Background(), "http://api.test/"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	err := get(tr, ctx, "http://api.test/")
	var te *ThrottledError
	if !errors.As(err, &te) || errors.Is(err, ErrExceedsCapacity) || te.Reason != observe.ReasonRate || te.RetryAfter != store.LongestWait {
		t.Fatalf("the second call of one per 290 years returned %v; want a ThrottledError for the rate, RetryAfter LongestWait", err)
	}
}
