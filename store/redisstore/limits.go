package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pacer-go/pacer/store"
	"github.com/redis/go-redis/v9"
)

var _ store.LimitStore = (*Store)(nil)

// publishScript bumps the version and records the limit with it, in one
// step, so that no instance reads a limit under an old version.
var publishScript = redis.NewScript(`
local v = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ' ' .. v)
return v`)

// publishPaceScript is publishScript for a pace record, which it keeps
// after its version: a record may hold spaces.
var publishPaceScript = redis.NewScript(`
local v = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], ARGV[1], v .. ' ' .. ARGV[2])
return v`)

// publishedScript reads the limits and the pace records at once.
var publishedScript = redis.NewScript(`
return {redis.call('HGETALL', KEYS[1]), redis.call('HGETALL', KEYS[2])}`)

// limitKeys returns the hash of published limits and its version counter,
// in one slot (their shared hash tag) and apart from every bucket's name.
func (s *Store) limitKeys() []string {
	return []string{"{" + s.prefix + "}:limits", "{" + s.prefix + "}:limits:version"}
}

// paceKeys returns the hash of pace records and the version counter they
// share with the limits, in the limits' slot.
func (s *Store) paceKeys() []string {
	return []string{"{" + s.prefix + "}:paces", "{" + s.prefix + "}:limits:version"}
}

// PublishLimit implements store.LimitStore: the limit is kept, without an
// expiry, in a hash beside the buckets, "{<prefix>}:limits", one field a
// scope; its version comes from "{<prefix>}:limits:version".
func (s *Store) PublishLimit(ctx context.Context, scope string, l store.Limit) (int64, error) {
	value := fmt.Sprintf("%d %d %d", l.Count, int64(l.Per), l.Burst)
	v, err := publishScript.Run(ctx, s.client, s.limitKeys(), scope, value).Int64()
	if err != nil {
		return 0, fmt.Errorf("redisstore: publishing a limit: %w", err)
	}
	return v, nil
}

// PublishPace implements store.LimitStore: the record is kept, without an
// expiry, in a hash beside the limits, "{<prefix>}:paces", one field a
// scope, under a version from the limits' counter. A record that is not
// printable ASCII, or too long, is refused (store.CheckPaceRecord).
func (s *Store) PublishPace(ctx context.Context, scope string, pace string) (int64, error) {
	if err := store.CheckPaceRecord(pace); err != nil {
		return 0, fmt.Errorf("redisstore: publishing a pace record: %w", err)
	}
	v, err := publishPaceScript.Run(ctx, s.client, s.paceKeys(), scope, pace).Int64()
	if err != nil {
		return 0, fmt.Errorf("redisstore: publishing a pace record: %w", err)
	}
	return v, nil
}

// PublishedLimits implements store.LimitStore: one script reads both
// hashes, which share a slot. A field it cannot read (not written by
// PublishLimit or PublishPace) is skipped.
func (s *Store) PublishedLimits(ctx context.Context) (map[string]store.PublishedLimit, error) {
	keys := []string{s.limitKeys()[0], s.paceKeys()[0]}
	reply, err := publishedScript.Run(ctx, s.client, keys).Slice()
	if err == nil && len(reply) != 2 {
		err = fmt.Errorf("the script replied %d lists, want 2", len(reply))
	}
	if err != nil {
		return nil, fmt.Errorf("redisstore: reading the published limits: %w", err)
	}
	limits, paces := fieldsOf(reply[0]), fieldsOf(reply[1])
	out := make(map[string]store.PublishedLimit, len(limits)+len(paces))
	for scope, value := range limits {
		if p, ok := parsePublished(value); ok {
			out[scope] = p
		}
	}
	for scope, value := range paces {
		v, pace, ok := strings.Cut(value, " ")
		version, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil || pace == "" {
			continue
		}
		p := out[scope]
		p.Pace, p.PaceVersion = pace, version
		out[scope] = p
	}
	return out, nil
}

// fieldsOf reads an HGETALL's reply in a script's: field, value, field…
func fieldsOf(reply any) map[string]string {
	list, _ := reply.([]any)
	out := make(map[string]string, len(list)/2)
	for i := 0; i+1 < len(list); i += 2 {
		k, ok1 := list[i].(string)
		v, ok2 := list[i+1].(string)
		if ok1 && ok2 {
			out[k] = v
		}
	}
	return out
}

func parsePublished(value string) (store.PublishedLimit, bool) {
	f := strings.Fields(value)
	if len(f) != 4 {
		return store.PublishedLimit{}, false
	}
	var n [4]int64
	for i, s := range f {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return store.PublishedLimit{}, false
		}
		n[i] = v
	}
	return store.PublishedLimit{Limit: store.Limit{Count: int(n[0]), Per: time.Duration(n[1]), Burst: int(n[2])}, Version: n[3]}, true
}
