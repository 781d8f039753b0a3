// Package simulate runs rate limiters side by side on the same synthetic
// traffic, in virtual time: token bucket, fixed window, sliding window, and
// pacer's own pacing driven through a real pacer.Transport.
//
// Everything here is a pure function of its Config. Time is a
// time.Duration since the start of the run; nothing reads the wall clock or
// sleeps, so a run of an hour takes milliseconds and gives the same numbers
// every time (Poisson arrivals included, for a given seed).
package simulate
