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
// any the store returned before without a lock on the table.
const migrateLimitsSQL = `CREATE SEQUENCE IF NOT EXISTS @table_limits_version;
CREATE TABLE IF NOT EXISTS @table_limits (
	scope   text   PRIMARY KEY,
	count   bigint NOT NULL,
	per_ns  bigint NOT NULL,
	burst   bigint NOT NULL,
	version bigint NOT NULL
)`

const publishSQL = `INSERT INTO @table_limits (scope, count, per_ns, burst, version)
VALUES ($1, $2, $3, $4, nextval('@table_limits_version'))
ON CONFLICT (scope) DO UPDATE
   SET count = excluded.count, per_ns = excluded.per_ns, burst = excluded.burst, version = excluded.version
RETURNING version`

const publishedSQL = `SELECT scope, count, per_ns, burst, version FROM @table_limits`

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

// PublishedLimits implements store.LimitStore.
func (s *Store) PublishedLimits(ctx context.Context) (map[string]store.PublishedLimit, error) {
	if s.err != nil {
		return nil, s.err
	}
	rows, err := s.pool.Query(ctx, expand(publishedSQL, s.table))
	if err != nil {
		return nil, fmt.Errorf("pgstore: reading the published limits: %w", s.missingLimits(err))
	}
	defer rows.Close()
	out := make(map[string]store.PublishedLimit)
	for rows.Next() {
		var scope string
		var count, per, burst, version int64
		if err := rows.Scan(&scope, &count, &per, &burst, &version); err != nil {
			return nil, fmt.Errorf("pgstore: reading the published limits: %w", err)
		}
		out[scope] = store.PublishedLimit{Limit: store.Limit{Count: int(count), Per: time.Duration(per), Burst: int(burst)}, Version: version}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pgstore: reading the published limits: %w", s.missingLimits(err))
	}
	return out, nil
}

// missingLimits says what to do when the limits table does not exist: a
// table migrated by an earlier version of pgstore has none.
func (s *Store) missingLimits(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table
		return fmt.Errorf("%w (run Migrate to create %s_limits)", err, s.table)
	}
	return err
}
