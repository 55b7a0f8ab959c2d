package memorypostgres

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq" // the PostgreSQL driver

	"github.com/nexuskernel/nexus/sdk/memory"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Store is the PostgreSQL memory.Provider. It is safe for concurrent use, and several processes
// may share one schema: every mutation locks its anchor's row.
type Store struct {
	cfg       Config
	db        *sqlx.DB
	q         queries
	timeoutMS int64
}

var _ memory.Provider = (*Store)(nil)

// Open connects, pings and applies the embedded migrations under an advisory lock. A bad
// configuration is ErrConfigInvalid; a database that cannot be reached or migrated wraps
// memory.ErrUnavailable.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	db, err := sqlx.Open("postgres", cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfigInvalid, err)
	}
	db.SetMaxOpenConns(cfg.MaxOpenConns)
	db.SetMaxIdleConns(cfg.MaxIdleConns)
	db.SetConnMaxLifetime(cfg.ConnMaxLifetime.Duration)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, unavailable("ping", err)
	}
	s := &Store{cfg: cfg, db: db, q: newQueries(cfg.Schema), timeoutMS: cfg.StatementTimeout.Milliseconds()}
	if err := s.migrate(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// migrate applies the migrations not yet recorded in <schema>.schema_migrations, one
// transaction each, while holding an advisory lock keyed by the schema, so two plugins starting
// together never race.
func (s *Store) migrate(ctx context.Context) error {
	conn, err := s.db.Connx(ctx)
	if err != nil {
		return unavailable("connect", err)
	}
	defer func() { _ = conn.Close() }()
	lockKey := s.cfg.Schema + ".migrate"
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(hashtext($1))`, lockKey); err != nil {
		return unavailable("lock migrations", err)
	}
	defer func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtext($1))`, lockKey)
	}()
	schema := s.cfg.Schema
	if _, err := conn.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS `+schema+`;
CREATE TABLE IF NOT EXISTS `+schema+`.schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL)`); err != nil {
		return unavailable("create schema", err)
	}
	var applied []int
	if err := conn.SelectContext(ctx, &applied, `SELECT version FROM `+schema+`.schema_migrations`); err != nil {
		return unavailable("read migrations", err)
	}
	done := map[int]bool{}
	for _, v := range applied {
		done[v] = true
	}
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		version, err := strconv.Atoi(base[:strings.IndexByte(base, '_')])
		if err != nil {
			return fmt.Errorf("memorypostgres: migration %s: %w", name, err)
		}
		if done[version] {
			continue
		}
		src, err := migrationFiles.ReadFile(name)
		if err != nil {
			return err
		}
		tx, err := conn.BeginTxx(ctx, nil)
		if err != nil {
			return unavailable("begin migration", err)
		}
		if _, err := tx.ExecContext(ctx, strings.ReplaceAll(string(src), "{{schema}}", schema)); err != nil {
			_ = tx.Rollback()
			return unavailable("migration "+base, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+schema+`.schema_migrations (version, applied_at) VALUES ($1, now())`, version); err != nil {
			_ = tx.Rollback()
			return unavailable("record migration", err)
		}
		if err := tx.Commit(); err != nil {
			return unavailable("commit migration", err)
		}
	}
	return nil
}

// Close closes the pool; later calls answer memory.ErrUnavailable.
func (s *Store) Close() error { return s.db.Close() }

// Reopen closes the store and opens it again on the same schema (memorytest.Reopener).
func (s *Store) Reopen(ctx context.Context) (memory.Provider, error) {
	if err := s.Close(); err != nil {
		return nil, err
	}
	return Open(ctx, s.cfg)
}

// DB is the store's pool, for tests and benchmarks that compare against raw SQL.
func (s *Store) DB() *sqlx.DB { return s.db }

// Schema is the schema the store's tables live in.
func (s *Store) Schema() string { return s.cfg.Schema }

func unavailable(what string, err error) error {
	return fmt.Errorf("%w: memorypostgres: %s: %v", memory.ErrUnavailable, what, err)
}

// inTx runs fn in one transaction with the statement timeout set; a failure of the database
// itself is ErrUnavailable, while fn's own sentinels pass through.
func (s *Store) inTx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return unavailable("begin", err)
	}
	if _, err := tx.ExecContext(ctx, `SET LOCAL statement_timeout = `+strconv.FormatInt(s.timeoutMS, 10)); err != nil {
		_ = tx.Rollback()
		return unavailable("statement timeout", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return unavailable("commit", err)
	}
	return nil
}

// sqlFailure wraps a database error as ErrUnavailable; sql.ErrNoRows is left to the caller.
func sqlFailure(what string, err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return err
	}
	return unavailable(what, err)
}
