package main

import (
	"testing"
	"time"
)

// TestQuickstartShowsTheDifference runs the quickstart's comparison on a
// smaller scale against its real loopback fake: the plain client is refused,
// pacer is not, and every interactive click gets through.
func TestQuickstartShowsTheDifference(t *testing.T) {
	tr := traffic{backfillCalls: 40, backfillPool: 8, clicks: 5, clickEvery: 100 * time.Millisecond}
	plain, paced := compare(tr)
	if plain.rejected == 0 {
		t.Errorf("the plain client was never refused: %+v", plain)
	}
	if paced.rejected != 0 || paced.backfillOK != int64(tr.backfillCalls) || paced.interactiveOK != int64(tr.clicks) {
		t.Errorf("pacer: %+v, want every call accepted", paced)
	}
}
