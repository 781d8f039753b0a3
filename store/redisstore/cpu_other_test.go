//go:build !unix

package redisstore_test

import "time"

// processCPU returns -1: the benchmarks report the process's CPU time on
// unix only.
func processCPU() time.Duration { return -1 }
