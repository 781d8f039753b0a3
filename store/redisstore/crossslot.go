package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pacer-go/pacer/store"
)

// A unit is the demands of a call that one script on a Cluster can reach:
// the costly demands of one Group, which share a slot, or one costly
// demand without a Group, in a slot of its own.
type unit struct {
	ds    []store.Demand // in the call's order
	first int            // the call's index of ds[0]
	at    []int          // the call's index of each of ds; nil when ds is the call's demands[first:first+len(ds)]
}

// index returns the call's index of the unit's k-th demand.
func (u *unit) index(k int) int {
	if u.at == nil {
		return u.first + k
	}
	return u.at[k]
}

// units returns the units of the demands costs says cost something, in the
// order of their first demands.
func (s *Store) units(demands []store.Demand, costs func(*store.Demand) bool) []unit {
	var units []unit
next:
	for i := range demands {
		d := &demands[i]
		if !costs(d) {
			continue
		}
		if d.Group != "" {
			for u := range units {
				un := &units[u]
				if un.ds[0].Group != d.Group {
					continue
				}
				if un.at == nil && un.first+len(un.ds) == i {
					un.ds = demands[un.first : i+1] // still a run of the call's
					continue next
				}
				if un.at == nil {
					un.ds = append([]store.Demand(nil), un.ds...)
					for k := range un.ds {
						un.at = append(un.at, un.first+k)
					}
				}
				un.ds = append(un.ds, *d)
				un.at = append(un.at, i)
				continue next
			}
		}
		units = append(units, unit{ds: demands[i : i+1], first: i})
	}
	return units
}

// takeEach is Take on a Cluster over demands in several slots, where no
// script can reach all of them: an ordered take with undo (see the package
// doc's Atomicity). It takes from one unit at a time, one script on one
// slot (a Group's buckets, or a bucket of its own), the unit of the last
// demand first; at the first denial it gives back what it took and asks
// the units it did not reach how long they would wait, so that the
// decision is the one a single script would have made.
func (s *Store) takeEach(ctx context.Context, now time.Time, demands []store.Demand, units []unit) (store.Decision, error) {
	took := make([]string, len(units)) // the server's time of each granted take
	var taken float64                  // the first demand's total, from its unit's take, the last
	for u := len(units) - 1; u >= 0; u-- {
		un := &units[u]
		reply, err := s.run(ctx, "take", now, un.ds, nil, "")
		var d store.Decision
		if err == nil {
			d, err = decision(reply, len(un.ds))
			if err == nil && d.OK {
				if took[u] = tookOf(reply); took[u] == "" {
					err = fmt.Errorf("redisstore: unexpected reply %v to a take", reply)
				}
			}
		}
		if err != nil {
			s.each(ctx, now, units, undos(took, nil))
			return store.Decision{}, err
		}
		if !d.OK {
			return s.denied(ctx, now, len(demands), units, took, u, un.index(d.Blocked), d.Wait), nil
		}
		if un.index(0) == 0 {
			taken = d.Taken
		}
	}
	return store.Decision{OK: true, Taken: taken}, nil
}

// denied gives back what takeEach took before unit u was denied, on
// demand blocked, and peeks at the units it did not reach, in one
// pipeline: the units are on different nodes, which go-redis asks at
// once. It returns the demand with the longest wait; ties go to the
// first. A failed undo leaves its tokens taken until they refill; a failed
// peek leaves its unit out of the choice of the longest wait.
func (s *Store) denied(ctx context.Context, now time.Time, n int, units []unit, took []string, u, blocked int, wait time.Duration) store.Decision {
	var peeks []job
	for v := range u {
		peeks = append(peeks, job{u: v, mode: "peek"})
	}
	jobs := undos(took, peeks)
	waits := make([]time.Duration, n)
	waits[blocked] = wait
	for k, r := range s.each(ctx, now, units, jobs) {
		if jobs[k].mode != "peek" || r.err != nil {
			continue
		}
		un := &units[jobs[k].u]
		if d, err := decision(r.reply, len(un.ds)); err == nil && !d.OK {
			waits[un.index(d.Blocked)] = d.Wait
		}
	}
	// The longest wait blocks, as in the script: Never is the largest
	// Duration, and ties go to the first demand, whichever was reached first.
	longest := 0
	for j, w := range waits {
		if w > waits[longest] {
			longest = j
		}
	}
	return store.Decision{Blocked: longest, Wait: waits[longest]}
}

// A job is one script on one unit: unit u, in mode, with the time of the
// take an undo gives back.
type job struct {
	u    int
	mode string
	took string
}

type result struct {
	reply []int64
	err   error
}

// undos appends to jobs an undo of every unit that was taken.
func undos(took []string, jobs []job) []job {
	for u, t := range took {
		if t != "" {
			jobs = append(jobs, job{u: u, mode: "undo", took: t})
		}
	}
	return jobs
}

// each runs jobs, each a script on one unit, in one pipeline, and returns
// their results in order. A node that has not seen the script yet answers
// NOSCRIPT, and its jobs are sent again with the script.
func (s *Store) each(ctx context.Context, now time.Time, units []unit, jobs []job) []result {
	results := make([]result, len(jobs))
	if len(jobs) == 0 {
		return results
	}
	pipe := s.client.Pipeline()
	cmds := make([]*redis.IntSliceCmd, len(jobs))
	for k, j := range jobs {
		cmds[k] = s.command(ctx, j.mode, now, units[j.u].ds, nil, j.took)
		_ = pipe.Process(ctx, cmds[k])
	}
	pipe.Exec(ctx) // each command keeps its own error
	failed := false
	for k, c := range cmds {
		j := jobs[k]
		if redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
			results[k].reply, results[k].err = s.run(ctx, j.mode, now, units[j.u].ds, nil, j.took)
			continue
		}
		results[k].reply, results[k].err = c.Result()
		if results[k].err != nil {
			failed = true
			results[k].err = fmt.Errorf("redisstore: %s: %w", j.mode, results[k].err)
		}
	}
	if failed {
		s.reloadSlots()
	}
	return results
}
