// Package pace holds the rules by which pacer reads what a provider did
// and said, as pure functions and immutable values: no I/O, no clock (the
// time is an argument, as golang.org/x/time/rate's reserveN takes it), no
// pointer back to a Transport. The root's learn step (learn.go and the
// files it calls) keeps the state of each bucket and calls these under its
// bucket's lock; it also applies what they decide to the store, raises
// events and logs.
//
// Each rule names the server property it relies on:
//
//   - Curve, the climb back after a cut, relies on a refusal being a
//     measurement: a server refuses above its capacity and accepts the
//     rest, so the pace jumps to what it accepted and climbs back by time,
//     flat near the level it last refused (TCP CUBIC's shape).
//   - SlotsCut relies on a concurrency cap refusing a call that arrives
//     while it holds its cap: what it held then were calls in flight.
//   - RoundTrips keeps the shortest round trip of late: the floor under a
//     network's jitter and a busy host's lateness, against which a count is
//     dated (when the server counted, not when an answer was read).
//   - NextRefill relies on a fixed window refilling at regular intervals,
//     seen as jumps in its count.
//   - OneCallBy relies on a fixed window being full again when it turns:
//     a count near the end of one sets a crawl that must not hold past the
//     refill NextRefill expects. The root takes refills for a window's
//     turning only when the count has held at least half of what the scope
//     spent between two of them (a token bucket that publishes its
//     capacity jumps as answers overtake each other, and never holds that);
//     and there, a count that falls faster than the scope spends is a
//     neighbour's, which goes on spending until the turn, so it is taken
//     off the pace (a fixed window gives nothing back before then). It
//     relies too on a fixed window counting a call when it arrives: a call
//     sent less than a round trip's floor before the turn the answers
//     show spends the next window, so once the turn is nearer than that, what
//     the scope has to spend is the next window's count less the calls
//     already on their way to it.
//   - WholeSecondSlack and PauseForNoneLeft rely on a reset written in whole
//     seconds (Unix seconds, or seconds against a Date header) being up to
//     a second late, so a reset "1 s" away may already be here.
//   - BelieveFor relies on a provider that publishes a limit publishing it
//     again: a figure not repeated within its window (and never for longer
//     than the maximum wait) is forgotten.
//
// Concurrency: the functions are safe to call from any goroutine; a Curve
// is immutable and may be shared; a RoundTrips is not safe for concurrent
// use (its owner holds a lock).
package pace
