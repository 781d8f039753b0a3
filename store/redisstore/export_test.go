package redisstore

import "github.com/pacer-go/pacer/store"

// DemandKey returns the Redis key of d's bucket, its Group applied: Key,
// for the tests, of a demand that has one.
func (s *Store) DemandKey(d store.Demand) string { return s.key(&d) }
