package redisstore_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pacer-go/pacer/store"
	"github.com/pacer-go/pacer/store/redisstore"
	"github.com/pacer-go/pacer/storetest"
)

// scriptCounter counts the scripts a client's commands ran: each EVALSHA
// or EVAL, but not an EVALSHA a node refused with NOSCRIPT, which the
// client sends again as the EVAL that runs.
type scriptCounter struct {
	n atomic.Int64
}

func (c *scriptCounter) count(cmd redis.Cmder) {
	if name := cmd.Name(); (name == "evalsha" || name == "eval") && !redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		c.n.Add(1)
	}
}

// A pool member's buckets — a bucket of each pool scope keyed by its name,
// and its own scopes' — carry its name as their Group (as the Transport's
// pool gives them), so on a Cluster they are in one slot and a Take over
// them is one script, as it is off a Cluster. With a shared bucket too, in
// a slot of its own, the take is the ordered take with undo over two
// slots, two scripts, where ungrouped it is one per bucket. Refund, Adjust,
// Clamp and Level reach the same keys, one script a slot.
func TestClusterGroupIsOneScript(t *testing.T) {
	cc := clusterClient(t, 0)
	scripts := &scriptCounter{}
	cc.AddHook(cmdHook(scripts.count))
	ctx := context.Background()
	s := redisstore.New(cc, redisstore.WithPrefix("pacer-test"), redisstore.WithCallerClock())
	scope := storetest.Scope(t)
	keyed := store.Demand{Scope: scope + "/requests", Key: "key-1", Group: "key-1", Rate: 1, Burst: 10, Cost: 1}
	own := store.Demand{Scope: scope + "/key-1-tokens", Group: "key-1", Rate: 1, Burst: 100, Cost: 30}
	shared := store.Demand{Scope: scope + "/project", Rate: 1, Burst: 50, Cost: 1}
	scriptsOf := func(what string, want int64, f func() error) {
		t.Helper()
		scripts.n.Store(0)
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if n := scripts.n.Load(); n != want {
			t.Errorf("%s sent %d scripts, want %d", what, n, want)
		}
	}
	take := func(ds ...store.Demand) func() error {
		return func() error {
			dec, err := s.Take(ctx, storetest.Start, ds)
			if err == nil && !dec.OK {
				t.Errorf("Take of %d demands = %+v, want granted", len(ds), dec)
			}
			return err
		}
	}
	member := []store.Demand{keyed, own}
	scriptsOf("a Take over a member's two buckets", 1, take(member...))
	scriptsOf("a Refund of them", 1, func() error { return s.Refund(ctx, storetest.Start, member) })
	scriptsOf("an Adjust of them", 1, func() error { return s.Adjust(ctx, storetest.Start, member) })
	scriptsOf("a Take over them and a shared bucket", 2, take(keyed, own, shared))
	scriptsOf("a Refund of them and a shared bucket", 2, func() error {
		return s.Refund(ctx, storetest.Start, []store.Demand{keyed, own, shared})
	})
	// Refused on the member's buckets, the shared one taken first is given
	// back: three scripts, a take, a take and an undo.
	big := own
	big.Cost = 1000
	scriptsOf("a refused Take over them and a shared bucket", 3, func() error {
		dec, err := s.Take(ctx, storetest.Start, []store.Demand{keyed, big, shared})
		if err == nil && (dec.OK || dec.Blocked != 1 || dec.Wait != store.Never) {
			t.Errorf("a take of 1000 from a bucket of 100 = %+v, want refused for ever, blocked by demand 1", dec)
		}
		return err
	})
	ungrouped := []store.Demand{keyed, own, shared}
	ungrouped[0].Group, ungrouped[1].Group = "", ""
	scriptsOf("the same Take without Groups", 3, take(ungrouped...))

	// The member's buckets are under the keys of their Group, which share
	// one slot, and Level reads what those keys hold.
	keys := []string{s.DemandKey(keyed), s.DemandKey(own)}
	var slots []int64
	for _, k := range keys {
		slot, err := cc.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		slots = append(slots, slot)
	}
	if slots[0] != slots[1] {
		t.Errorf("a member's buckets %q and %q are in slots %d and %d, want one", keys[0], keys[1], slots[0], slots[1])
	}
	for _, d := range member {
		lr, err := s.Level(ctx, storetest.Start, d)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := cc.HGet(ctx, s.DemandKey(d), "t").Float64()
		if err != nil {
			t.Fatalf("the bucket of %s/%s under its Group's key: %v", d.Scope, d.Key, err)
		}
		if lr != tok {
			t.Errorf("Level of %s = %v, and its key holds %v; want the same", d.Scope, lr, tok)
		}
	}
	scriptsOf("a Clamp of a member's bucket", 1, func() error { return s.Clamp(ctx, storetest.Start, own, 5) })
	if tok, err := cc.HGet(ctx, s.DemandKey(own), "t").Float64(); err != nil || tok != 5 {
		t.Errorf("after a Clamp to 5, the member's bucket holds %v (%v); want 5", tok, err)
	}
}

// Each Group is its own hash tag, so the members of a large pool spread
// over the shards, and each one's buckets stay in one slot: 1500 groups of
// two buckets, each primary within ±15 % of a third of them.
func TestClusterGroupsSpread(t *testing.T) {
	cc := clusterClient(t, 32)
	ctx := context.Background()
	prefix := "groups-" + strings.ReplaceAll(storetest.Scope(t), "/", "-")
	s := redisstore.New(cc, redisstore.WithPrefix(prefix))
	const groups = 1500
	var next atomic.Int64
	storetest.Count(t, 32, groups/32+1, func() (bool, error) {
		i := next.Add(1)
		if i > groups {
			return false, nil
		}
		g := "member-" + strconv.FormatInt(i, 10)
		// Slow to refill, so that no bucket expires before it is counted.
		ds := []store.Demand{
			{Scope: "requests", Key: g, Group: g, Rate: 0.01, Burst: 10, Cost: 1},
			{Scope: "tokens-" + g, Group: g, Rate: 0.01, Burst: 10, Cost: 1},
		}
		dec, err := s.Take(ctx, time.Now(), ds)
		return dec.OK, err
	})
	perShard := keysPerPrimary(t, ctx, cc, "{"+prefix+":g:*")
	t.Logf("%d groups of two buckets, keys per primary: %v", groups, perShard)
	if len(perShard) != 3 {
		t.Fatalf("the cluster has %d primaries, want 3", len(perShard))
	}
	total := 0
	for addr, n := range perShard {
		total += n
		if n%2 != 0 {
			t.Errorf("primary %s holds %d keys, an odd number: a group's two buckets were split", addr, n)
		}
		if even := 2 * groups / 3.0; float64(n) < 0.85*even || float64(n) > 1.15*even {
			t.Errorf("primary %s holds %d of %d keys; want within 15%% of %.0f", addr, n, 2*groups, even)
		}
	}
	if total != 2*groups {
		t.Errorf("the primaries hold %d keys, want %d", total, 2*groups)
	}
}

// A Group's tag is {<prefix>:g:<len>:<group>}, apart from every bucket's
// own tag; a Group holding a '}', which would end the tag early, is tagged
// by its hash, the same for each of its buckets. Off a Cluster, and
// WithSingleSlot, the Group changes no key.
func TestClusterGroupKeys(t *testing.T) {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer cc.Close()
	s := redisstore.New(cc, redisstore.WithPrefix("p"))
	tag := func(k string) string {
		end := strings.IndexByte(k, '}')
		if !strings.HasPrefix(k, "{") || end <= 1 {
			t.Fatalf("key %q does not start with a hash tag", k)
		}
		return k[1:end]
	}
	key := func(group, scope, key string) string {
		return s.DemandKey(store.Demand{Scope: scope, Key: key, Group: group})
	}
	if got, want := key("m1", "users", "42"), "{p:g:2:m1}:5:users:42"; got != want {
		t.Errorf("the key of a grouped bucket is %q, want %q", got, want)
	}
	if got := key("", "users", "42"); got != s.Key("users", "42") {
		t.Errorf("without a Group, the key is %q, want Key's, %q", got, s.Key("users", "42"))
	}
	if tag(key("m1", "a", "1")) != tag(key("m1", "b", "")) {
		t.Error("two buckets of one Group have different tags")
	}
	if tag(key("m1", "a", "1")) == tag(key("m2", "a", "1")) {
		t.Error("two Groups share a tag")
	}
	a, b := key("x}1", "a", "1"), key("x}1", "b", "")
	if tag(a) != tag(b) || strings.HasPrefix(tag(a), "p:") {
		t.Errorf("the buckets of Group \"x}1\" got keys %q and %q; want one tag, the Group's hash", a, b)
	}
	if tag(a) == tag(key("x}2", "a", "1")) {
		t.Error("Groups \"x}1\" and \"x}2\" share a tag")
	}
	long := strings.Repeat("g", 300)
	if k := key(long, "a", "1"); len(k) > 200 || tag(k) != tag(key(long, "b", "2")) {
		t.Errorf("a Group of 300 bytes gave key %q; want its hash in one short tag", k)
	}
	seen := map[string]bool{}
	for _, k := range []string{
		key("m", "a", "1"), key("", "a", "1"), key("m", "a:1", ""), key("m:1", "a", ""),
		key("x}1", "a", "1"), key("x}1", "a", "2"), key("m", "a}", "1"), key("", "a}", "1"),
	} {
		if seen[k] {
			t.Errorf("two buckets share the key %q", k)
		}
		seen[k] = true
	}

	single := redisstore.New(nil, redisstore.WithPrefix("svc"))
	pinned := redisstore.New(cc, redisstore.WithPrefix("svc"), redisstore.WithSingleSlot())
	for _, st := range []*redisstore.Store{single, pinned} {
		if k := st.DemandKey(store.Demand{Scope: "a", Key: "b", Group: "m"}); k != "{svc}:1:a:b" {
			t.Errorf("off a Cluster or WithSingleSlot, a grouped bucket's key is %q; want Key's, {svc}:1:a:b", k)
		}
	}
}

// Off a Cluster the Group is ignored: a bucket is the one its Scope and
// Key name, whatever the Group.
func TestGroupNamesNoBucket(t *testing.T) {
	ctx := context.Background()
	s := redisstore.New(client(t), redisstore.WithPrefix("pacer-test"), redisstore.WithCallerClock())
	d := store.Demand{Scope: storetest.Scope(t), Key: "k", Group: "a", Rate: 1, Burst: 2, Cost: 1}
	for _, g := range []string{"a", "", "b"} {
		d.Group = g
		dec, err := s.Take(ctx, storetest.Start, []store.Demand{d})
		if err != nil {
			t.Fatal(err)
		}
		if want := g != "b"; dec.OK != want {
			t.Errorf("the take with Group %q granted %v, want %v: a bucket of 2 under any Group", g, dec.OK, want)
		}
	}
}
