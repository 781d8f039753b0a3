package openai

import (
	"fmt"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/pool"
	"github.com/pacer-go/pacer/providers/internal/presetopt"
)

// ProjectKeys returns the option that sends calls through a pool of API
// keys of one OpenAI organization: each call goes through one key
// (pool.Bearer sets it), and a key that answers 401 is taken out, one
// whose quota is spent parked, while the others carry the calls. Give it
// to pacer.New beside Preset (or PresetLimits), whose figures are the
// organization's.
//
// What is per key: nothing, since OpenAI sets no limit per key: "Rate
// limits are defined at the organization level and at the project level,
// not user level" (https://developers.openai.com/api/docs/guides/rate-limits, read
// 2026-12-02 in a mirror, see Figures). So pooling keys gains failover,
// never throughput.
//
// What is shared: everything the preset paces. Its routes charge every
// call, whichever key it goes through, to its model's scopes (the
// organization's per-model limits) and to ScopeProjectTokens (the
// project's), each one bucket, so a pool is paced at the project's and the
// organization's limits, never at a multiple of them, and each key's
// answers (their x-ratelimit-* headers, a 429's wait) teach those same
// buckets. Keys of several projects of one organization share the
// organization's limits as well; their project token limits are then one
// bucket for all, paced at the lowest any project reports, the safe side.
// Keys of different organizations, each with its own limits and tier, need
// a Transport each.
//
// A key is a pool.Member: a Name (shown in events, logs and Stats; never
// the key) and an Apply. A member with Scopes of its own is a
// configuration error: a key has no limit of its own to pace.
func ProjectKeys(keys ...pool.Member) pacer.Option {
	var errs presetopt.Errors
	for _, k := range keys {
		if len(k.Scopes) > 0 {
			errs.Add(fmt.Sprintf("openai.ProjectKeys: key %q", k.Name),
				fmt.Errorf("has Scopes %q; an OpenAI key has no limit of its own: the project's and the organization's, which the preset paces, are every key's", k.Scopes))
		}
	}
	return pacer.Options(append([]pacer.Option{pacer.WithPool(pool.Config{Members: keys})}, errs.Options()...)...)
}
