// Package pace holds the rules by which pacer reads what a provider did
// and said, as pure functions, immutable values and two state machines: no
// I/O, no clock (the time is an argument, as golang.org/x/time/rate's
// reserveN takes it), no pointer back to a Transport. The root's learn
// step (learn.go and the files it calls) keeps a Model, a Record and a
// Cuts for each bucket — the Model replaced whole and read without a lock,
// the other two under the bucket's lock; it also applies what they decide
// to the bucket and the store, raises events and logs.
//
// A Model is the one model of the provider's admission capacity a scope
// paces by: the configured limit as the prior, a limit the provider
// published in its place, the pace live remaining counts allow while they
// come, and a cut's climb back. Model.Pace reads them as one pace, in one
// order; Model.Why says which sets it. A Model is immutable and the root
// replaces it whole, so the hot path reads it with one atomic load and no
// lock. The evidence behind its figures is kept by the two state machines:
//
// A Record is the evidence of a provider that reports what remains. Each
// count it is given (Record.Count) is checked against what the scope sent:
// the calls admitted since the count's call are taken off it, what the
// provider gave back is measured from successive counts against the
// scope's own spending, dated when the server counted (send time plus half
// the round trip's floor), and refused calls are never taken for spent.
// Its Verdict is the pace that spends what is left to the margin by the
// reset, never below the blind pace while what is left lasts at it
// (reading.lastsAtBlind).
//
// A Cuts is the evidence of a provider that only refuses. Each refusal that
// taught nothing else (Cuts.Refused) is checked against what the server
// accepted over the last measuring window, the scope's own pauses left
// out; its CutVerdict is a Curve from that capacity back to the full pace,
// and whether the scope pauses. A refusal of a call the last cut already
// answered is old news, and cuts nothing.
//
// Where each part lives: model.go, the Model and the pace it reads;
// record.go, the Record and Count, which takes one count in order;
// reading.go, what a count says read against the record (what is left
// now, the margin, how long to spread it over); rules.go, the rules its
// pace is reckoned by, in the order Count applies them, each a method;
// givenback.go, what the provider gives back and what others take;
// turn.go, a fixed window's refills, turns and learned window; spent.go,
// what was spent since a count; window.go, the arithmetic of resets;
// cut.go and curve.go, the Cuts and the climb back; slots.go, a
// concurrency cap's cut; roundtrip.go, the route's floor and spread.
//
// Each rule names the server property it relies on:
//
//   - Model.Pace lets live counts outrank a published limit below the
//     configured one, up to the configured limit (not a provisional one,
//     which the published limit replaces). It relies on a count falling
//     as the server admits: a figure the counts show is exceeded without
//     running out is a reading of the headers (a bucket's capacity, say),
//     not the rate; once counts stop, the published figure paces again.
//   - Model.Base aims at the limit itself while a live count about that
//     limit paces the scope (LivePace.Edge), not at the blind headroom
//     under it. It relies on the count falling as the server admits: the
//     margin the count keeps unspent is the headroom. A second one under
//     the limit held a token bucket, whose count any pace above its refill
//     spends, at 98 a second of its 100.
//   - The measure of supply (what the provider adds back, net of what
//     others take) relies on a server that counts each call it accepts
//     once: a count that falls slower than the scope spends is quota given
//     back (a sliding window's calls of a window ago, a bucket's refill),
//     one that falls faster is another client's spending. A token bucket
//     that publishes its capacity as its limit (11 while it accepts 100 a
//     second) is paced by what it accepts, not what its Limit seems to say.
//     A sliding window's first turn (Record.givesBackFromTurn) relies on
//     a window counter that weighs the window before by how much of it
//     still overlaps: from its turn it gives back what that window counted,
//     evenly, where before it gave back nothing; a measure still young
//     starts from that, for a scope alone on the key.
//   - Reading a count net of the calls in flight, plus what flows back
//     meanwhile, relies on the server counting a call on its way: over a
//     round trip of 300 ms at 100 a second, 30 calls are in flight. A call
//     held far beyond the route's jitter (RoundTrips) was counted when it
//     got through: what flowed back since is read over the longest round
//     trip the jitter makes, not over its own.
//   - The margin a count keeps (Record.margin) is a whole call where the
//     published limit is below the configured count a window. It relies on
//     a count in whole calls: such a published figure is a bucket's level
//     (throttled publishes its capacity) or a limit kept lower than the
//     scope was told, and at a quarter of a call left the next call — an
//     unpaced neighbour's, or the scope's own in a bunch — finds none. A
//     bucket's level costs nothing to keep: it refills at its rate. At the
//     configured quota the margin stays a quarter of a call at least, as a
//     whole one is a large share of a small window. Half the bucket, once
//     the server has refused the scope after its first seconds, where the
//     count gives back more in a window than twice its limit — a bucket,
//     not a window kept lower, which gives back at most its limit a
//     window: at a thin margin the arrivals' disorder (the scope's own
//     over a route, an unpaced neighbour's) empties it between counts, and
//     half of it is as far from empty as from full. Over a jittery route
//     the margin also holds what arrives in half the jitter: for a count
//     that gives back as it goes, the limit's rate (Record.arriving). It
//     relies on such a count being spent at its level all the time, by
//     everyone on the key, so that the disorder is every client's, not the
//     scope's share alone; a fixed window is near empty only at its turn.
//     And on such a count, a refusal of a call the counts paced, after the
//     first seconds, widens the margin by a call, given back one every ten
//     seconds without another (Record.widening): it relies on the refusal
//     measuring the disorder on the key — other clients' bunches, the
//     route's reordering — that no figure the margin is reckoned from
//     says. Not a call held on its way far beyond the route's jitter
//     (RoundTrips): the calls a stall let go together were refused for
//     arriving at once.
//   - A count with no room for its margin (a server bucket of one) sets no
//     pace: its zeros are its size, not scarcity; its refusals cut
//     (reading.noRoom).
//   - A count that holds at its peak while the scope spends relies on a
//     bucket that refills at least as fast as it is spent: the scope is
//     below the server's rate, by an amount the count cannot say. Before
//     the measure of supply is old enough to go by, such a count sets no
//     pace below the one without a count, and lets the scope aim at the
//     edge at once; read as the rate, the young measure followed the
//     scope's own pace up, and the pace followed the measure
//     (reading.fullWhileSpending). Not after a refusal of a call the
//     counts paced (the full count is then the refill at the edge the
//     scope found); a refusal of the blind start — a call of the bucket's first
//     burst, or sent before the first count — found the server bucket's
//     size, not that edge.
//   - Cuts.Refused and Curve, the cut and the climb back, rely on a refusal
//     being a measurement: a server refuses above its capacity and accepts
//     the rest, so the pace jumps to what it accepted and climbs back by
//     time, flat near the level it last refused (TCP CUBIC's shape), over a
//     time priced by what the refusal cost: a bare 429 one call, a pause
//     the calls it stopped (CostlyRecovery where it stopped two or more; an
//     outage's floor of a call a second climbs as after bare 429s). A
//     shared scope measures the share of its calls accepted times the pace
//     they were sent at: a fleet's server accepted more than this process
//     saw. A window's only refusal measures less: a bucket with room lets a
//     burst above its rate through before it refuses, so what it accepted
//     over a window in which it refused nothing else is the scope's pace;
//     that cut keeps the wider headroom a pause's does (CostlyHeadroom). At
//     the full pace that pace is only an upper bound, and the calls in
//     flight at the cut check it (Cuts.tooShallow): a bucket at its level
//     refuses the share of them above its rate, and where that share is
//     more than the tenth the cut kept, the cut halves instead, and climbs
//     back to flatten at the share of them it accepted, the measure; so
//     does a halving for want of history, once sixteen calls are answered
//     after it, on a climb a bare 429 priced. A one-second Retry-After on a
//     measured cut pauses only its call: a per-second limiter's stock
//     answer; so does one on a call sent after it within its window, whose
//     refusal a bucket the pace before the cut filled still makes while the
//     pace below its rate drains it. So does one on a call sent before a
//     cut, measured or not: the server answered the moment the cut
//     answered, whose pause, if any, stands.
//   - SlotsCut relies on a concurrency cap refusing a call that arrives
//     while it holds its cap: what it held then were calls in flight.
//   - RoundTrips keeps the shortest round trip of late: the floor under a
//     network's jitter and a busy host's lateness, against which a count is
//     dated (when the server counted, not when an answer was read); and
//     the spread above it, the mean of the first round trips', then an
//     average over 64, in which one more than three spreads above the
//     floor counts as three, and a quarter as much: a stall that held the
//     calls and let them go together is no jitter.
//   - Whether another client spends on the key relies on the same count:
//     it falls faster than the scope spends. Over a jittery route a count
//     is made in the order calls arrive and read in the order they were
//     sent, so the fall must exceed the calls in the route's jitter, both
//     of late and over a second (a neighbour's spending lasts; the
//     route's disorder averages out). While the measure is young, only
//     over the second, and from none: the first burst's disorder moves a
//     tenth of a second's measure by dozens of calls a second.
//   - Before any turn of the count is seen, another client's spending is
//     read from the count alone, over two seconds at least: how much
//     faster than the scope spent it fell since a count after the first
//     calls' disorder. It relies on a window that gives nothing back in
//     its first span (a fixed window, or a sliding one idle before): that
//     client goes on spending until the reset, and what is left must last
//     it too. Read from each count (drift), the first burst's disorder
//     over a round trip passed for a neighbour and stalled a scope alone.
//   - NextRefill (Record.Refill) relies on a fixed window refilling at
//     regular intervals, seen as jumps in its count. A Record takes the
//     refills for a window's turning only when they come a window apart
//     and the count has held at least half of what the scope spent between
//     two of them (a token bucket that publishes its capacity jumps as
//     answers overtake each other, and never holds that); one refill is
//     enough after counts over half a window. Then the turns come on the
//     window's period, dated by the earlier of the latest two refills seen
//     (each is seen a way back after it, and some), not by the latest
//     alone; not by older ones either, since a window that starts at the
//     first call after the last one ended turns a little later each time.
//   - A fixed window counts a call when it arrives. A call sent later than
//     a round trip's floor before the turn the answers show spends the
//     next window, neighbour or not: what this window has left is spread
//     until then. Alone on the key, once the turn is that near, what the
//     scope has to spend is the next window's count less the calls already
//     on their way to it, over what is left of the next window's sending;
//     and it never paces above the window's count a window (a faster pace
//     only sends a window's calls early, to arrive at the turn in one
//     burst). A count overtaken at a turn, lower than the one that showed
//     the turn by a refill's jump, is of the window before: it bounds
//     nothing now (reading.nextWindow, reading.windowLetsThrough,
//     Record.overtaken).
//   - A fixed window's refills come a window apart; the calls spent
//     between two of them are what the window let through only when they
//     are a whole number of windows apart. A token bucket's count jumps
//     when answers overtake each other, at any gap.
//   - OneCallBy (reading.refillDue) relies on a fixed window being full
//     again when it turns: a count near the end of one sets a crawl that
//     must not hold past the refill NextRefill expects. And there a count
//     that falls faster than the scope spends is a neighbour's, which goes
//     on spending until the turn (a fixed window gives nothing back before
//     then): it is taken off the pace, and what the neighbour took since
//     the count was made off what is left.
//   - WholeSecondSlack and PauseForNoneLeft rely on a reset written in whole
//     seconds (Unix seconds, or seconds against a Date header) being up to
//     a second late, so a reset "1 s" away may already be here.
//   - A settled count's reset of a second or two is read as a bucket's
//     time to be full, and what is left is spent within a round trip or
//     two, not spread to it — but not the last seconds of a long window
//     beside others on the key (reading.bucketReset). It relies on a
//     window's reset staying put as its count falls: there the reset is
//     the window's end, and each client on the key reads what is left as
//     its own.
//   - A count with none left (reading.noneLeft) pauses the scope until its
//     reset only while the count may refill at its resets, as a fixed
//     window does. A count made once the reset the one before it named was
//     due, which names a later one with no refill, and no refill ever seen,
//     is a count that gives back as it goes (a sliding window, which at its
//     turn is as empty as before it): from then on none left paces by what
//     comes back. Paused to each reset, a sliding window of a minute told
//     twice its limit spent half of it. So does a count that names a reset
//     beyond the soonest an earlier count named, before that one came (by
//     more than the route's jitter and a whole second's slack): a window's
//     end stays put as its count falls, a bucket's reset — when it is full
//     again — moves later as it is spent, and it gives back as it goes. And
//     so does a count that gave back a quarter of the blind pace or more
//     over the latest two seconds without a refill (a fixed window gives
//     nothing back before it refills) or a refusal, however the resets
//     went: a bucket spent slowly to none names the time until it is full.
//   - Over seconds without a refusal (reading.goesOnGivingBack), what a
//     count gave back is the pace the server sustains (a sliding window
//     returns what was spent a window ago, a bucket refills at its rate):
//     while the count's reset is within those seconds, the scope does not
//     pace below it, less a gap to the margin spread over those seconds. It
//     relies on a server whose count moves only by what it accepts and
//     gives back, read over long enough that answers counted out of order
//     are a call or two (Record's givenBack); a refusal, a fixed window
//     seen to turn, or a refill within the span sets it aside.
//   - A refusal the count does not explain — every count the 429 carries
//     for the scopes it concerns has room for the refused call — overrules
//     the counts (Curve.Overruled): the refusal cuts as a bare 429 does,
//     and the climb paces the scope below what the counts allow, at the
//     blind headroom, until it ends; a fleet that adopts the cut climbs
//     below its counts too. It relies on a limiter that reports
//     the count it refuses by at 0 (or below the call's cost) on its own
//     refusal, as httprate, throttled and ulule/limiter do, and GitHub's
//     primary limit does; a refusal by a limit the counts do not report
//     (GitHub's secondary ones) leaves them with room. Taken as the
//     count's lesson, a server that said 80 left while it accepted half
//     the calls had half of them refused for good.
//   - A reset in whole seconds may already be here, so none left until one
//     does not stop the scope — unless the server has shown that a refusal
//     costs more than the call (a 429's Retry-After beyond BriefRetryAfter
//     paused the scope: Scope.CostlyRefusals), or the window is long enough
//     that the second's slack is a small share of it (slackShare: twenty
//     seconds or more; a window is no shorter than the longest reset its
//     counts have stated, whatever the scope was told). Then none left is
//     waited out to the reset's slack. Server properties: a window lasts at
//     least as long as the time to its end, and a server may answer a call
//     sent into none left with a pause of its window — httprate's
//     Retry-After is its window, and a call sent into the last fraction of
//     a minute's window cost the next minute — while the wait costs at most
//     the slack. A window of seconds would lose a large share of every
//     window to it, and a refusal there costs a call or a brief pause. The
//     lesson of a costly refusal lasts CostlyFor, sixty times that pause: a
//     server that asked once does not keep the scope waiting at every count
//     of none left for good. While it lasts, a count running out wakes a
//     waiting call with one call's worth, not the bucket's burst
//     (LivePace.WakeOne): a count of a sliding window that gives back as it
//     goes is not paused at none left, and the burst the wake refilled went
//     out into the turn of a minute, whose refusal asked for the next one.
//     Elsewhere the burst is a probe that costs a refused call where the
//     count was right. One call's worth is a burst of one as well as a
//     pace: a bucket refills at the pace it is asked at over all the time
//     since it was last taken from, and the wake's pace rises as the report
//     runs out, so a call that had slept woke to the whole burst. Each
//     count arms the wake anew, to its own reset: a reset counting down to
//     a window's end raises it as one over the time left, to the burst a
//     second in the window's last second. Where the configured pace is more
//     than the count has shown the server holds in its window, and the
//     count is seen to give back as it goes (a sliding window, a bucket),
//     the wake spends no faster than what the count is measured to give
//     back, and what is left spread over the hold (LivePace.WakeAtMost),
//     though still one call by the hold's end. Server property: such a
//     server gives back at a steady rate, not at its reset. Configured at
//     1,000 a second against a sliding minute of 40, the wake sent one call
//     in three into refusals past the first minute (107–121 refused of 290
//     over four minutes); with the bound, at most two at each turn. Not a
//     scope whose configured pace the server can hold: there the wake is
//     what brings the scope to its blind pace while the count's own pace
//     lags what comes back (a sliding minute's limit known lost a seventh
//     of its calls held to what the count measured).
//   - Below the margin (reading.belowMargin), the count slows the scope
//     within a quarter of a second, and no lower than half the blind pace
//     while nothing was refused of late (the calls bring the news that the
//     margin is back), or than what the provider gives back to the scope,
//     once measured, where that is less: it relies on a count that moves
//     only by what the server accepts and gives back, so that paced at what
//     comes back what is left holds, where a floor above it spends the
//     margin away (three processes on one bucket, each seeing the others'
//     take as a slower refill); not a fixed window seen to turn, whose
//     margin comes back at its turn. Nor faster than what is left lasts to
//     the soonest the reset may be (reading.lastsToReset): server property,
//     whatever it counts by, a server gives back by its reset at most what
//     it holds at once (a fixed window at the reset, a sliding one over a
//     window no shorter than it, a bucket its room in the time it states).
//     Configured at 1,000 a second against a fixed minute of 40, half the
//     blind pace sent a round trip's worth of calls into a count with a
//     handful left; 11 of the first minute's calls were refused over a
//     route of up to 400 ms. A refusal is the server saying that
//     pace is too much: then the count paces alone; so it does beside others
//     seen spending on the key in a long window, whose take goes on until
//     the reset (three processes each told a sliding minute's whole limit
//     paced one another's share at half the blind pace, one call in fifty
//     refused). Not at a long window's turn (atLongTurn: a whole-second
//     reset no further than its slack, in a window where the slack is small,
//     and still due: Record.atTurn — a reset named within its slack again
//     after the turn it named is one that never comes): there the count
//     paces alone and wakes one call at a time (Verdict.WakeOne), and a
//     report that runs out with no count since goes on sending one at a time
//     for as long again (LivePace.Then) rather than the burst. Server
//     property: whether a turn gives anything back is unknown until a call
//     finds out — a fixed window refills, a sliding one goes on giving back
//     what was spent a window ago, nothing at the end of its first — and the
//     turn itself may lie a second past the reset (httprate starts its
//     windows when its limiter starts, and states their end in whole
//     seconds). Sent at half the blind pace into a minute's turn that gave
//     nothing back, over a route of 300 ms, a call was refused at every
//     phase of the second, and its Retry-After cost the next minute.
//   - A correction reaches the server a round trip after the count that
//     asked for it and shows in the counts a trip after that: a gap to the
//     margin is closed over no less than a round trip, and a surplus
//     spent over no less than two. Faster, the pace swung between a crawl
//     and the blind pace on a one-second route.
//   - BelieveFor relies on a provider that publishes a limit publishing it
//     again: a figure not repeated within its window (and never for longer
//     than the maximum wait) is forgotten.
//
// Concurrency: the functions are safe to call from any goroutine; a Model
// and a Curve are immutable and may be shared; a Record, a Cuts and a
// RoundTrips are not safe for concurrent use (their owner holds a lock).
package pace
