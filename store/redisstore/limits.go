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

// limitKeys returns the hash of published limits and its version counter,
// in one slot (their shared hash tag) and apart from every bucket's name.
func (s *Store) limitKeys() []string {
	return []string{"{" + s.prefix + "}:limits", "{" + s.prefix + "}:limits:version"}
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

// PublishedLimits implements store.LimitStore. A field it cannot read (not
// written by PublishLimit) is skipped.
func (s *Store) PublishedLimits(ctx context.Context) (map[string]store.PublishedLimit, error) {
	fields, err := s.client.HGetAll(ctx, s.limitKeys()[0]).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: reading the published limits: %w", err)
	}
	out := make(map[string]store.PublishedLimit, len(fields))
	for scope, value := range fields {
		if p, ok := parsePublished(value); ok {
			out[scope] = p
		}
	}
	return out, nil
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
