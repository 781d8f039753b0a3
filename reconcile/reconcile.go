package reconcile

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/observe"
	"github.com/pacer-go/pacer/period"
)

// A Level is what a provider's report groups by.
type Level string

const (
	// ByProject groups by OpenAI's project (project_id) or Anthropic's
	// workspace (workspace_id).
	ByProject Level = "project"
	// ByAPIKey groups by API key (api_key_id): in the usage reports only.
	ByAPIKey Level = "api_key"
	// ByModel groups by model: in the usage reports only.
	ByModel Level = "model"
)

// The units a Source reports in: a budget in money (Budget.Spend) is
// compared in dollars, one in tokens in tokens.
const (
	UnitUSD    = "usd"
	UnitTokens = "tokens"
)

// A Group is one figure of the provider's report and the workloads whose
// calls make it up.
type Group struct {
	By Level
	// ID is the group's id as the provider reports it: "proj_abc",
	// "key_abc", "gpt-4o-mini". A report's null id (calls outside every
	// project, say) is "".
	ID string
	// Workloads are the workloads whose calls the group's figure counts,
	// and no other group's: their budgets must have the same unit and
	// calendar period.
	Workloads []string
	// Name labels the group in events, metrics and Stats; "" means By:ID.
	Name string
}

// A Query asks a Source what the provider billed.
type Query struct {
	// Start and End bound the period: the budget's current one. The
	// providers report whole days; the one of Now, not yet over, so far.
	Start, End, Now time.Time
	By              Level
	Unit            string // UnitUSD or UnitTokens
}

// A Source reads a provider's report: OpenAI and Anthropic are two.
type Source interface {
	// Billed returns what the provider reports for q's period, in q.Unit,
	// by the id of each of its groups at q.By. A report it cannot read,
	// whatever the reason, is an error that says why; never a partial
	// figure.
	Billed(ctx context.Context, q Query) (map[string]float64, error)
}

// Config is what a Reconciler compares, and how often.
type Config struct {
	Source Source
	// Transports are the Transports whose charges are compared; a
	// correction goes to the first, and through its store to the fleet.
	// When that store reads levels (store.LevelReader: the in-memory,
	// Redis and Postgres stores do), what was charged is the fleet's, read
	// from its ledger (Transport.FleetSpent), and the others are taken to
	// share it; otherwise it is what these Transports charged, summed.
	Transports []*pacer.Transport
	Groups     []Group
	// Every is the interval between polls; zero means 5 minutes.
	Every time.Duration
	// Timeout bounds each poll, every page of every report; zero means
	// 30 seconds.
	Timeout time.Duration
	// Tolerance is the drift, as a share of the larger of what was billed
	// and what was charged, below which nothing is reported or corrected;
	// zero means 0.05 (5 %). A negative one is an error.
	Tolerance float64
	// Correct charges each drift beyond the Tolerance to the group's
	// budgets (see the package doc). Off by default: a drift is then only
	// reported.
	Correct bool
	// Observers hear the EventBudgetDrift and EventReconcileFailed events.
	Observers []observe.Observer
}

// A Reconciler polls a Source and compares it with what Transports
// charged. Its methods are safe for concurrent use; one poll runs at a
// time. The zero Reconciler is not usable: call New.
type Reconciler struct {
	cfg    Config
	groups []group

	poll sync.Mutex // one poll at a time

	mu    sync.Mutex // guards stats; never held across I/O
	stats Stats
}

// group is a Group with what New learned of its budgets.
type group struct {
	Group
	unit   string
	period period.Period
}

// Stats is what the Reconciler found.
type Stats struct {
	Polls, Failures int64
	LastPoll        time.Time // when the last poll began; zero before the first
	LastError       error     // the last poll's failure; nil after one that succeeded
	Groups          []GroupStats
}

// GroupStats is what the last successful poll found of one group.
type GroupStats struct {
	Name string
	By   Level
	ID   string
	Unit string
	// PeriodStart and PeriodEnd bound the period compared.
	PeriodStart, PeriodEnd time.Time
	// Billed is what the provider reported, Charged what pacer charged,
	// and Drift Billed less Charged, in Unit.
	Billed, Charged, Drift float64
	// Fleet says Charged is the fleet's, read from the store's ledger of
	// the budgets: every process sharing the store is counted. False says
	// the store cannot read a level, and Charged counts the Transports of
	// Config alone, this process's: in a fleet, the others' calls read as
	// drift.
	Fleet bool
	// Reported says Drift was beyond the Tolerance, and was reported.
	Reported bool
	// Corrected is what corrections charged the group's budgets in the
	// period so far (negative: gave back).
	Corrected float64
	Workloads []WorkloadShare
}

// WorkloadShare is one workload's part of its group's figures.
type WorkloadShare struct {
	Name    string
	Charged float64 // what pacer charged it in the period (see GroupStats.Fleet)
	// Share is its part of the drift, in proportion to what it was charged
	// (in equal parts when nothing was): what a correction charges it.
	Share float64
}

// New returns a Reconciler of c, or an error that says what to change.
func New(c Config) (*Reconciler, error) {
	switch {
	case c.Source == nil:
		return nil, errors.New("reconcile: Config.Source is nil; give reconcile.OpenAI(adminKey) or reconcile.Anthropic(adminKey)")
	case len(c.Transports) == 0 || slices.Contains(c.Transports, nil):
		return nil, errors.New("reconcile: Config.Transports needs the Transports whose charges to compare, none nil")
	case len(c.Groups) == 0:
		return nil, errors.New("reconcile: Config.Groups is empty; say which workloads' calls each project, key or model of the report counts")
	case c.Every < 0 || c.Timeout < 0:
		return nil, fmt.Errorf("reconcile: Config.Every (%v) and Timeout (%v) must not be negative (zero means the default)", c.Every, c.Timeout)
	case !(c.Tolerance >= 0 && c.Tolerance < 1):
		return nil, fmt.Errorf("reconcile: Config.Tolerance %v must be a share from 0 to 1 (zero means 0.05)", c.Tolerance)
	}
	if c.Every == 0 {
		c.Every = 5 * time.Minute
	}
	if c.Timeout == 0 {
		c.Timeout = 30 * time.Second
	}
	if c.Tolerance == 0 {
		c.Tolerance = 0.05
	}
	budgets := map[string]pacer.Budget{}
	for _, ws := range c.Transports[0].Stats().Workloads {
		budgets[ws.Name] = ws.Budget
	}
	r := &Reconciler{cfg: c}
	seen := map[string]string{}
	for _, g := range c.Groups {
		if g.Name == "" {
			g.Name = string(g.By) + ":" + g.ID
		}
		gr, err := checkGroup(g, budgets, seen)
		if err != nil {
			return nil, err
		}
		r.groups = append(r.groups, gr)
	}
	return r, nil
}

// checkGroup checks g against the budgets of its workloads.
func checkGroup(g Group, budgets map[string]pacer.Budget, seen map[string]string) (group, error) {
	switch g.By {
	case ByProject, ByAPIKey, ByModel:
	default:
		return group{}, fmt.Errorf("reconcile: group %q: By %q is not a level; use ByProject, ByAPIKey or ByModel", g.Name, g.By)
	}
	if len(g.Workloads) == 0 {
		return group{}, fmt.Errorf("reconcile: group %q names no workload", g.Name)
	}
	gr := group{Group: g}
	for i, name := range g.Workloads {
		if other, ok := seen[name]; ok {
			return group{}, fmt.Errorf("reconcile: workload %q is in groups %q and %q; a workload's calls are counted in one group, or they would be corrected twice", name, other, g.Name)
		}
		seen[name] = g.Name
		b, ok := budgets[name]
		switch {
		case !ok:
			return group{}, fmt.Errorf("reconcile: group %q: the Transport declares no workload %q", g.Name, name)
		case b == pacer.Budget{}:
			return group{}, fmt.Errorf("reconcile: group %q: workload %q has no budget to compare", g.Name, name)
		case b.Period == period.Period{} || b.Period.IsWindow():
			return group{}, fmt.Errorf("reconcile: group %q: workload %q's budget (%v) has no calendar period; "+
				"give it one (Budget.Period: period.Daily(0, 0, time.UTC)): a window that starts with its first call matches no report", g.Name, name, b)
		}
		if s := b.Period.Start(time.Now()).UTC(); s.Hour() != 0 || s.Minute() != 0 || s.Second() != 0 {
			return group{}, fmt.Errorf("reconcile: group %q: workload %q's budget (%v) starts its periods at %s, not at midnight UTC, where the providers' daily reports start",
				g.Name, name, b, s.Format("15:04 UTC"))
		}
		unit := UnitTokens
		if !b.Spend.IsZero() {
			unit = UnitUSD
		} else if !strings.EqualFold(b.Unit, UnitTokens) {
			return group{}, fmt.Errorf("reconcile: group %q: workload %q's budget counts %q; the providers' reports count dollars and tokens: use a budget in money (Spend) or in %q",
				g.Name, name, b.Unit, UnitTokens)
		}
		if i == 0 {
			gr.unit, gr.period = unit, b.Period
		} else if unit != gr.unit || b.Period != gr.period {
			return group{}, fmt.Errorf("reconcile: group %q: workloads %q and %q have budgets of different units or periods; a group's figure is compared with budgets counted alike",
				g.Name, g.Workloads[0], name)
		}
	}
	return gr, nil
}

// Run polls at once, then every Config.Every, until ctx ends, and returns
// ctx's error. A failed poll is reported (EventReconcileFailed, Stats) and
// the next one runs on time.
func (r *Reconciler) Run(ctx context.Context) error {
	tick := time.NewTicker(r.cfg.Every)
	defer tick.Stop()
	for {
		_ = r.Poll(ctx)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Poll compares each group once, within Config.Timeout, and returns the
// first failure to read a report, which it has reported too. A group whose
// report failed keeps its last figures in Stats.
func (r *Reconciler) Poll(ctx context.Context) error {
	r.poll.Lock()
	defer r.poll.Unlock()
	now := time.Now()
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()

	r.mu.Lock()
	r.stats.Polls++
	r.stats.LastPoll = now
	r.mu.Unlock()

	local := r.local()
	var first error
	for i := range r.groups {
		g := &r.groups[i]
		gs, err := r.compare(ctx, g, now, local)
		if err != nil {
			err = fmt.Errorf("reconcile: group %q: %w; nothing was compared or corrected, and calls go on as before", g.Name, err)
			r.emit(observe.Event{Kind: observe.EventReconcileFailed, Scope: g.Name, Err: err})
			if first == nil {
				first = err
			}
			continue
		}
		r.record(gs)
	}
	r.mu.Lock()
	r.stats.LastError = first
	if first != nil {
		r.stats.Failures++
	}
	r.mu.Unlock()
	return first
}

// localCharges are what the Transports of Config counted of each
// workload's budget in its current period, summed.
type localCharges struct {
	spent    map[string]float64 // WorkloadStats.Spent
	reserved map[string]float64 // WorkloadStats.Reserved: calls in flight
}

// local returns what the Transports counted.
func (r *Reconciler) local() localCharges {
	l := localCharges{spent: map[string]float64{}, reserved: map[string]float64{}}
	for _, t := range r.cfg.Transports {
		for _, ws := range t.Stats().Workloads {
			l.spent[ws.Name] += ws.Spent
			l.reserved[ws.Name] += ws.Reserved
		}
	}
	return l
}

// charged returns what was charged workload in its current period, and
// whether it is the fleet's: read from the store's ledger, less the
// reservations of the Transports' calls in flight, which their own count
// leaves out until they settle (the other processes' calls in flight stay
// in it, at their reservation); or, from a store that cannot read levels,
// the Transports' own count. A store that does not answer is an error:
// this process's count would read the rest of the fleet as drift.
func (r *Reconciler) charged(ctx context.Context, workload string, local localCharges) (float64, bool, error) {
	fleet, err := r.cfg.Transports[0].FleetSpent(ctx, workload)
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		return local.spent[workload], false, nil
	case err != nil:
		return 0, false, fmt.Errorf("reading what the fleet charged: %w", err)
	}
	return max(0, fleet-local.reserved[workload]), true, nil
}

// compare reads g's report and compares it with what was charged.
func (r *Reconciler) compare(ctx context.Context, g *group, now time.Time, local localCharges) (GroupStats, error) {
	start, end := g.period.Bounds(now)
	billed, err := r.cfg.Source.Billed(ctx, Query{Start: start.UTC(), End: end.UTC(), Now: now.UTC(), By: g.By, Unit: g.unit})
	if err != nil {
		return GroupStats{}, err
	}
	gs := GroupStats{Name: g.Name, By: g.By, ID: g.ID, Unit: g.unit, PeriodStart: start, PeriodEnd: end, Billed: billed[g.ID],
		Corrected: r.correctedSoFar(g.Name, start), Fleet: true}
	for _, name := range g.Workloads {
		c, fleet, err := r.charged(ctx, name, local)
		if err != nil {
			return GroupStats{}, err
		}
		gs.Fleet = gs.Fleet && fleet
		gs.Charged += c
		gs.Workloads = append(gs.Workloads, WorkloadShare{Name: name, Charged: c})
	}
	gs.Drift = gs.Billed - gs.Charged
	for i := range gs.Workloads {
		w := &gs.Workloads[i]
		if gs.Charged > 0 {
			w.Share = gs.Drift * w.Charged / gs.Charged
		} else {
			w.Share = gs.Drift / float64(len(gs.Workloads))
		}
	}
	if math.Abs(gs.Drift) <= r.cfg.Tolerance*max(math.Abs(gs.Billed), math.Abs(gs.Charged)) {
		return gs, nil
	}
	gs.Reported = true
	percent := 100
	if gs.Charged != 0 {
		percent = int(math.Round(gs.Drift / gs.Charged * 100))
	}
	what := fmt.Sprintf("the provider billed %s %q %s, pacer charged its workloads %s (%+d %%)", g.By, g.ID, amount(gs.Billed, g.unit), amount(gs.Charged, g.unit), percent)
	if !gs.Fleet {
		what += " in this process: the store cannot read the fleet's ledger"
	}
	switch {
	case r.cfg.Correct && !g.period.Start(time.Now()).Equal(start):
		// The report was read as the period ended: its drift is the last
		// period's, and the ledger now counts the next.
		what += "; not corrected: the period ended while the report was read"
	case r.cfg.Correct:
		corrected, err := r.correct(&gs)
		if err != nil {
			what += "; the correction failed: " + err.Error()
		} else {
			what += "; corrected, in proportion to each workload's charges: " + corrected
		}
	}
	r.emit(observe.Event{Kind: observe.EventBudgetDrift, Scope: g.Name, Amount: gs.Drift, Percent: percent,
		Err: fmt.Errorf("reconcile: group %q, from %s: %s", g.Name, start.UTC().Format(time.RFC3339), what)})
	return gs, nil
}

// correct charges each workload of gs its share of the drift, and says what.
func (r *Reconciler) correct(gs *GroupStats) (string, error) {
	var parts []string
	for _, w := range gs.Workloads {
		if err := r.cfg.Transports[0].CorrectBudget(w.Name, w.Share); err != nil {
			return "", err
		}
		parts = append(parts, fmt.Sprintf("%s %s", w.Name, signed(w.Share, gs.Unit)))
	}
	gs.Corrected += gs.Drift
	return strings.Join(parts, ", "), nil
}

// correctedSoFar is what corrections charged group name's budgets in the
// period that starts at start.
func (r *Reconciler) correctedSoFar(name string, start time.Time) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, old := range r.stats.Groups {
		if old.Name == name && old.PeriodStart.Equal(start) {
			return old.Corrected
		}
	}
	return 0
}

// record keeps gs in Stats.
func (r *Reconciler) record(gs GroupStats) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.stats.Groups {
		if r.stats.Groups[i].Name == gs.Name {
			r.stats.Groups[i] = gs
			return
		}
	}
	r.stats.Groups = append(r.stats.Groups, gs)
}

// Stats returns what the Reconciler found. It never waits for a poll.
func (r *Reconciler) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	s.Groups = slices.Clone(s.Groups)
	for i := range s.Groups {
		s.Groups[i].Workloads = slices.Clone(s.Groups[i].Workloads)
	}
	return s
}

func (r *Reconciler) emit(e observe.Event) {
	for _, o := range r.cfg.Observers {
		o.Observe(e)
	}
}

// amount says n in unit: "$0.50", "1200 tokens".
func amount(n float64, unit string) string {
	if unit == UnitUSD {
		return fmt.Sprintf("$%.6f", n)
	}
	return fmt.Sprintf("%.0f tokens", n)
}

// signed is amount with its sign.
func signed(n float64, unit string) string {
	if n < 0 {
		return "-" + amount(-n, unit)
	}
	return "+" + amount(n, unit)
}
