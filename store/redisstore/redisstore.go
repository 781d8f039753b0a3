// Package redisstore keeps pacer's token buckets in Redis, so that every
// instance of a service paces itself against one shared bucket.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "redis:6379"})
//	t := pacer.New(nil, pacer.WithLimit(pacer.PerSecond(50)),
//		pacer.WithStore(redisstore.New(rdb), store.Policy{}))
//
// Every operation is one Lua script (take.lua, embedded), run with EVALSHA
// and sent again with EVAL when the server answers NOSCRIPT (after a restart
// or SCRIPT FLUSH): one round trip, atomic across every bucket a request is
// charged to — on a Cluster, across the buckets of one call that share a
// slot (see Atomicity). The script replies with integers, which the client
// reads into an []int64 without making a string of them. A take of one
// bucket, most calls, runs a fast path at the top of the script: the same
// take written for one bucket, which on Redis's clock sets the key's TTL only
// when the key would otherwise expire before the bucket is full again (see
// Expiry): TIME, HMGET, HSET and PTTL, where redis_rate's take is TIME, GET
// and SET, and no second write for a Cluster's replicas to apply. It writes
// the same fields, with the same meaning, as the general path and earlier
// versions.
//
// # Time
//
// The script reads Redis's TIME, not the caller's clock, so instances whose
// clocks disagree still agree on when a bucket refills. The now passed to the
// Store methods is ignored unless the store is built WithCallerClock.
//
// # Keys
//
// A bucket is a hash of three fields, t (tokens), s (its stamp, in
// microseconds) and n (the units taken from it, ever, by a take or a
// positive adjustment: the running total a granted take reports,
// store.Decision.Taken, in the reply as millionths of a unit). A refund, an
// undo, a clamp and a negative adjustment leave n alone; a key that
// expires or is deleted full takes its n with it. Its name is
//
//	<prefix>:<len(scope)>:<scope>:<key>
//
// where the scope's length keeps "a:b"+"c" and "a"+"b:c" apart, and the
// prefix is "pacer" unless set WithPrefix. Where the name goes in the key
// depends on the client:
//
//   - On a Cluster (a *redis.ClusterClient), each bucket is its own hash
//     tag: {<prefix>:<len>:<scope>:<key>}. A scope's buckets spread over
//     every shard by their own names, so a million per-user buckets are a
//     third each on three primaries. A name holding a '}', which would end
//     the tag early, is tagged by its 64-bit FNV-1a hash instead:
//     {<hash in hex>}<name>.
//   - On a Cluster, the bucket of a demand with a Group
//     (store.Demand.Group: a pool member's own buckets, which pacer gives
//     the member's name) is under its Group's tag instead:
//     {<prefix>:g:<len>:<group>}:<len>:<scope>:<key>. Every bucket of a
//     Group is in one slot, so a take over them is one script, and the
//     Groups spread over the shards as buckets do. A Group holding a '}' is tagged by its hash, as a name is:
//     {<hash in hex>}<prefix>:g:<len>:<group>:<name>; one longer than 256
//     bytes is "sha256:<hex>" in the tag. The Group is part of the key, so
//     a bucket must be named with the same Group every time (pacer always
//     does): the same scope and key under another Group, or none, is
//     another bucket. Key gives the key of a bucket without a Group.
//   - Anywhere else (one node, Sentinel failover, a Ring), and on a Cluster
//     WithSingleSlot, the prefix is the tag: {<prefix>}:<len>:<scope>:<key>.
//     Every bucket of a prefix is in one slot, on one shard (a Ring shards
//     by the tag too, and could not run a script over two of its shards).
//     A Group changes no key.
//
// Redis keys are binary-safe, so a scope or key may hold any bytes (NUL,
// invalid UTF-8). When the two together are longer than 256 bytes, the
// name is "sha256:<hex of the SHA-256 of <len>:<scope>:<key>>" instead, so
// that a request whose key is a long header value costs Redis no more than
// any other. The two forms never meet: one has a digit where the other has
// "s".
//
// # Atomicity
//
// One script is atomic over the buckets it is given. Off a Cluster, and on
// a Cluster for a call whose costly buckets are one (most: a Transport with
// one scope, a Clamp, a lease) or share a Group (a pool member's own
// buckets, without a shared quota), every call is one script in one round
// trip.
//
// On a Cluster a Take over buckets in several slots cannot be one script.
// It is an ordered take with undo over its slots: the store takes from one
// slot at a time, the buckets of a Group in one script and any other
// bucket alone (each take atomic, granted only if its buckets can give),
// from the slot of the last demand to the first's; at the first that
// refuses, it gives back what it took from the others and asks the ones it
// did not reach how long they would wait (one pipeline, the nodes asked at
// once), so the decision, and which demand it blames, are the ones a
// single script would give. A granted Take over k slots costs k round
// trips, one after another (a pool member with a shared quota, two); a
// refused one, one more. Refunds and settlements go to each slot on its
// own, in one pipeline.
//
// Overshoot: none. A slot's buckets give only what they hold, and a request is sent
// only if every bucket gave, so no bucket ever grants more than one script
// would have. Giving back is exact for a refilling bucket; for a window
// bucket (a spend budget) the undo carries the time of the take and gives
// nothing back if the window has started again since, so the tokens of one
// window never reach the next. Two things can under-grant, never over-grant:
//
//   - A hold. Between a take and its undo (a round trip or two), the tokens
//     taken are missing from the bucket, and another caller that needed
//     them is refused, or told to wait, when a single script would have
//     granted it. Only a bucket that is nearly empty is affected: by at most
//     the costs of the takes under way on it that will be undone.
//   - A lost undo. If the undo fails (the node died, the call's context
//     ended), its tokens stay taken until the bucket refills.
//
// The order is what keeps holds off the bucket that matters. The Transport
// lists a request's broadest scope first (the account, DefaultScope) and
// its narrower ones after (an endpoint, a user), so the store takes the
// narrow buckets first and the shared one last: a request that its own
// user's bucket refuses never touches the account, and a take of the
// account, the last step, is never undone. A caller of Take that lists
// demands itself should do the same. Measured on a three-primary cluster
// (TestClusterAccountAndUsers): an account of 800 and one bucket per user,
// 16 users who may send and 16 whose own buckets are empty, 60 takes each at
// once: listed account first, the users who may send got all 800 and the
// account was never held; listed account last, the refused users took and
// gave back the account's tokens about 500 times (the users who may send
// still got all 800, refused only near the end, in no count that a single
// script would not also have refused). Nothing was ever over-granted.
//
// A failover can lose what the old primary had not yet sent its replica:
// Redis replicates asynchronously, so the last writes before a crash (a
// millisecond or less, on a healthy link) may be missing on the promoted
// replica, which then grants those tokens again. This is Redis's bound,
// not this package's, on any layout.
//
// # Upgrading
//
// Off a Cluster, nothing changed: keys are what earlier versions wrote. On
// a Cluster, earlier versions put every bucket under {<prefix>}; this one
// spreads them, so the two find different buckets. A fleet that upgrades
// instance by instance has, until the last old instance stops, two sets of
// buckets, each enforcing the full limit: the fleet may send up to twice
// the limit meanwhile (each set's instances at most the limit), and the old
// keys expire on their own. To avoid that, upgrade WithSingleSlot first
// (the old keys, unchanged), then drop the option in a later rollout at a
// quiet time, or give the new version a new prefix and a lower limit
// until the rollout ends. The script changed too; old and new instances
// each run their own, side by side in Redis's script cache. The bucket's
// fields (t and s) and their meaning did not change: an old instance reads
// what a new one's fast path wrote, and the fast path reads a key's TTL
// (PTTL) rather than trusting what an older version set, so instances of
// both versions on the same keys decide as one version would.
//
// A pool member's own buckets are, on a Cluster, under their Group's tag
// (see Keys), where a version before Groups gave each bucket a tag of its
// own: each such bucket moves to a new key, and a bucket in a new key is a
// new bucket, which starts full. A fleet that upgrades instance by
// instance has, until the last old instance stops, two sets of each
// member's buckets, each enforcing the member's limits: a member may be
// sent up to twice its limit meanwhile, and the old keys expire on their
// own. The buckets without a Group (a shared quota, every bucket outside a
// pool) keep their keys, and off a Cluster, and WithSingleSlot, nothing
// moves. Roll out at a quiet time, or with lower member limits until the
// rollout ends, where that matters.
//
// A version before the running total neither writes n nor clears it (HSET
// leaves the fields it is not given), and a key it wrote has none, which
// this version reads as 0. While both run, the total counts the new
// instances' takes only, so they read the old ones' as a neighbour's and
// leave them room: the fleet paces as it did before the total, or
// slower, until the last old instance stops (TestMixedVersions).
//
// # Timeouts
//
// go-redis ignores a context's deadline unless the client is built with
// ContextTimeoutEnabled: a hung server then holds a call for the client's
// own timeouts (3 s reads by default). The Transport does not wait for it
// (see store.Policy.Timeout), but set ContextTimeoutEnabled anyway so that
// the client gives up too and frees its connection: the Transport then also
// calls the store on the request's goroutine (see store.ContextStore)
// rather than in one of its own.
//
// # Expiry
//
// A bucket's key expires once the bucket would be full again, never before,
// since a full bucket is the same as no bucket. A bucket that is full after
// a write is deleted at once. Idle buckets disappear. The general path sets
// the TTL on every write: the time until full, at least a second. A take of
// one bucket on Redis's clock sets it only when the key's TTL (PTTL, read in
// the same script) is shorter than the time until full, so a hot bucket's
// key, whose TTL is the one-second minimum, gets one PEXPIRE a second rather
// than one a decision, and may outlive the bucket's refill by up to that
// second. With WithCallerClock, whose times are not Redis's, every write
// sets the TTL.
package redisstore

import (
	"cmp"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pacer-go/pacer/store"
)

//go:embed take.lua
var takeLua string

var script = redis.NewScript(takeLua)

// The command's fixed arguments, boxed once: putting a string in an
// interface allocates, and allocations were most of what a decision cost
// the client beyond its system calls (see BENCHMARKS.md).
var (
	argEvalSha any = "evalsha"
	argEval    any = "eval"
	argSHA     any = script.Hash()
	argScript  any = takeLua
	argNoNow   any = ""
)

// Store is a store.Store in Redis. It is safe for concurrent use.
type Store struct {
	client      redis.UniversalClient
	prefix      string
	callerClock bool
	singleSlot  bool // WithSingleSlot
	spread      bool // each bucket in a slot of its own (see Keys)
}

var _ store.ContextStore = (*Store)(nil)

// HonoursContext implements store.ContextStore. A client built with
// ContextTimeoutEnabled gives up when a call's context ends, so the
// Transport calls the store on the request's own goroutine; any other is
// called in a goroutine that the Transport abandons at the store timeout.
func (s *Store) HonoursContext() bool {
	switch c := s.client.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// An Option configures a Store.
type Option func(*Store)

// WithPrefix sets the prefix of every key (see the package doc's Keys);
// off a Cluster, and WithSingleSlot, it is also the keys' hash tag. The
// default is "pacer". It must not contain '{' or '}', which would change
// the hash tag.
func WithPrefix(prefix string) Option {
	return func(s *Store) { s.prefix = prefix }
}

// WithSingleSlot keeps every bucket of the store in one Cluster slot, as
// on a single node: every Take, over any number of buckets, is then one
// script on one node, at the price of one shard doing all of the store's
// work. It is for a Cluster fleet that wants that, and for one upgrading
// from a version of this package that put every bucket in one slot (see
// the package doc's Upgrading). It changes nothing on other clients.
func WithSingleSlot() Option {
	return func(s *Store) { s.singleSlot = true }
}

// WithCallerClock makes the store use the now passed to each call instead of
// Redis's TIME. It is for tests that run in virtual time, and for fleets
// whose clocks are synchronized well enough to trust; instances whose clocks
// disagree would see buckets refill at different times.
func WithCallerClock() Option {
	return func(s *Store) { s.callerClock = true }
}

// New returns a Store that keeps its buckets in client: a single node, a
// Cluster, a Ring or a Sentinel-managed failover client.
func New(client redis.UniversalClient, opts ...Option) *Store {
	s := &Store{client: client, prefix: "pacer"}
	for _, o := range opts {
		o(s)
	}
	_, cluster := client.(*redis.ClusterClient)
	s.spread = cluster && !s.singleSlot
	return s
}

// maxPlainKey is the longest scope and key kept as they are in a bucket's
// name; longer ones are hashed.
const maxPlainKey = 256

// Key returns the Redis key of the bucket of scope and key, named without a
// store.Demand.Group: see the package doc's Keys.
func (s *Store) Key(scope, key string) string {
	if len(scope)+len(key) <= maxPlainKey {
		// The common cases as one concatenation: one allocation.
		if !s.spread {
			return "{" + s.prefix + "}:" + strconv.Itoa(len(scope)) + ":" + scope + ":" + key
		}
		if strings.IndexByte(s.prefix, '}') < 0 && strings.IndexByte(scope, '}') < 0 && strings.IndexByte(key, '}') < 0 {
			return "{" + s.prefix + ":" + strconv.Itoa(len(scope)) + ":" + scope + ":" + key + "}"
		}
	}
	name := bucketName(scope, key)
	if !s.spread {
		return "{" + s.prefix + "}:" + name
	}
	id := s.prefix + ":" + name
	if strings.IndexByte(id, '}') < 0 {
		return "{" + id + "}"
	}
	// A '}' in the name would end the hash tag early, putting every name
	// that starts alike in one slot: the tag is the name's hash instead.
	return hashTag(id) + id
}

// bucketName is a bucket's name, <len>:<scope>:<key>, or, when scope and
// key are longer than maxPlainKey together, its digest.
func bucketName(scope, key string) string {
	name := strconv.Itoa(len(scope)) + ":" + scope + ":" + key
	if len(scope)+len(key) > maxPlainKey {
		return digest(name)
	}
	return name
}

// digest is "sha256:<hex of the SHA-256 of s>".
func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// hashTag is a hash tag for id that holds no '}' whatever id holds: its
// 64-bit FNV-1a hash, in hex.
func hashTag(id string) string {
	h := fnv.New64a()
	h.Write([]byte(id))
	return "{" + strconv.FormatUint(h.Sum64(), 16) + "}"
}

// key returns the Redis key of d's bucket: Key's, but on a Cluster, for a
// demand with a Group, the group's hash tag followed by the bucket's name
// (see the package doc's Keys).
func (s *Store) key(d *store.Demand) string {
	if d.Group == "" || !s.spread {
		return s.Key(d.Scope, d.Key)
	}
	return s.groupKey(d.Group, d.Scope, d.Key)
}

// groupKey is key for a demand of group on a Cluster:
// {<prefix>:g:<len>:<group>}:<len>:<scope>:<key>.
func (s *Store) groupKey(group, scope, key string) string {
	if len(scope)+len(key) <= maxPlainKey && len(group) <= maxPlainKey &&
		strings.IndexByte(s.prefix, '}') < 0 && strings.IndexByte(group, '}') < 0 {
		// The common case as one concatenation: one allocation.
		return "{" + s.prefix + ":g:" + strconv.Itoa(len(group)) + ":" + group + "}:" + strconv.Itoa(len(scope)) + ":" + scope + ":" + key
	}
	name := bucketName(scope, key)
	g := strconv.Itoa(len(group)) + ":" + group
	if len(group) > maxPlainKey {
		g = digest(group)
	}
	tag := s.prefix + ":g:" + g
	if strings.IndexByte(tag, '}') < 0 {
		return "{" + tag + "}:" + name
	}
	// A '}' would end the tag early, as in Key: the tag is the group's
	// hash, the same for every bucket of the group.
	return hashTag(tag) + tag + ":" + name
}

// span returns the shortest run of demands, demands[lo:hi], that holds
// every demand costs says costs something, and whether one script can
// reach it on a Cluster: it is one demand, or every demand in it has the
// same Group, and so the same slot. There is at least one such demand.
func span(demands []store.Demand, costs func(*store.Demand) bool) (lo, hi int, one bool) {
	lo, hi = -1, 0
	for i := range demands {
		if costs(&demands[i]) {
			if lo < 0 {
				lo = i
			}
			hi = i + 1
		}
	}
	g := demands[lo].Group
	if hi-lo == 1 {
		return lo, hi, true
	}
	if g == "" {
		return lo, hi, false
	}
	for i := lo + 1; i < hi; i++ {
		if demands[i].Group != g {
			return lo, hi, false
		}
	}
	return lo, hi, true
}

func takes(d *store.Demand) bool   { return d.Cost > 0 }
func adjusts(d *store.Demand) bool { return d.Cost != 0 }

// Take implements store.Store.
func (s *Store) Take(ctx context.Context, now time.Time, demands []store.Demand) (store.Decision, error) {
	n := costly(demands)
	if n == 0 {
		return store.Decision{OK: true}, nil
	}
	if s.spread && len(demands) > 1 {
		lo, hi, one := span(demands, takes)
		if !one {
			return s.takeEach(ctx, now, demands, s.units(demands, takes))
		}
		// One costly demand among several, or the costly demands of one
		// Group: their slot alone (a script over every demand's key would
		// be refused with CROSSSLOT).
		reply, err := s.run(ctx, "take", now, demands[lo:hi], nil, "")
		if err != nil {
			return store.Decision{}, err
		}
		d, err := decision(reply, hi-lo)
		if !d.OK {
			d.Blocked += lo
		}
		if lo != 0 {
			d.Taken = 0 // the total is the first demand's, which cost nothing
		}
		return d, err
	}
	reply, err := s.run(ctx, "take", now, demands, nil, "")
	if err != nil {
		return store.Decision{}, err
	}
	return decision(reply, len(demands))
}

// decision reads the reply of a take or a peek of n demands (see take.lua):
// {1}, {1, time} or {1, time, total in millionths} granted, {0, blocked,
// wait} denied. A reply without the total (a take whose first demand costs
// nothing, or a script of an earlier version) reports none.
func decision(reply []int64, n int) (store.Decision, error) {
	if len(reply) >= 1 && len(reply) <= 3 && reply[0] == 1 {
		d := store.Decision{OK: true}
		if len(reply) == 3 && reply[2] > 0 {
			d.Taken = float64(reply[2]) / 1e6
		}
		return d, nil
	}
	if len(reply) != 3 || reply[0] != 0 || reply[1] < 0 || reply[1] >= int64(n) || reply[2] < -1 {
		return store.Decision{}, fmt.Errorf("redisstore: unexpected reply %v", reply)
	}
	d := store.Decision{Blocked: int(reply[1]), Wait: time.Duration(reply[2])}
	if reply[2] == -1 {
		d.Wait = store.Never
	}
	return d, nil
}

// tookOf returns the server's time of a granted take, as the undo of that
// take sends it back; "" if the reply carries none.
func tookOf(reply []int64) string {
	if len(reply) < 2 || len(reply) > 3 || reply[0] != 1 {
		return ""
	}
	return strconv.FormatInt(reply[1], 10)
}

// Refund implements store.Store.
func (s *Store) Refund(ctx context.Context, now time.Time, demands []store.Demand) error {
	if costly(demands) == 0 {
		return nil
	}
	if s.spread && len(demands) > 1 {
		lo, hi, one := span(demands, takes)
		if !one {
			// Each slot gets back what it gave, on its own node; a refund
			// need not be atomic.
			return s.eachUnit(ctx, now, "refund", s.units(demands, takes))
		}
		demands = demands[lo:hi] // their slot alone, as in Take
	}
	_, err := s.run(ctx, "refund", now, demands, nil, "")
	return err
}

// eachUnit runs mode on every unit, one script each, in one pipeline, and
// returns the first error.
func (s *Store) eachUnit(ctx context.Context, now time.Time, mode string, units []unit) error {
	jobs := make([]job, len(units))
	for u := range units {
		jobs[u] = job{u: u, mode: mode}
	}
	var err error
	for _, r := range s.each(ctx, now, units, jobs) {
		err = cmp.Or(err, r.err)
	}
	return err
}

// Adjust implements store.Adjuster: one round trip, or on a Cluster one
// script per slot (a Group's buckets share one) in a pipeline; a settlement
// need not be atomic across buckets.
func (s *Store) Adjust(ctx context.Context, now time.Time, demands []store.Demand) error {
	n := 0
	for i := range demands {
		if demands[i].Cost != 0 {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	lo, hi, one := span(demands, adjusts)
	switch {
	case s.spread && !one:
		return s.eachUnit(ctx, now, "adjust", s.units(demands, adjusts))
	case s.spread || n == 1:
		demands = demands[lo:hi] // their slot alone
	}
	_, err := s.run(ctx, "adjust", now, demands, nil, "")
	return err
}

// Clamp implements store.Store.
func (s *Store) Clamp(ctx context.Context, now time.Time, d store.Demand, tokens float64) error {
	_, err := s.run(ctx, "clamp", now, []store.Demand{d}, &tokens, "")
	return err
}

// Level implements store.LevelReader: one script, which reads the bucket
// on Redis's clock (or the caller's, WithCallerClock) and writes nothing.
func (s *Store) Level(ctx context.Context, now time.Time, d store.Demand) (float64, error) {
	if err := d.Validate(); err != nil {
		return 0, fmt.Errorf("redisstore: level: %w", err)
	}
	cmd := redis.NewStringCmd(ctx, s.command(ctx, "level", now, []store.Demand{d}, nil, "").Args()...)
	cmd.SetFirstKeyPos(3)
	reply, err := process(ctx, s, "level", cmd, redis.NewStringCmd).Result()
	if err != nil {
		return 0, err
	}
	l, err := strconv.ParseFloat(reply, 64)
	if err != nil {
		return 0, fmt.Errorf("redisstore: level: unexpected reply %q", reply)
	}
	return l, nil
}

// costly returns how many demands cost something.
func costly(demands []store.Demand) int {
	n := 0
	for i := range demands {
		if demands[i].Cost > 0 {
			n++
		}
	}
	return n
}

// run runs the script. For a clamp, level replaces each demand's cost; for
// an undo, took is the time the take replied.
//
// An error of the script itself (a value it could not compute with) is the
// caller's, not an outage: it matches store.ErrInvalidDemand. Every other
// error reply (LOADING, BUSY, READONLY, OOM, CLUSTERDOWN...) and every
// network error says the store cannot serve anyone.
func (s *Store) run(ctx context.Context, mode string, now time.Time, demands []store.Demand, level *float64, took string) ([]int64, error) {
	for i := range demands {
		if err := demands[i].Validate(); err != nil {
			return nil, fmt.Errorf("redisstore: %s: %w", mode, err)
		}
	}
	if level != nil && math.IsNaN(*level) {
		return nil, fmt.Errorf("redisstore: %s: %w: the level is NaN", mode, store.ErrInvalidDemand)
	}
	cmd := s.command(ctx, mode, now, demands, level, took)
	return process(ctx, s, mode, cmd, redis.NewIntSliceCmd).Result()
}

// A scriptCmd is a command of the script, whatever its reply.
type scriptCmd[R any] interface {
	redis.Cmder
	Result() (R, error)
}

// process sends cmd, and sends it again as an EVAL that carries the script
// (made by newCmd) when the server answers NOSCRIPT. It returns the command
// that answered, its error said as run says it.
func process[R any, C scriptCmd[R]](ctx context.Context, s *Store, mode string, cmd C, newCmd func(context.Context, ...any) C) C {
	_ = s.client.Process(ctx, cmd)
	// (HasErrorPrefix allocates, even for no error.)
	if cmd.Err() != nil && redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd = newCmd(ctx, append([]any{argEval, argScript}, cmd.Args()[2:]...)...)
		cmd.SetFirstKeyPos(3)
		_ = s.client.Process(ctx, cmd)
	}
	if err := cmd.Err(); err != nil {
		var rerr redis.Error
		if errors.As(err, &rerr) && strings.Contains(rerr.Error(), "user_script") {
			cmd.SetErr(fmt.Errorf("redisstore: %s: %w: %w", mode, store.ErrInvalidDemand, err))
		} else {
			s.reloadSlots()
			cmd.SetErr(fmt.Errorf("redisstore: %s: %w", mode, err))
		}
	}
	return cmd
}

// command returns the EVALSHA of the script on demands (see take.lua for
// its KEYS and ARGV). It is built by hand rather than with Script.Run so
// that the reply is read as integers (an IntSliceCmd, not a Cmd of boxed
// values), and so that the arguments cost few allocations: the fixed ones
// are boxed once, and the numbers of every demand are copied into one
// array that the arguments point into (go-redis writes a *float64 as the
// shortest decimal that reads back as the same double).
func (s *Store) command(ctx context.Context, mode string, now time.Time, demands []store.Demand, level *float64, took string) *redis.IntSliceCmd {
	n := len(demands)
	args := make([]any, 0, 5+6*n+1)
	args = append(args, argEvalSha, argSHA, n)
	for i := range demands {
		args = append(args, s.key(&demands[i]))
	}
	args = append(args, boxMode(mode), argNoNow)
	if s.callerClock {
		args[len(args)-1] = now.UnixMicro()
	}
	nums := make([]float64, 4*n)
	for i := range demands {
		d := &demands[i]
		f := nums[4*i : 4*i+4 : 4*i+4]
		f[0], f[1], f[2], f[3] = d.Rate, d.Burst, d.Cost, d.Floor
		if level != nil {
			f[2] = *level
		}
		// A window of zero (most buckets) boxes without allocating.
		args = append(args, &f[0], &f[1], d.Window.Microseconds(), &f[2], &f[3])
	}
	if took != "" {
		args = append(args, took)
	}
	cmd := redis.NewIntSliceCmd(ctx, args...)
	cmd.SetFirstKeyPos(3) // for a Cluster client: the slot is the first key's
	return cmd
}

// boxMode returns mode in an interface; the script's modes are constants,
// which box without allocating.
func boxMode(mode string) any {
	switch mode {
	case "take":
		return "take"
	case "peek":
		return "peek"
	case "level":
		return "level"
	case "refund":
		return "refund"
	case "undo":
		return "undo"
	case "clamp":
		return "clamp"
	case "adjust":
		return "adjust"
	}
	return mode
}

// reloadSlots asks a Cluster client to learn again which node serves which
// slot, after a call failed. go-redis learns it when a node redirects it
// (MOVED), and otherwise only every ClusterStateReloadInterval (a minute by
// default): a primary that died cannot redirect, so without this the store
// would keep calling it for up to a minute after its replica took over. The
// reload runs in the background, one at a time; the Transport asks a failed
// store again only after a pause, so failures do not make a storm of them.
func (s *Store) reloadSlots() {
	if c, ok := s.client.(*redis.ClusterClient); ok {
		c.ReloadState(context.Background())
	}
}
