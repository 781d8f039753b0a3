package main

import (
	"testing"
	"time"

	"github.com/pacer-go/pacer/pool"
)

// The example, shorter, against its loopback fake: no call fails, the
// revoked key is out after its first 401s, each of which went to another
// key, and every key took calls.
func TestPoolExample(t *testing.T) {
	r := run(time.Second, 8)
	if r.failed != 0 {
		t.Errorf("%d calls failed", r.failed)
	}
	if r.rejected*100 > r.ok {
		t.Errorf("%d 429s of %d calls, want at most 1%%", r.rejected, r.ok)
	}
	for _, m := range r.members {
		if m.Admitted == 0 {
			t.Errorf("member %s took no call", m.Name)
		}
		// Each call in flight when the key was revoked drew a 401, and
		// went on to another member: at most one per caller.
		if m.Name == "medium" && (m.State != pool.Out || m.RotatedAway < 1 || m.RotatedAway != m.Refused || m.Refused > 8) {
			t.Errorf("the revoked member: %+v, want out, each of its 401s (one per caller at most) moved to another member", m)
		}
	}
}
