package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pacer-go/pacer/store"
)

var _ store.LimitStore = (*Store)(nil)

// The published limits live beside the buckets, in "<table>_limits", one
// row a scope, created by Migrate. Each publication takes its version from
// the sequence "<table>_limits_version": nextval never hands out a number
// twice, even to transactions that roll back, so a version is larger than
// any the store returned before without a lock on the table. A scope's
// pace record (PublishPace) lives in its row too, under a version from the
// same sequence; a row with a pace record and no limit has version 0. A
// table created before pace records gains their columns when Migrate runs
// again.
const migrateLimitsSQL = `CREATE SEQUENCE IF NOT EXISTS @table_limits_version;
CREATE TABLE IF NOT EXISTS @table_limits (
	scope   text   PRIMARY KEY,
	count   bigint NOT NULL,
	per_ns  bigint NOT NULL,
	burst   bigint NOT NULL,
	version bigint NOT NULL
);
ALTER TABLE @table_limits
	ADD COLUMN IF NOT EXISTS pace         text,
	ADD COLUMN IF NOT EXISTS pace_version bigint NOT NULL DEFAULT 0`

const publishSQL = `INSERT INTO @table_limits (scope, count, per_ns, burst, version)
VALUES ($1, $2, $3, $4, nextval('@table_limits_version'))
ON CONFLICT (scope) DO UPDATE
   SET count = excluded.count, per_ns = excluded.per_ns, burst = excluded.burst, version = excluded.version
RETURNING version`

const publishPaceSQL = `INSERT INTO @table_limits (scope, count, per_ns, burst, version, pace, pace_version)
VALUES ($1, 0, 0, 0, 0, $2, nextval('@table_limits_version'))
ON CONFLICT (scope) DO UPDATE
   SET pace = excluded.pace, pace_version = excluded.pace_version
RETURNING pace_version`

const publishedSQL = `SELECT scope, count, per_ns, burst, version, coalesce(pace, ''), pace_version FROM @table_limits`

// publishedUnpacedSQL reads a limits table migrated before pace records:
// its limits, and no pace record.
const publishedUnpacedSQL = `SELECT scope, count, per_ns, burst, version, '', 0::bigint FROM @table_limits`

// PublishLimit implements store.LimitStore: l becomes scope's row in the
// limits table, under a new version. A store migrated before it had a
// limits table says to run Migrate again.
func (s *Store) PublishLimit(ctx context.Context, scope string, l store.Limit) (int64, error) {
	if s.err != nil {
		return 0, s.err
	}
	var version int64
	err := s.pool.QueryRow(ctx, expand(publishSQL, s.table), scope, int64(l.Count), int64(l.Per), int64(l.Burst)).Scan(&version)
	if err != nil {
		return 0, fmt.Errorf("pgstore: publishing a limit: %w", s.missingLimits(err))
	}
	return version, nil
}

// PublishPace implements store.LimitStore: pace becomes the pace record
// of scope's row in the limits table, under a new version; the row's
// limit, if any, stays. A record that is not printable ASCII, or too long,
// is refused (store.CheckPaceRecord).
func (s *Store) PublishPace(ctx context.Context, scope string, pace string) (int64, error) {
	if err := store.CheckPaceRecord(pace); err != nil {
		return 0, fmt.Errorf("pgstore: publishing a pace record: %w", err)
	}
	if s.err != nil {
		return 0, s.err
	}
	var version int64
	err := s.pool.QueryRow(ctx, expand(publishPaceSQL, s.table), scope, pace).Scan(&version)
	if err != nil {
		return 0, fmt.Errorf("pgstore: publishing a pace record: %w", s.missingLimits(err))
	}
	return version, nil
}

// PublishedLimits implements store.LimitStore. A limits table migrated
// before pace records still gives its limits, with no pace record (a
// fleet's cut then stays each instance's; PublishPace says to run
// Migrate).
func (s *Store) PublishedLimits(ctx context.Context) (map[string]store.PublishedLimit, error) {
	if s.err != nil {
		return nil, s.err
	}
	out, err := s.published(ctx, publishedSQL)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42703" { // undefined_column: not migrated since
		out, err = s.published(ctx, publishedUnpacedSQL)
	}
	if err != nil {
		return nil, fmt.Errorf("pgstore: reading the published limits: %w", s.missingLimits(err))
	}
	return out, nil
}

// published reads the limits table with query.
func (s *Store) published(ctx context.Context, query string) (map[string]store.PublishedLimit, error) {
	rows, err := s.pool.Query(ctx, expand(query, s.table))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[string]store.PublishedLimit)
	for rows.Next() {
		var scope, pace string
		var count, per, burst, version, paceVersion int64
		if err := rows.Scan(&scope, &count, &per, &burst, &version, &pace, &paceVersion); err != nil {
			return nil, err
		}
		out[scope] = store.PublishedLimit{Limit: store.Limit{Count: int(count), Per: time.Duration(per), Burst: int(burst)}, Version: version,
			Pace: pace, PaceVersion: paceVersion}
	}
	return out, rows.Err()
}

// missingLimits says what to do when the limits table does not exist, or
// has no pace columns: a table migrated by an earlier version of pgstore
// has neither, or only the table.
func (s *Store) missingLimits(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "42P01": // undefined_table
			return fmt.Errorf("%w (run Migrate to create %s_limits)", err, s.table)
		case "42703": // undefined_column
			return fmt.Errorf("%w (run Migrate to add the pace columns to %s_limits)", err, s.table)
		}
	}
	return err
}
