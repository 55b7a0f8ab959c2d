package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

func openPostgres(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	counts := &statementCounts{}
	db, err := openPostgresDB(withSessionDefaults(rawURL), counts)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", Redact(rawURL), err)
	}
	db.SetMaxOpenConns(opts.MaxReaders)
	db.SetMaxIdleConns(opts.MaxReaders)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: open %s: %w", Redact(rawURL), err)
	}
	var schema string
	if err := db.GetContext(ctx, &schema, `SELECT current_schema()`); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: open %s: read current schema: %w", Redact(rawURL), err)
	}
	s := &Store{dialect: Postgres, writer: db, reader: db, redacted: Redact(rawURL), dsn: rawURL, channelSuffix: channelSuffixOf(schema), counts: counts}
	return s, nil
}

// pgUniqueViolation is SQLSTATE 23505.
const pgUniqueViolation = "23505"

func isPostgresUnique(err error) bool {
	var pe *pq.Error
	return errors.As(err, &pe) && pe.Code == pgUniqueViolation
}

// IsUniqueViolation reports whether err is a unique or primary-key constraint failure in either
// dialect, the signal repositories turn into conflict words such as handle_taken.
func IsUniqueViolation(err error) bool {
	return isSQLiteUnique(err) || isPostgresUnique(err)
}

// withSessionDefaults sets binary_parameters=yes unless the URL sets it itself: lib/pq then
// sends an unprepared parameterized statement in one round trip (parse, bind and execute
// together) instead of preparing it first. Most statements run prepared from the connection's
// cache (stmtcache.go); this keeps the rest, a text whose cached copy is busy, at one round trip
// too. Byte slices then travel as binary, which is what every bytea column of the store holds.
//
// Prepared statements are planned as PostgreSQL's plan_cache_mode says; its default (auto)
// switches a statement to a generic plan, planned once, when that plan is estimated no worse
// than planning each execution. Planning is most of the cost of the executor plane's joins
// (0.5 ms against 0.1 ms of execution for a claim's row read), and with it claim+commit over
// HTTP outran the raw SQL baseline (B7). A generic plan is made from the statistics of its
// day and is replanned when ANALYZE refreshes them, which autovacuum does within a minute of
// a table's growth; a URL may set plan_cache_mode=force_custom_plan to plan every execution.
func withSessionDefaults(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	q := u.Query()
	if q.Get("binary_parameters") == "" {
		q.Set("binary_parameters", "yes")
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// openPostgresDB opens a pool whose connections keep their statements prepared.
func openPostgresDB(dsn string, counts *statementCounts) (*sqlx.DB, error) {
	connector, err := newPostgresConnector(dsn, counts)
	if err != nil {
		return nil, err
	}
	return sqlx.NewDb(sql.OpenDB(connector), "postgres"), nil
}
