package redisstore_test

import (
	"context"
	"testing"

	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/store/redisstore"
	"github.com/pacer-go/pacer/storetest"
)

// A call charges several scopes, in several slots of a Cluster, but often
// costs something on one of them only: a refund of a call that was not sent
// gives back its one costly demand, and a settlement adjusts only the
// buckets whose cost changed. Each of Take, Refund and Adjust with one
// costly demand among several must reach that demand's slot alone: a
// script over every demand's key would be refused with CROSSSLOT.
func TestClusterOneCostlyDemandAmongSeveral(t *testing.T) {
	cc := clusterClient(t, 0)
	ctx := context.Background()
	s := redisstore.New(cc, redisstore.WithPrefix("pacer-test"), redisstore.WithCallerClock())
	scope := storetest.Scope(t)
	// Keys in distinct slots: each bucket is its own hash tag on a Cluster.
	free := store.Demand{Scope: scope + "/requests", Key: "a", Burst: 10}
	costly := store.Demand{Scope: scope + "/tokens", Key: "b", Burst: 100, Cost: 30}
	other := store.Demand{Scope: scope + "/budget", Key: "c", Burst: 10}
	if s.Key(free.Scope, free.Key) == s.Key(costly.Scope, costly.Key) {
		t.Fatal("the test needs keys in different slots")
	}
	demands := []store.Demand{free, costly, other}
	level := func(want float64) {
		t.Helper()
		// A take of the whole bucket succeeds only if it holds want; then
		// give it back.
		probe := costly
		probe.Cost = want
		dec, err := s.Take(ctx, storetest.Start, []store.Demand{probe})
		if err != nil || !dec.OK {
			t.Fatalf("the costly bucket does not hold %v: %+v, %v", want, dec, err)
		}
		if err := s.Refund(ctx, storetest.Start, []store.Demand{probe}); err != nil {
			t.Fatal(err)
		}
		probe.Cost = want + 1
		if dec, err := s.Take(ctx, storetest.Start, []store.Demand{probe}); err != nil || dec.OK {
			t.Fatalf("the costly bucket holds more than %v: %+v, %v", want, dec, err)
		}
	}

	if dec, err := s.Take(ctx, storetest.Start, demands); err != nil || !dec.OK {
		t.Fatalf("Take with one costly demand among three: %+v, %v", dec, err)
	}
	level(70)
	refund := []store.Demand{free, costly, other}
	refund[1].Cost = 10
	if err := s.Refund(ctx, storetest.Start, refund); err != nil {
		t.Fatalf("Refund with one costly demand among three: %v", err)
	}
	level(80)
	adjust := []store.Demand{free, costly, other}
	adjust[1].Cost = 25 // the call cost 25 more than it reserved
	if err := s.Adjust(ctx, storetest.Start, adjust); err != nil {
		t.Fatalf("Adjust with one costly demand among three: %v", err)
	}
	level(55)
	// Refused, the decision names the costly demand, not the first.
	refused := []store.Demand{free, costly, other}
	refused[1].Cost = 60
	if dec, err := s.Take(ctx, storetest.Start, refused); err != nil || dec.OK || dec.Blocked != 1 {
		t.Fatalf("Take of 60 from a bucket of 55: %+v, %v; want refused, blocked by demand 1", dec, err)
	}
}
