package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/pacer-go/pacer/store"
)

// takeEach is Take on a Cluster, where each bucket is in a slot of its own
// and no script can reach two of them: an ordered take with undo (see the
// package doc's Atomicity). It takes from one bucket at a time, the last
// demand first; at the first denial it gives back what it took and asks the
// buckets it did not reach how long they would wait, so that the decision
// is the one a single script would have made.
func (s *Store) takeEach(ctx context.Context, now time.Time, demands []store.Demand) (store.Decision, error) {
	took := make([]string, len(demands)) // the server's time of each granted take
	var taken float64                    // the first demand's total, from its take, the last
	for i := len(demands) - 1; i >= 0; i-- {
		if demands[i].Cost <= 0 {
			continue
		}
		reply, err := s.run(ctx, "take", now, demands[i:i+1], nil, "")
		var d store.Decision
		if err == nil {
			d, err = decision(reply, 1)
			if err == nil && d.OK {
				if took[i] = tookOf(reply); took[i] == "" {
					err = fmt.Errorf("redisstore: unexpected reply %v to a take", reply)
				}
			}
		}
		if err != nil {
			s.each(ctx, now, demands, undos(took, nil))
			return store.Decision{}, err
		}
		if !d.OK {
			return s.denied(ctx, now, demands, took, i, d.Wait), nil
		}
		if i == 0 {
			taken = d.Taken
		}
	}
	return store.Decision{OK: true, Taken: taken}, nil
}

// denied gives back what takeEach took before demand blocked was denied,
// and peeks at the demands it did not reach, in one pipeline: the buckets
// are on different nodes, which go-redis asks at once. It returns the
// demand with the longest wait; ties go to the first. A failed undo leaves
// its tokens taken until they refill; a failed peek leaves its demand out
// of the choice of the longest wait.
func (s *Store) denied(ctx context.Context, now time.Time, demands []store.Demand, took []string, blocked int, wait time.Duration) store.Decision {
	var peeks []job
	for j := range blocked {
		if demands[j].Cost > 0 {
			peeks = append(peeks, job{i: j, mode: "peek"})
		}
	}
	jobs := undos(took, peeks)
	waits := make([]time.Duration, len(demands))
	waits[blocked] = wait
	for k, r := range s.each(ctx, now, demands, jobs) {
		if jobs[k].mode != "peek" || r.err != nil {
			continue
		}
		if d, err := decision(r.reply, 1); err == nil && !d.OK {
			waits[jobs[k].i] = d.Wait
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

// A job is one single-bucket script: demand i, in mode, with the time of
// the take an undo gives back.
type job struct {
	i    int
	mode string
	took string
}

type result struct {
	reply []int64
	err   error
}

// undos appends to jobs an undo of every demand that was taken.
func undos(took []string, jobs []job) []job {
	for i, t := range took {
		if t != "" {
			jobs = append(jobs, job{i: i, mode: "undo", took: t})
		}
	}
	return jobs
}

// each runs jobs, each a script on one bucket, in one pipeline, and returns
// their results in order. A node that has not seen the script yet answers
// NOSCRIPT, and its jobs are sent again with the script.
func (s *Store) each(ctx context.Context, now time.Time, demands []store.Demand, jobs []job) []result {
	results := make([]result, len(jobs))
	if len(jobs) == 0 {
		return results
	}
	pipe := s.client.Pipeline()
	cmds := make([]*redis.IntSliceCmd, len(jobs))
	for k, j := range jobs {
		cmds[k] = s.command(ctx, j.mode, now, demands[j.i:j.i+1], nil, j.took)
		_ = pipe.Process(ctx, cmds[k])
	}
	pipe.Exec(ctx) // each command keeps its own error
	failed := false
	for k, c := range cmds {
		j := jobs[k]
		if redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
			results[k].reply, results[k].err = s.run(ctx, j.mode, now, demands[j.i:j.i+1], nil, j.took)
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
