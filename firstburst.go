package pacer

// A scope's first burst goes out at one instant: the calls its bucket lets
// through before any has to wait, or before the first count comes back —
// all of them, under a limit that paces nothing until the provider
// publishes one. The server counts them in whatever order they reach it.
// A count answering one of them is net of the calls admitted after it
// (sinceMark), but not of those admitted before it that the server counted
// after it: read first, the answer of the burst's last call, which the
// server counted first, said nearly the whole limit was left, and the
// callers it freed spent it before the answers counted later were read.
// Drafts on two models sharing a project's 30,000 tokens a minute, 32 sent
// at once, had three refused so.
//
// So until it has been read, every earlier call of the burst is taken as
// counted after the answer in hand (unansweredBefore). Once read, its own
// answer has clamped the bucket: whichever answer the server counted last,
// the calls it did not count were unread when it was read, and taken off.
// A call the server counted before the one in hand but answered after it
// is taken off too: the safe side, which costs at most the burst's calls
// still in flight, once, in a bucket the later counts only lower.
// Calls sent apart, paced, reach the server in the order they were sent
// but for the route's jitter, which the count's margin holds
// (pace.Record.margin); taking off every earlier call still unanswered
// there, most of them already counted and only slower back, cost up to
// 0.008 of a sliding window over a 200–400 ms route.

// inFirstBurst reports whether the call admitted at mark (its spent units)
// was one of the scope's first burst. The first count ends the burst, if
// no call had to wait before.
func (s *bucket) inFirstBurst(mark int64) bool {
	s.burstEnds()
	return mark <= s.burstUntil.Load()
}

// admittedInBurst is inFirstBurst without ending the burst: what a
// refusal without a count asks.
func (s *bucket) admittedInBurst(mark int64) bool {
	end := s.burstUntil.Load()
	return end == 0 || mark <= end
}

// unansweredBefore is the units of the first burst's calls admitted
// before a call of the burst admitted at mark (inFirstBurst; its spent
// units, its own cost included) whose answers have not been read: the
// server may have counted them after the call's count.
func (s *bucket) unansweredBefore(mark, cost int64) int64 {
	return max(0, mark-cost-s.burstAnswered.Load())
}

// burstEnds ends the scope's first burst, if it has not ended: the calls
// admitted so far are the burst.
func (s *bucket) burstEnds() {
	if s.burstUntil.Load() == 0 {
		s.burstUntil.CompareAndSwap(0, max(1, s.spent.Load()))
	}
}

// answered notes that the answer of a call admitted at spentAt, of cost,
// has been read (or that none will come). quiet says the answer carried no
// count: while the burst has not ended, a quiet answer is not noted,
// sparing a provider that never counts a shared write on every call of a
// scope that never waits; a provider that counts on some answers only then
// has its burst's counts read net of calls already answered, the safe side.
func (s *bucket) answered(spentAt, cost int64, quiet bool) {
	end := s.burstUntil.Load()
	if end == 0 && quiet || end != 0 && spentAt > end {
		return
	}
	s.burstAnswered.Add(cost)
}
