package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pacer-go/pacer/internal/testservers"
	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/storetest"
)

// An undo gives back what a take took, unless the bucket is a window that
// has started again since: what was taken went with the old window, and
// giving it to the new one would let the new window grant more than its
// burst. A plain refund has no way to tell.
func TestUndoKeepsToItsWindow(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: testservers.RedisAddr(t)})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	s := New(rdb, WithPrefix("pacer-test"), WithCallerClock())
	w := store.Demand{Scope: storetest.Scope(t), Burst: 2, Window: 10 * time.Second, Cost: 1}
	at := func(d time.Duration) time.Time { return storetest.Start.Add(d) }
	take := func(now time.Time) string {
		t.Helper()
		reply, err := s.run(ctx, "take", now, []store.Demand{w}, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		d, err := decision(reply, 1)
		took := tookOf(reply)
		if err != nil || !d.OK || took == "" {
			t.Fatalf("take at %v = %v, %v; want granted, with its time", now.Sub(storetest.Start), reply, err)
		}
		return took
	}
	take(at(0))                               // the window starts
	late := take(at(9999 * time.Millisecond)) // its last token, a moment before it ends
	take(at(10001 * time.Millisecond))        // the next window: 1 left
	if _, err := s.run(ctx, "undo", at(10002*time.Millisecond), []store.Demand{w}, nil, late); err != nil {
		t.Fatal(err)
	}
	take(at(10003 * time.Millisecond)) // the new window's last
	if reply, err := s.run(ctx, "take", at(10004*time.Millisecond), []store.Demand{w}, nil, ""); err != nil || reply[0] != 0 {
		t.Fatalf("a third take in a window of 2 = %v, %v; want denied (the undo gave the old window's token to the new one)", reply, err)
	}

	// Within its window an undo gives back, as a refund does.
	took := take(at(20001 * time.Millisecond))
	if _, err := s.run(ctx, "undo", at(20002*time.Millisecond), []store.Demand{w}, nil, took); err != nil {
		t.Fatal(err)
	}
	take(at(20003 * time.Millisecond))
	take(at(20003 * time.Millisecond))
}
