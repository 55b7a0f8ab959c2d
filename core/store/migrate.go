package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrations embed.FS

// ErrSchemaTooNew means the database was migrated by a newer build than this one: running on it
// could misread columns this build does not know, so the server refuses to start.
var ErrSchemaTooNew = errors.New("store: database schema is newer than this build knows")

// MigrationState is one migration and whether the database has applied it.
type MigrationState struct {
	Version int64
	Source  string
	Applied bool
	// AppliedAt is Unix milliseconds; zero when not applied.
	AppliedAt int64
}

func (s *Store) migrationProvider(ctx context.Context) (*goose.Provider, error) {
	var dialect goose.Dialect
	var dir string
	var opts []goose.ProviderOption
	switch s.dialect {
	case SQLite:
		dialect, dir = goose.DialectSQLite3, "migrations/sqlite"
	case Postgres:
		dialect, dir = goose.DialectPostgres, "migrations/postgres"
		// Several instances may start together on one database: the session lock makes one
		// migrate while the others wait and then find nothing to do.
		// The lock id is derived from the schema, so that databases sharing a server in
		// separate schemas (tests, several deployments) do not wait for each other.
		var schema string
		if err := s.Reader().Get(ctx, &schema, `SELECT current_schema()`); err != nil {
			return nil, fmt.Errorf("store: read current schema: %w", err)
		}
		h := fnv.New64a()
		_, _ = h.Write([]byte("nexus-migrate:" + schema))
		locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(int64(h.Sum64() >> 1)))
		if err != nil {
			return nil, err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	sub, err := fs.Sub(migrations, dir)
	if err != nil {
		return nil, err
	}
	return goose.NewProvider(dialect, s.writer.DB, sub, opts...)
}

// SchemaVersions reports the database's applied version and the newest version this build knows.
func (s *Store) SchemaVersions(ctx context.Context) (current, known int64, err error) {
	p, err := s.migrationProvider(ctx)
	if err != nil {
		return 0, 0, err
	}
	current, known, err = p.GetVersions(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("store: read schema version: %w", err)
	}
	return current, known, nil
}

// CheckSchema answers nil when the database is at exactly the version this build knows.
func (s *Store) CheckSchema(ctx context.Context) error {
	current, known, err := s.SchemaVersions(ctx)
	if err != nil {
		return err
	}
	switch {
	case current > known:
		return fmt.Errorf("%w (database at %d, build knows %d)", ErrSchemaTooNew, current, known)
	case current < known:
		return fmt.Errorf("store: %d migration(s) pending (database at %d, build knows %d)", known-current, current, known)
	}
	return nil
}

// Migrate applies every pending migration and returns the versions it applied. It refuses a
// database whose schema is newer than this build, before touching anything.
func (s *Store) Migrate(ctx context.Context) ([]int64, error) {
	p, err := s.migrationProvider(ctx)
	if err != nil {
		return nil, err
	}
	current, known, err := p.GetVersions(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: read schema version: %w", err)
	}
	if current > known {
		return nil, fmt.Errorf("%w (database at %d, build knows %d)", ErrSchemaTooNew, current, known)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: migrate: %w", err)
	}
	applied := make([]int64, 0, len(results))
	for _, r := range results {
		applied = append(applied, r.Source.Version)
	}
	return applied, nil
}

// MigrationStatus lists every migration this build knows and whether it is applied.
func (s *Store) MigrationStatus(ctx context.Context) ([]MigrationState, error) {
	p, err := s.migrationProvider(ctx)
	if err != nil {
		return nil, err
	}
	st, err := p.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: migration status: %w", err)
	}
	out := make([]MigrationState, 0, len(st))
	for _, m := range st {
		ms := MigrationState{Version: m.Source.Version, Source: m.Source.Path, Applied: m.State == goose.StateApplied}
		if ms.Applied {
			ms.AppliedAt = m.AppliedAt.UnixMilli()
		}
		out = append(out, ms)
	}
	return out, nil
}
