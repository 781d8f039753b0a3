package redisstore_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/store/redisstore"
	"github.com/pacer-go/pacer/storetest"
)

// An account bucket shared by every user, and one bucket per user, in
// different slots of the cluster: the ordered take never grants more than
// the account holds, and, with the account listed first as the Transport
// lists its broadest scope, a request refused by its own user's bucket
// never holds the account's tokens, so the users who may send get all of
// them. Listed the other way, refused users take the account's tokens and
// give them back (an undo), holding each for a round trip or two, and users
// who may send can be refused meanwhile: that is the fairness cost of a
// cross-slot take, measured and logged.
//
// Virtual time, frozen: nothing refills, so every count is exact.
func TestClusterAccountAndUsers(t *testing.T) {
	cc := clusterClient(t, 64)
	undos := &undoCounter{}
	cc.AddHook(cmdHook(undos.count))
	const (
		account   = 800
		users     = 16 // who may send: their own buckets are large
		refused   = 16 // whose own buckets are empty
		attempts  = 60 // each; 16 × 60 = 960 > 800
		uncertain = users - 1
	)
	for _, accountFirst := range []bool{true, false} {
		name := map[bool]string{true: "AccountListedFirst", false: "AccountListedLast"}[accountFirst]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := redisstore.New(cc, redisstore.WithPrefix("pacer-test"), redisstore.WithCallerClock())
			scope := storetest.Scope(t)
			acct := store.Demand{Scope: scope + "/account", Burst: account, Cost: 1}
			user := func(kind string, i, burst int) store.Demand {
				return store.Demand{Scope: scope + "/user", Key: kind + strconv.Itoa(i), Burst: float64(burst), Cost: 1}
			}
			demands := func(u store.Demand) []store.Demand {
				if accountFirst {
					return []store.Demand{acct, u}
				}
				return []store.Demand{u, acct}
			}
			for i := range refused {
				if dec, err := s.Take(ctx, storetest.Start, []store.Demand{user("refused", i, 1)}); err != nil || !dec.OK {
					t.Fatalf("draining a user's bucket: %+v, %v", dec, err)
				}
			}
			undos.key.Store(s.Key(acct.Scope, acct.Key))
			undos.n.Store(0)
			var granted, refusedGranted, spurious atomic.Int64
			var perUser [users]atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, users+refused)
			for i := range users + refused {
				wg.Go(func() {
					may := i < users
					u := user("refused", i-users, 1)
					if may {
						u = user("ok", i, 1000)
					}
					for range attempts {
						dec, err := s.Take(ctx, storetest.Start, demands(u))
						if err != nil {
							errs <- err
							return
						}
						switch {
						case dec.OK && may:
							granted.Add(1)
							perUser[i].Add(1)
						case dec.OK:
							refusedGranted.Add(1)
						case may && granted.Load() < account-uncertain:
							// At least 16 tokens were left, and at most 15 other
							// takes that will be granted were under way: one was
							// there for this take, held by a take to be undone.
							spurious.Add(1)
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			t.Logf("account of %d: granted %d to users who may send, %d to users refused by their own bucket; "+
				"the account's tokens taken and given back %d times; %d takes refused while the account surely had a token for them",
				account, granted.Load(), refusedGranted.Load(), undos.n.Load(), spurious.Load())
			if refusedGranted.Load() != 0 {
				t.Errorf("users whose own buckets are empty were granted %d", refusedGranted.Load())
			}
			if granted.Load() > account {
				t.Errorf("the account of %d granted %d: an overshoot of %d", account, granted.Load(), granted.Load()-account)
			}
			// Every take a user's bucket gave and the account refused was
			// undone: the bucket holds 1000 less what it granted, exactly.
			for i := range users {
				left, err := cc.HGet(ctx, s.Key(scope+"/user", "ok"+strconv.Itoa(i)), "t").Float64()
				if err != nil {
					t.Fatal(err)
				}
				if want := 1000 - float64(perUser[i].Load()); left != want {
					t.Errorf("user %d was granted %d of 1000, and its bucket holds %v; want %v", i, perUser[i].Load(), left, want)
				}
			}
			if accountFirst && (granted.Load() != account || spurious.Load() != 0 || undos.n.Load() != 0) {
				t.Errorf("with the account listed first, users who may send got %d of %d, %d spurious refusals, and the account was held %d times; want all, none, never",
					granted.Load(), account, spurious.Load(), undos.n.Load())
			}
		})
	}
}

// undoCounter counts the undos of one key a client sends.
type undoCounter struct {
	key atomic.Value // string
	n   atomic.Int64
}

func (u *undoCounter) count(cmd redis.Cmder) {
	// EVALSHA sha numkeys key mode ...
	if a := cmd.Args(); len(a) > 4 && a[3] == u.key.Load() && a[4] == "undo" {
		u.n.Add(1)
	}
}
