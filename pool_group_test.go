package pacer

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pacer-go/pacer/internal/clock"
	"github.com/pacer-go/pacer/pool"
	"github.com/pacer-go/pacer/store"
)

// groupRecorder is a Memory store that records the demands of each Take.
type groupRecorder struct {
	*store.Memory
	mu    sync.Mutex
	takes [][]store.Demand
}

func (r *groupRecorder) Take(ctx context.Context, now time.Time, ds []store.Demand) (store.Decision, error) {
	r.mu.Lock()
	r.takes = append(r.takes, slices.Clone(ds))
	r.mu.Unlock()
	return r.Memory.Take(ctx, now, ds)
}

func (r *groupRecorder) last(t *testing.T) map[string]string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.takes) == 0 {
		t.Fatal("no Take reached the store")
	}
	groups := map[string]string{}
	for _, d := range r.takes[len(r.takes)-1] {
		groups[d.Scope+"/"+d.Key] = d.Group
	}
	r.takes = nil
	return groups
}

// A pool member's own buckets — its key of each pool scope, its own
// scopes — carry its name as their store.Demand.Group, so that a sharded
// store keeps them together; the shared quota, every member's, carries
// none, nor does an own scope that two members list.
func TestPoolGroupsAMembersBuckets(t *testing.T) {
	rec := &groupRecorder{Memory: store.NewMemory()}
	tr := New(&stubAPI{clock: clock.System}, WithoutRetry(), WithStore(rec, store.Policy{}),
		WithScope(Scope{Name: "key", Limit: PerSecond(1000)}),
		WithScope(Scope{Name: "project", Limit: PerSecond(1000)}),
		WithScope(Scope{Name: "own-a", Limit: PerSecond(1000)}),
		WithScope(Scope{Name: "both", Limit: PerSecond(1000)}),
		WithPool(pool.Config{Scopes: []string{"key"}, SharedQuota: []string{"project"}, Members: []pool.Member{
			{Name: "a", Apply: pool.Bearer("sk-a"), Scopes: []string{"own-a", "both"}},
			{Name: "b", Apply: pool.Bearer("sk-b"), Scopes: []string{"both"}},
		}}))
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range 6 {
		if err := get(tr, context.Background(), "http://api.test/"); err != nil {
			t.Fatal(err)
		}
		groups := rec.last(t)
		m := groups["key/a"]
		if m == "" {
			m = groups["key/b"]
		}
		seen[m] = true
		want := map[string]string{"key/" + m: m, "project/": "", "both/": ""}
		if m == "a" {
			want["own-a/"] = "a"
		}
		if !maps.Equal(groups, want) {
			t.Errorf("a call through member %q took demands of groups %v; want %v", m, groups, want)
		}
	}
	if !seen["a"] || !seen["b"] {
		t.Fatalf("the calls went to members %v; want both", seen)
	}
	// The Group is the bucket's, whichever call charges it: a permit
	// charging member a's buckets names them with a's Group, as its
	// attempts do; one charging a key that is no member's, none.
	for range 4 { // every pooled call, once used by a member
		p, err := tr.Acquire(context.Background(), Charge{Scope: "key", Key: "a"}, Charge{Scope: "own-a"}, Charge{Scope: "key", Key: "x"})
		if err != nil {
			t.Fatal(err)
		}
		p.Accept()
		want := map[string]string{"key/a": "a", "own-a/": "a", "key/x": ""}
		if groups := rec.last(t); !maps.Equal(groups, want) {
			t.Errorf("a permit took demands of groups %v; want %v", groups, want)
		}
	}
}
