package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/jmoiron/sqlx"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// sqliteBusyTimeoutMS is how long a connection waits for another process's write lock (a
// `nexus migrate` or `nexus token mint` beside a running server) before failing: long enough
// for any single transaction this server writes, short enough to surface a stuck lock.
const sqliteBusyTimeoutMS = 10000

// sqlitePragmas apply to every connection. WAL lets readers proceed beside the one writer;
// synchronous=FULL makes a commit durable before it returns, so accepted work survives a power
// loss, not only a process crash.
var sqlitePragmas = []string{
	"journal_mode(WAL)",
	fmt.Sprintf("busy_timeout(%d)", sqliteBusyTimeoutMS),
	"foreign_keys(1)",
	"synchronous(FULL)",
}

func sqliteDSN(path string, writer bool) string {
	q := url.Values{}
	for _, p := range sqlitePragmas {
		q.Add("_pragma", p)
	}
	if writer {
		q.Set("_txlock", "immediate")
	} else {
		q.Add("_pragma", "query_only(1)")
	}
	return "file:" + path + "?" + q.Encode()
}

func openSQLite(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("store: empty SQLite path")
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("store: create %s: %w", dir, err)
		}
	}
	counts := &statementCounts{}
	writer, err := openSQLiteDB(sqliteDSN(path, true), counts)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	// One writer connection: SQLite has one write lock per file, and queueing in the pool is
	// cheaper and fairer than busy-waiting on it.
	writer.SetMaxOpenConns(1)
	writer.SetConnMaxIdleTime(0)
	if err := writer.PingContext(ctx); err != nil {
		_ = writer.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	reader, err := openSQLiteDB(sqliteDSN(path, false), counts)
	if err != nil {
		_ = writer.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	reader.SetMaxOpenConns(opts.MaxReaders)
	reader.SetMaxIdleConns(opts.MaxReaders)
	return &Store{dialect: SQLite, writer: writer, reader: reader, redacted: path, counts: counts}, nil
}

// openSQLiteDB opens a pool whose connections keep their statements prepared.
func openSQLiteDB(dsn string, counts *statementCounts) (*sqlx.DB, error) {
	connector, err := newSQLiteConnector(dsn, counts)
	if err != nil {
		return nil, err
	}
	return sqlx.NewDb(sql.OpenDB(connector), "sqlite"), nil
}

func isSQLiteUnique(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return true
		}
	}
	return false
}
