// Package redisstore keeps pacer's token buckets in Redis, so that every
// instance of a service paces itself against one shared bucket.
//
//	rdb := redis.NewClient(&redis.Options{Addr: "redis:6379"})
//	t := pacer.New(nil, pacer.WithLimit(pacer.PerSecond(50)),
//		pacer.WithStore(redisstore.New(rdb)))
//
// Every operation is one Lua script (take.lua, embedded), run with EVALSHA
// and sent again with EVAL when the server answers NOSCRIPT (after a restart
// or SCRIPT FLUSH): one round trip, atomic across every bucket a request is
// charged to.
//
// # Time
//
// The script reads Redis's TIME, not the caller's clock, so instances whose
// clocks disagree still agree on when a bucket refills. The now passed to the
// Store methods is ignored unless the store is built WithCallerClock.
//
// # Keys
//
// A bucket is a hash of two fields, t (tokens) and s (its stamp, in
// microseconds), at
//
//	{prefix}:<len(scope)>:<scope>:<key>
//
// The scope's length keeps "a:b"+"c" and "a"+"b:c" apart. Redis keys are
// binary-safe, so a scope or key may hold any bytes (NUL, invalid UTF-8);
// when the two together are longer than 256 bytes the key is
//
//	{prefix}:sha256:<hex of SHA-256 of "<len(scope)>:<scope>:<key>">
//
// instead, so that a request whose key is a long header value costs Redis
// no more than any other. The two forms never meet: one has a digit where
// the other has "s". The prefix, "pacer"
// unless set WithPrefix, is the key's hash tag: in Redis Cluster every bucket
// hashes to the same slot, so a request charged to several scopes is one
// script on one node and never fails with CROSSSLOT. The price is that all
// of pacer's buckets of one prefix live on one shard; a fleet that needs more
// than one shard can give services or tenants prefixes of their own.
//
// # Timeouts
//
// go-redis ignores a context's deadline unless the client is built with
// ContextTimeoutEnabled: a hung server then holds a call for the client's
// own timeouts (3 s reads by default). The Transport does not wait for it
// (see pacer.WithStoreTimeout), but set ContextTimeoutEnabled anyway so that
// the client gives up too and frees its connection: the Transport then also
// calls the store on the request's goroutine (see pacer.ContextStore)
// rather than in one of its own.
//
// # Expiry
//
// Every write sets a TTL: the time until the bucket would be full again (at
// least a second), since a full bucket is the same as no bucket. A bucket
// that is full after a write is deleted at once. Idle buckets disappear.
package redisstore

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pacer-go/pacer"
)

//go:embed take.lua
var takeLua string

var script = redis.NewScript(takeLua)

// Store is a pacer.Store in Redis. It is safe for concurrent use.
type Store struct {
	client      redis.UniversalClient
	prefix      string
	callerClock bool
}

var _ pacer.ContextStore = (*Store)(nil)

// HonoursContext implements pacer.ContextStore. A client built with
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

// WithPrefix sets the prefix of every key, which is also its Cluster hash
// tag (see the package doc). The default is "pacer". It must not contain
// '{' or '}', which would change the hash tag.
func WithPrefix(prefix string) Option {
	return func(s *Store) { s.prefix = prefix }
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
	return s
}

// maxPlainKey is the longest scope and key kept as they are in a bucket's
// Redis key; longer ones are hashed.
const maxPlainKey = 256

// Key returns the Redis key of the bucket of scope and key.
func (s *Store) Key(scope, key string) string {
	name := strconv.Itoa(len(scope)) + ":" + scope + ":" + key
	if len(scope)+len(key) > maxPlainKey {
		sum := sha256.Sum256([]byte(name))
		name = "sha256:" + hex.EncodeToString(sum[:])
	}
	return "{" + s.prefix + "}:" + name
}

// Take implements pacer.Store.
func (s *Store) Take(ctx context.Context, now time.Time, demands []pacer.Demand) (pacer.Decision, error) {
	if !anyCost(demands) {
		return pacer.Decision{OK: true}, nil
	}
	reply, err := s.run(ctx, "take", now, demands, nil)
	if err != nil {
		return pacer.Decision{}, err
	}
	if len(reply) == 1 && reply[0] == "1" {
		return pacer.Decision{OK: true}, nil
	}
	if len(reply) != 3 {
		return pacer.Decision{}, fmt.Errorf("redisstore: unexpected reply %q", reply)
	}
	blocked, err1 := strconv.Atoi(reply[1])
	wait, err2 := strconv.ParseInt(reply[2], 10, 64)
	if err := errors.Join(err1, err2); err != nil || blocked < 0 || blocked >= len(demands) {
		return pacer.Decision{}, fmt.Errorf("redisstore: unexpected reply %q", reply)
	}
	d := pacer.Decision{Blocked: blocked, Wait: time.Duration(wait)}
	if wait < 0 {
		d.Wait = pacer.Never
	}
	return d, nil
}

// Refund implements pacer.Store.
func (s *Store) Refund(ctx context.Context, now time.Time, demands []pacer.Demand) error {
	if !anyCost(demands) {
		return nil
	}
	_, err := s.run(ctx, "refund", now, demands, nil)
	return err
}

// Clamp implements pacer.Store.
func (s *Store) Clamp(ctx context.Context, now time.Time, d pacer.Demand, tokens float64) error {
	_, err := s.run(ctx, "clamp", now, []pacer.Demand{d}, &tokens)
	return err
}

func anyCost(demands []pacer.Demand) bool {
	for i := range demands {
		if demands[i].Cost > 0 {
			return true
		}
	}
	return false
}

// run runs the script. For a clamp, level replaces each demand's cost.
//
// An error of the script itself (a value it could not compute with) is the
// caller's, not an outage: it matches pacer.ErrInvalidDemand. Every other
// error reply (LOADING, BUSY, READONLY, OOM, CLUSTERDOWN...) and every
// network error says the store cannot serve anyone.
func (s *Store) run(ctx context.Context, mode string, now time.Time, demands []pacer.Demand, level *float64) ([]string, error) {
	for i := range demands {
		if err := demands[i].Validate(); err != nil {
			return nil, fmt.Errorf("redisstore: %s: %w", mode, err)
		}
	}
	if level != nil && math.IsNaN(*level) {
		return nil, fmt.Errorf("redisstore: %s: %w: the level is NaN", mode, pacer.ErrInvalidDemand)
	}
	keys := make([]string, len(demands))
	args := make([]any, 0, 2+5*len(demands))
	args = append(args, mode, "")
	if s.callerClock {
		args[1] = strconv.FormatInt(now.UnixMicro(), 10)
	}
	for i := range demands {
		d := &demands[i]
		keys[i] = s.Key(d.Scope, d.Key)
		cost := d.Cost
		if level != nil {
			cost = *level
		}
		args = append(args, formatFloat(d.Rate), formatFloat(d.Burst),
			strconv.FormatInt(d.Window.Microseconds(), 10), formatFloat(cost), formatFloat(d.Floor))
	}
	reply, err := script.Run(ctx, s.client, keys, args...).StringSlice()
	if err != nil {
		var rerr redis.Error
		if errors.As(err, &rerr) && strings.Contains(rerr.Error(), "user_script") {
			return nil, fmt.Errorf("redisstore: %s: %w: %w", mode, pacer.ErrInvalidDemand, err)
		}
		return nil, fmt.Errorf("redisstore: %s: %w", mode, err)
	}
	return reply, nil
}

// formatFloat formats f so that Lua's tonumber reads back the same double.
func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
