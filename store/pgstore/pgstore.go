// Package pgstore keeps pacer's token buckets in PostgreSQL, so that every
// instance of a service paces itself against one shared bucket.
//
//	pool, _ := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
//	s := pgstore.New(pool)
//	if err := s.Migrate(ctx); err != nil { ... }
//	t := pacer.New(nil, pacer.WithLimit(pacer.PerSecond(50)), pacer.WithStore(s, store.Policy{}))
//
// # The table
//
// Buckets live in a narrow table of their own, created by Migrate:
//
//	scope text, key text, tokens float8, refilled_at timestamptz, expires_at timestamptz,
//	taken float8
//	PRIMARY KEY (scope, key), fillfactor 80
//
// Only the bucket's own state is stored: its shape (rate, burst, window)
// travels with every demand. Nothing that changes is indexed and every page
// keeps room to spare, so an update is HOT: a new row version on the same
// page, no index write. A row is a fraction of a page, so a hot bucket costs
// little vacuum.
//
// taken is the units taken from the bucket, ever, by a take or a positive
// adjustment, which a granted take returns (store.Decision.Taken): a
// refund, a clamp and a negative adjustment leave it, and a row Sweep
// deletes starts again at zero. A table created by an earlier version
// gains the column when Migrate runs again (a constant default: PostgreSQL
// 11 and later add it without rewriting the table, under a brief exclusive
// lock). Until then the store takes as before and reports no total, saying
// so once with slog, and a fleet behind it paces as it did before the
// total.
//
// # Names
//
// A scope or key is stored as it is when PostgreSQL's text type can hold it
// and it is at most 256 bytes. Any other (a NUL byte, invalid UTF-8, a long
// header value) is stored as "sha256:" and the hex of its SHA-256, as is a
// name that itself starts with "sha256:", so that no two names ever share a
// row. A request may carry any bytes in its key: none of them can make a
// statement fail, let alone take the store away from other requests.
//
// # Errors
//
// An error PostgreSQL raises about a statement's values (SQLSTATE class 22,
// data exception, or 54, program limit exceeded) is the calling request's:
// it matches store.ErrInvalidDemand, and a Transport does not count it as an
// outage. A number that is not finite is refused the same way before it is
// sent.
//
// # One statement per decision
//
// A take is one statement of the shape
//
//	INSERT INTO buckets AS b ... VALUES (scope, key, burst - cost, now)
//	ON CONFLICT (scope, key) DO UPDATE
//	   SET tokens = level(b.tokens, b.refilled_at) - cost, ...
//	 WHERE level(b.tokens, b.refilled_at) >= cost + floor
//	RETURNING ...
//
// A scope seen the first time is inserted full, less the cost. Otherwise the
// new level is a function of the row's own tokens column, in its own SET
// expression. That is what makes it safe under concurrency: the row is
// locked before the SET and WHERE are evaluated, and if another transaction
// changed it in the meantime, PostgreSQL evaluates them again on the newest
// version (READ COMMITTED's EvalPlanQual recheck). Two takers of the last
// token are serialized; the second sees 0.
//
// The tempting form
//
//	WITH r AS (SELECT tokens FROM buckets WHERE scope = $1)
//	UPDATE buckets SET tokens = r.tokens - 1 FROM r WHERE scope = $1 AND r.tokens >= 1
//
// loses writes. The CTE reads the row from the statement's snapshot, without
// a lock. Two transactions both read 10; the first writes 9 and commits; the
// second, which waited on the row lock, rechecks its WHERE against the new
// row, but r is not the row: it is a value computed from the snapshot, and
// it is not recomputed. So the second writes 10 − 1 = 9 too, and two grants
// cost one token. TestCTELosesUpdates runs both forms side by side with 32
// writers and counts what each lost.
//
// When a take is denied, the statement also returns the bucket as its
// snapshot saw it, to tell how long to wait. That read never feeds a write:
// at worst the wait is a little off and the caller asks again.
//
// # Several buckets at once
//
// A request charged to several scopes must get all or none. Its demands are
// taken in one transaction, each by the statement above, in (scope, key)
// order so that two such transactions never deadlock; the statements are
// pipelined with BEGIN in one round trip. If any is denied, the transaction
// rolls back: the rows stayed locked until then, so nobody saw the tokens
// that were briefly taken. The single-scope case, the common one, is a
// single statement outside any explicit transaction.
//
// # Time
//
// The clock is the database's: now(), the start of the statement's
// transaction, so instances with skewed clocks agree. The now passed to the
// Store methods is ignored unless the store is built WithCallerClock.
// Stamps never move backwards: a transaction that started before the last
// write (it waited on the lock) refills nothing.
//
// # Limits for the fleet
//
// The store is a store.LimitStore: a SetLimit on a Transport built
// store.Policy.LimitSync is published in "<table>_limits", one row a scope, under a
// version from the sequence "<table>_limits_version", and every instance
// reads the table at its sync interval. A cut a refusal made is published
// in the scope's row too (the pace and pace_version columns), under a
// version from the same sequence. Migrate creates both; a table migrated
// by an earlier version gains what it lacks when Migrate runs again; until
// it does, its limits are still read and synced, but a cut is not
// published (publishing says to run Migrate), so each instance learns a
// refusal on its own.
//
// # Idle buckets
//
// Each row carries expires_at, when it would be full again. A full bucket is
// the same as no bucket, so Sweep deletes the rows past it; call it now and
// then (a minute is plenty). It scans the table: there is no index on
// expires_at, on purpose, so that updates stay HOT.
package pgstore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pacer-go/pacer/store"
)

// DefaultTable is the table's name unless set WithTable.
const DefaultTable = "pacer_buckets"

// Store is a store.Store in PostgreSQL. It is safe for concurrent use.
type Store struct {
	pool        *pgxpool.Pool
	table       string
	callerClock bool
	err         error // a configuration error, returned by every call

	takeSQL, refundSQL, adjustSQL, clampSQL, sweepSQL, levelSQL string
	// The take and the adjustment for a table without the taken column,
	// which an earlier version created: used once one is found.
	takeUncountedSQL, adjustUncountedSQL string
	uncounted                            atomic.Bool
	warnUncounted                        sync.Once
}

var _ store.ContextStore = (*Store)(nil)

// HonoursContext implements store.ContextStore: pgx gives up when a call's
// context ends, so the Transport calls the store on the request's own
// goroutine.
func (s *Store) HonoursContext() bool { return true }

// An Option configures a Store.
type Option func(*Store)

// WithTable sets the table's name: an identifier, optionally qualified by a
// schema ("pacer.buckets"), of lower-case letters, digits and underscores.
// The default is DefaultTable.
func WithTable(name string) Option {
	return func(s *Store) { s.table = name }
}

// WithCallerClock makes the store use the now passed to each call instead of
// the database's clock. It is for tests that run in virtual time, and for
// fleets whose clocks are synchronized well enough to trust; instances whose
// clocks disagree would see buckets refill at different times.
func WithCallerClock() Option {
	return func(s *Store) { s.callerClock = true }
}

var identifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}(\.[a-z_][a-z0-9_]{0,62})?$`)

// New returns a Store that keeps its buckets in pool's database. Call
// Migrate once to create its table. An invalid table name is reported by
// every call.
func New(pool *pgxpool.Pool, opts ...Option) *Store {
	s := &Store{pool: pool, table: DefaultTable}
	for _, o := range opts {
		o(s)
	}
	if !identifier.MatchString(s.table) {
		s.err = fmt.Errorf("pgstore: table name %q is not a plain identifier (lower-case letters, digits, _; optionally schema.table)", s.table)
		return s
	}
	s.takeSQL = expand(takeSQL, s.table)
	// Refund and clamp have no floor: their now is $7.
	s.refundSQL = strings.ReplaceAll(expand(refundSQL, s.table), "$8", "$7")
	s.adjustSQL = strings.ReplaceAll(expand(adjustSQL, s.table), "$8", "$7")
	s.clampSQL = strings.ReplaceAll(expand(clampSQL, s.table), "$8", "$7")
	s.sweepSQL = expand(sweepSQL, s.table)
	// A level has neither cost nor floor: its now is $6.
	s.levelSQL = strings.ReplaceAll(expand(levelSQL, s.table), "$8", "$6")
	s.takeUncountedSQL, s.adjustUncountedSQL = uncounted(s.takeSQL), uncounted(s.adjustSQL)
	return s
}

// Table returns the name of the store's table.
func (s *Store) Table() string { return s.table }

// Migrate creates the store's tables if they do not exist: the buckets'
// and the published limits' (see Limits for the fleet). It is safe to run
// on a table an earlier version created; it adds what is missing.
func (s *Store) Migrate(ctx context.Context) error {
	if s.err != nil {
		return s.err
	}
	if _, err := s.pool.Exec(ctx, expand(migrateSQL, s.table)); err != nil {
		return fmt.Errorf("pgstore: creating table %s: %w", s.table, err)
	}
	s.uncounted.Store(false)
	if _, err := s.pool.Exec(ctx, expand(migrateLimitsSQL, s.table)); err != nil {
		return fmt.Errorf("pgstore: creating table %s_limits: %w", s.table, err)
	}
	return nil
}

const migrateSQL = `CREATE TABLE IF NOT EXISTS @table (
	scope       text             NOT NULL,
	key         text             NOT NULL,
	tokens      double precision NOT NULL,
	refilled_at timestamptz      NOT NULL,
	expires_at  timestamptz      NOT NULL,
	PRIMARY KEY (scope, key)
) WITH (fillfactor = 80);
ALTER TABLE @table ADD COLUMN IF NOT EXISTS taken double precision NOT NULL DEFAULT 0`

// The statements' parameters: $1 scope, $2 key, $3 rate, $4 burst,
// $5 window in microseconds, $6 cost (for a clamp: the level), $7 floor,
// $8 the caller's now, or NULL for the database's. Refund and clamp have no
// floor, and their now is $7.
//
// In ON CONFLICT DO UPDATE, excluded.refilled_at is the statement's now.
// @level is the bucket brought up to now (bucketLevel.advance in pacer's
// store.go); @stamp its new stamp.
var macros = strings.NewReplacer(
	"@now", "coalesce($8::timestamptz, now())",
	"@expired", "(excluded.refilled_at - b.refilled_at >= $5::bigint * interval '1 microsecond')",
	"@level", `least($4::float8, CASE WHEN $5::bigint > 0
		THEN CASE WHEN @expired THEN $4::float8 ELSE b.tokens END
		ELSE b.tokens + greatest(0, extract(epoch FROM excluded.refilled_at - b.refilled_at)::float8) * $3::float8 END)`,
	"@stamp", `CASE WHEN $5::bigint > 0
		THEN CASE WHEN @expired THEN excluded.refilled_at ELSE b.refilled_at END
		ELSE greatest(b.refilled_at, excluded.refilled_at) END`,
)

// expiry(tokens, stamp, now) is when a bucket at tokens would be full again,
// at most maxExpiry away: a bucket that refills slower than that is
// forgotten then, as the Redis store's TTL saturates. The comparison comes
// before the division so that no rate makes it overflow.
func expiry(tokens, stamp, now string) string {
	return fmt.Sprintf(`CASE WHEN $5::bigint > 0 THEN %[2]s + $5::bigint * interval '1 microsecond'
		WHEN $3::float8 > 0 AND greatest(0, $4::float8 - (%[1]s)) < $3::float8 * %[4]d
		THEN %[3]s + greatest(0, $4::float8 - (%[1]s)) / $3::float8 * interval '1 second'
		WHEN $3::float8 > 0 THEN %[3]s + %[4]d * interval '1 second'
		ELSE %[3]s + interval '1 day' END`, tokens, stamp, now, maxExpiry)
}

// maxExpiry is the furthest a row's expires_at is set, in seconds: a
// hundred years.
const maxExpiry = 3155760000

// expand replaces the macros, three rounds deep, and the table's name.
func expand(sql, table string) string {
	for range 3 {
		sql = macros.Replace(sql)
	}
	return strings.ReplaceAll(sql, "@table", table)
}

var takeSQL = `WITH up AS (
	INSERT INTO @table AS b (scope, key, tokens, refilled_at, expires_at, taken)
	SELECT $1, $2, $4::float8 - $6::float8, @now, ` + expiry("$4::float8 - $6::float8", "@now", "@now") + `, $6::float8
	WHERE $6::float8 + $7::float8 <= $4::float8
	ON CONFLICT (scope, key) DO UPDATE
	   SET tokens = @level - $6::float8,
	       refilled_at = @stamp,
	       expires_at = ` + expiry("@level - $6::float8", "@stamp", "excluded.refilled_at") + `,
	       taken = b.taken + $6::float8
	 WHERE @level >= $6::float8 + $7::float8
	RETURNING taken
)
SELECT EXISTS (SELECT FROM up), cur.tokens, cur.refilled_at, @now, coalesce((SELECT taken FROM up), 0)
FROM (SELECT) AS one LEFT JOIN @table AS cur ON cur.scope = $1 AND cur.key = $2`

// A refund is a plain UPDATE: a bucket not stored is full, so it gets
// nothing. The subquery named excluded gives the macros their now.
var refundSQL = `UPDATE @table AS b
	   SET tokens = least($4::float8, @level + $6::float8),
	       refilled_at = @stamp,
	       expires_at = ` + expiry("least($4::float8, @level + $6::float8)", "@stamp", "excluded.refilled_at") + `
	  FROM (SELECT @now AS refilled_at) AS excluded
	 WHERE b.scope = $1 AND b.key = $2`

// An adjustment settles a call (store.Adjuster): $6 is taken whatever the
// bucket holds, so it may fall below zero, or given back when negative, up
// to the burst. A bucket not stored is full: it is created, since a charge
// must be owed even by a bucket nobody has taken from since it refilled.
var adjustSQL = `INSERT INTO @table AS b (scope, key, tokens, refilled_at, expires_at, taken)
	VALUES ($1, $2, least($4::float8, $4::float8 - $6::float8), @now, ` + expiry("least($4::float8, $4::float8 - $6::float8)", "@now", "@now") + `, greatest(0, $6::float8))
	ON CONFLICT (scope, key) DO UPDATE
	   SET tokens = least($4::float8, @level - $6::float8),
	       refilled_at = @stamp,
	       expires_at = ` + expiry("least($4::float8, @level - $6::float8)", "@stamp", "excluded.refilled_at") + `,
	       taken = b.taken + greatest(0, $6::float8)`

// uncounted returns a take or an adjustment that leaves the taken column
// alone, for a table created before it (and returns no total): the
// statement an earlier version ran.
func uncounted(sql string) string {
	return strings.NewReplacer(
		", taken)", ")",
		", $6::float8\n", "\n",
		", greatest(0, $6::float8))", ")",
		",\n\t       taken = b.taken + $6::float8", "",
		",\n\t       taken = b.taken + greatest(0, $6::float8)", "",
		"RETURNING taken", "RETURNING 1",
		", coalesce((SELECT taken FROM up), 0)", ", 0::float8",
	).Replace(sql)
}

var clampSQL = `INSERT INTO @table AS b (scope, key, tokens, refilled_at, expires_at)
	VALUES ($1, $2, least($4::float8, $6::float8), @now, ` + expiry("least($4::float8, $6::float8)", "@now", "@now") + `)
	ON CONFLICT (scope, key) DO UPDATE
	   SET tokens = least(@level, $6::float8),
	       refilled_at = @stamp,
	       expires_at = ` + expiry("least(@level, $6::float8)", "@stamp", "excluded.refilled_at")

// A level reads the bucket brought up to now, and writes nothing: a
// bucket not stored is full. The subquery named excluded gives the macros
// their now.
var levelSQL = `SELECT coalesce((SELECT @level
	  FROM @table AS b, (SELECT @now AS refilled_at) AS excluded
	 WHERE b.scope = $1 AND b.key = $2), $4::float8)`

var sweepSQL = `DELETE FROM @table WHERE expires_at <= coalesce($1::timestamptz, now())`

// args returns the take statement's parameters for d.
func (s *Store) args(d *store.Demand, now time.Time) []any {
	return []any{stored(d.Scope), stored(d.Key), sqlRate(d.Rate), d.Burst, d.Window.Microseconds(), d.Cost, d.Floor, s.now(now)}
}

// argsNoFloor returns the parameters of a refund or clamp: d's, with amount
// in place of its cost.
func (s *Store) argsNoFloor(d *store.Demand, amount float64, now time.Time) []any {
	return []any{stored(d.Scope), stored(d.Key), sqlRate(d.Rate), d.Burst, d.Window.Microseconds(), amount, s.now(now)}
}

// Names longer than maxPlainName bytes are stored hashed, as are those that
// text cannot hold; digestPrefix starts every hashed one.
const (
	maxPlainName = 256
	digestPrefix = "sha256:"
)

// stored returns how a scope or key is kept in its column (see Names in the
// package doc): the name itself, or its digest. It is one-to-one: a name
// kept as it is never starts with digestPrefix.
func stored(name string) string {
	if len(name) <= maxPlainName && utf8.ValidString(name) && strings.IndexByte(name, 0) < 0 &&
		!strings.HasPrefix(name, digestPrefix) {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return digestPrefix + hex.EncodeToString(sum[:])
}

// minRate is the smallest positive rate the statements compute with: below
// it, float8 arithmetic in PostgreSQL underflows, which is an error there.
// A bucket refilling slower than that (a unit every 10^292 years) refills
// nothing in any span of time, and every wait on it is store.LongestWait.
const minRate = 1e-300

func sqlRate(rate float64) float64 {
	if rate > 0 && rate < minRate {
		return minRate
	}
	return rate
}

// validate refuses a demand PostgreSQL cannot compute with (see
// store.Demand.Validate).
func validate(demands ...store.Demand) error {
	for i := range demands {
		if err := demands[i].Validate(); err != nil {
			return err
		}
	}
	return nil
}

// failed wraps the error of a statement: one PostgreSQL raised about the
// statement's values is the caller's (see Errors in the package doc).
func failed(op string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "54")) {
		return fmt.Errorf("pgstore: %s: %w: %w", op, store.ErrInvalidDemand, err)
	}
	return fmt.Errorf("pgstore: %s: %w", op, err)
}

// now returns the statements' now parameter: NULL for the database's clock.
func (s *Store) now(now time.Time) any {
	if s.callerClock {
		return now
	}
	return nil
}

// Take implements store.Store.
func (s *Store) Take(ctx context.Context, now time.Time, demands []store.Demand) (store.Decision, error) {
	if s.err != nil {
		return store.Decision{}, s.err
	}
	if err := validate(demands...); err != nil {
		return store.Decision{}, fmt.Errorf("pgstore: take: %w", err)
	}
	// Demands that cost nothing take nothing; one that no wait can grant
	// blocks the take without asking the database.
	var stack [4]int
	live := stack[:0]
	for i := range demands {
		d := &demands[i]
		if d.Cost <= 0 {
			continue
		}
		if d.Cost+d.Floor > d.Burst {
			return store.Decision{Blocked: i, Wait: store.Never}, nil
		}
		live = append(live, i)
	}
	if len(live) == 0 {
		return store.Decision{OK: true}, nil
	}
	// A denial whose snapshot shows enough tokens raced with a write: the
	// bucket changed after the statement began. Ask again.
	for range 3 {
		var dec store.Decision
		var err error
		if len(live) == 1 {
			dec, err = s.takeOne(ctx, now, demands, live[0])
		} else {
			dec, err = s.takeMany(ctx, now, demands, live)
		}
		if err != nil && s.countsNoMore(err) {
			continue // the same take, on a table without the column
		}
		if err != nil || dec.OK || dec.Wait > 0 {
			if live[0] != 0 {
				dec.Taken = 0 // the total is the first demand's, which cost nothing
			}
			return dec, err
		}
	}
	return store.Decision{Blocked: live[0], Wait: time.Millisecond}, nil
}

// countsNoMore reports whether err says the table has no taken column (a
// table an earlier version created, not migrated since), and if so turns
// the store to the statements that leave it alone, saying so once. A
// statement that failed so changed nothing.
func (s *Store) countsNoMore(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42703" || !strings.Contains(pgErr.Message, "taken") {
		return false
	}
	if s.uncounted.CompareAndSwap(false, true) {
		s.warnUncounted.Do(func() {
			slog.Warn("pgstore: the table has no taken column, so takes report no running total and a fleet "+
				"pacing by a provider's remaining count cannot tell its own calls from a neighbour's; run Migrate to add it",
				"table", s.table)
		})
	}
	return true
}

// takeStatement and adjustStatement are the take and the adjustment for
// the table as it is (see countsNoMore).
func (s *Store) takeStatement() string {
	if s.uncounted.Load() {
		return s.takeUncountedSQL
	}
	return s.takeSQL
}

func (s *Store) adjustStatement() string {
	if s.uncounted.Load() {
		return s.adjustUncountedSQL
	}
	return s.adjustSQL
}

// takeResult is what the take statement returns about one demand.
type takeResult struct {
	granted bool
	tokens  *float64   // the bucket in the statement's snapshot; nil if not stored
	stamp   *time.Time // its refilled_at
	now     time.Time  // the statement's now
	// taken is the bucket's total after a granted take; 0 without one. A
	// float8, not a pointer to one, which scanning would allocate.
	taken float64
}

func (r *takeResult) scan(row pgx.Row) error {
	return row.Scan(&r.granted, &r.tokens, &r.stamp, &r.now, &r.taken)
}

func (s *Store) takeOne(ctx context.Context, now time.Time, demands []store.Demand, i int) (store.Decision, error) {
	var r takeResult
	d := &demands[i]
	if err := r.scan(s.pool.QueryRow(ctx, s.takeStatement(), s.args(d, now)...)); err != nil {
		return store.Decision{}, failed("take", err)
	}
	if r.granted {
		return store.Decision{OK: true, Taken: r.taken}, nil
	}
	return store.Decision{Blocked: i, Wait: r.wait(d)}, nil
}

func (s *Store) takeMany(ctx context.Context, now time.Time, demands []store.Demand, live []int) (dec store.Decision, err error) {
	// Lock in (scope, key) order, so that two takes never wait on each other
	// in a cycle.
	order := slices.Clone(live)
	slices.SortFunc(order, func(a, b int) int {
		if c := strings.Compare(demands[a].Scope, demands[b].Scope); c != 0 {
			return c
		}
		return strings.Compare(demands[a].Key, demands[b].Key)
	})
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return store.Decision{}, failed("take", err)
	}
	defer conn.Release()
	batch := &pgx.Batch{}
	batch.Queue("BEGIN")
	for _, i := range order {
		batch.Queue(s.takeStatement(), s.args(&demands[i], now)...)
	}
	results := make([]takeResult, len(demands))
	br := conn.SendBatch(ctx, batch)
	_, err = br.Exec()
	for _, i := range order {
		if err == nil {
			err = results[i].scan(br.QueryRow())
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	dec = store.Decision{OK: true, Taken: results[live[0]].taken}
	if err == nil {
		for _, i := range live {
			if !results[i].granted {
				if w := results[i].wait(&demands[i]); dec.OK || w > dec.Wait {
					dec = store.Decision{Blocked: i, Wait: w}
				}
			}
		}
	}
	end := "COMMIT"
	if err != nil || !dec.OK {
		end = "ROLLBACK"
	}
	// The transaction ends on the caller's context, like the rest of the
	// call: a connection that stalls at COMMIT must not hold the caller
	// past its deadline. Once ctx has ended, the transaction is not ended
	// at all: the connection is closed, and PostgreSQL rolls back the
	// transaction of a connection that goes away. A COMMIT cut short may
	// or may not have taken the tokens; the caller hears an error, and the
	// bucket is at worst a take short, the safe side.
	eerr := ctx.Err()
	if eerr == nil {
		_, eerr = conn.Exec(ctx, end)
	}
	if eerr != nil {
		// A connection whose transaction we did not end must not be
		// reused. Close is bounded by ctx too: once ctx has ended it waits
		// for nothing.
		conn.Conn().Close(ctx)
	}
	if err = cmp.Or(err, eerr); err != nil {
		return store.Decision{}, failed("take", err)
	}
	return dec, nil
}

// wait is how long d waits for a bucket in r's state. It mirrors pacer's
// bucketLevel (store.go), the arithmetic every store agrees on.
func (r *takeResult) wait(d *store.Demand) time.Duration {
	if r.tokens == nil || r.stamp == nil {
		return 0 // not stored: full, so the denial raced a write
	}
	tokens, stamp, now := *r.tokens, *r.stamp, r.now
	if d.Window > 0 {
		if now.Sub(stamp) >= d.Window {
			tokens, stamp = d.Burst, now
		}
	} else if elapsed := now.Sub(stamp); elapsed > 0 {
		tokens += elapsed.Seconds() * d.Rate
	}
	tokens = math.Min(tokens, d.Burst)
	need := d.Cost + d.Floor
	switch {
	case tokens >= need:
		return 0
	case need > d.Burst:
		return store.Never
	case d.Window > 0:
		return min(d.Window-now.Sub(stamp), store.LongestWait)
	case d.Rate <= 0:
		return store.Never
	}
	// A rate too small to divide by gives +Inf, which saturates too.
	ns := math.Ceil((need - tokens) / d.Rate * float64(time.Second))
	if ns >= float64(store.LongestWait) {
		return store.LongestWait
	}
	return time.Duration(ns)
}

// Refund implements store.Store.
func (s *Store) Refund(ctx context.Context, now time.Time, demands []store.Demand) error {
	if s.err != nil {
		return s.err
	}
	if err := validate(demands...); err != nil {
		return fmt.Errorf("pgstore: refund: %w", err)
	}
	batch := &pgx.Batch{}
	for i := range demands {
		if d := &demands[i]; d.Cost > 0 {
			batch.Queue(s.refundSQL, s.argsNoFloor(d, d.Cost, now)...)
		}
	}
	if batch.Len() == 0 {
		return nil
	}
	// Several refunds go in one implicit transaction: one round trip.
	if err := s.pool.SendBatch(ctx, batch).Close(); err != nil {
		return failed("refund", err)
	}
	return nil
}

// Adjust implements store.Adjuster, in one round trip.
func (s *Store) Adjust(ctx context.Context, now time.Time, demands []store.Demand) error {
	if s.err != nil {
		return s.err
	}
	if err := validate(demands...); err != nil {
		return fmt.Errorf("pgstore: adjust: %w", err)
	}
	for attempt := 0; ; attempt++ {
		batch := &pgx.Batch{}
		for i := range demands {
			if d := &demands[i]; d.Cost != 0 {
				batch.Queue(s.adjustStatement(), s.argsNoFloor(d, d.Cost, now)...)
			}
		}
		if batch.Len() == 0 {
			return nil
		}
		err := s.pool.SendBatch(ctx, batch).Close()
		if err != nil && attempt == 0 && s.countsNoMore(err) {
			continue // nothing was applied: the batch is one transaction
		}
		if err != nil {
			return failed("adjust", err)
		}
		return nil
	}
}

// Clamp implements store.Store.
func (s *Store) Clamp(ctx context.Context, now time.Time, d store.Demand, tokens float64) error {
	if s.err != nil {
		return s.err
	}
	if err := validate(d); err != nil {
		return fmt.Errorf("pgstore: clamp: %w", err)
	}
	if math.IsNaN(tokens) {
		return fmt.Errorf("pgstore: clamp: %w: the level is NaN", store.ErrInvalidDemand)
	}
	if _, err := s.pool.Exec(ctx, s.clampSQL, s.argsNoFloor(&d, tokens, now)...); err != nil {
		return failed("clamp", err)
	}
	return nil
}

// Level implements store.LevelReader, in one statement that writes nothing.
func (s *Store) Level(ctx context.Context, now time.Time, d store.Demand) (float64, error) {
	if s.err != nil {
		return 0, s.err
	}
	if err := validate(d); err != nil {
		return 0, fmt.Errorf("pgstore: level: %w", err)
	}
	var l float64
	err := s.pool.QueryRow(ctx, s.levelSQL, stored(d.Scope), stored(d.Key), sqlRate(d.Rate), d.Burst, d.Window.Microseconds(), s.now(now)).Scan(&l)
	if err != nil {
		return 0, failed("level", err)
	}
	return l, nil
}

// Sweep deletes the buckets that are full again by now (the database's
// clock, unless the store uses the caller's), and returns how many. Their
// absence changes nothing: a bucket not stored is full.
func (s *Store) Sweep(ctx context.Context, now time.Time) (int64, error) {
	if s.err != nil {
		return 0, s.err
	}
	tag, err := s.pool.Exec(ctx, s.sweepSQL, s.now(now))
	if err != nil {
		return 0, fmt.Errorf("pgstore: sweep: %w", err)
	}
	return tag.RowsAffected(), nil
}
