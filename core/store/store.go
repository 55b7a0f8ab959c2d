package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/jmoiron/sqlx"

	"github.com/nexuskernel/nexus/internal/memo"
)

// Dialect names the SQL engine behind a Store.
type Dialect string

const (
	// SQLite is the embedded default: one file in the data directory, one writer connection.
	SQLite Dialect = "sqlite"
	// Postgres is the production store, shared by several server instances.
	Postgres Dialect = "postgres"
)

// Querier is what repositories read and write through: a transaction or the read pool. Queries use
// `?` placeholders; the Querier rebinds them for its dialect.
type Querier interface {
	Dialect() Dialect
	Get(ctx context.Context, dest any, query string, args ...any) error
	Select(ctx context.Context, dest any, query string, args ...any) error
	Exec(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Store is an open database of either dialect.
type Store struct {
	dialect Dialect
	// writer takes every transaction that writes. On SQLite it holds exactly one connection, so
	// writers queue in the process instead of contending for the file lock.
	writer *sqlx.DB
	// reader serves reads outside a write transaction. On PostgreSQL it is the writer pool.
	reader *sqlx.DB
	// redacted is the database URL without a password, for logs and messages.
	redacted string
	// dsn is the PostgreSQL connection URL, for the dedicated listening connection.
	dsn string
	// channelSuffix scopes notification channels to this database and schema (Channel).
	channelSuffix string
	// onClose runs after the pools close (the test harness drops its schema there).
	onClose []func()
	// relaxed is the PostgreSQL pool of relaxed writes (WriteRelaxed, ClaimSpec.Relaxed), opened on
	// first use.
	relaxedOnce sync.Once
	relaxed     *sqlx.DB
	relaxedErr  error
	// notify sends NotifyLater's payloads, started on first use.
	notifyOnce sync.Once
	notify     *notifier
	// createRuns counts CreateRun statements (CreateRunStats).
	createRuns createRunCounters
	// listener is the listening connection that every subscription, to any channel, shares
	// (Subscribe); nil while nothing is subscribed.
	listenMu sync.Mutex
	listener *sharedListener
	// group is the queue in front of SQLite's writer connection (groupcommit.go).
	group writeGroup
	// counts are the statements and transactions both pools sent (Statements).
	counts *statementCounts
}

// Options tune Open.
type Options struct {
	// MaxReaders bounds the read pool (SQLite) or the whole pool (PostgreSQL); 0 uses the default.
	MaxReaders int
}

// DefaultMaxConns bounds a pool when Options leave it unset: enough for a 2-16 core host's
// concurrent requests without exhausting a PostgreSQL server's default 100 connections when a few
// instances share it.
const DefaultMaxConns = 16

// Open opens the database named by rawURL: a `postgres://` or `postgresql://` URL selects
// PostgreSQL; anything else is a SQLite file path (optionally `file:` or `sqlite://` prefixed).
// Open does not migrate; call Migrate.
func Open(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	if opts.MaxReaders <= 0 {
		opts.MaxReaders = DefaultMaxConns
	}
	var s *Store
	var err error
	if IsPostgresURL(rawURL) {
		s, err = openPostgres(ctx, rawURL, opts)
	} else {
		s, err = openSQLite(ctx, SQLitePath(rawURL), opts)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// IsPostgresURL reports whether a database URL selects PostgreSQL.
func IsPostgresURL(rawURL string) bool {
	return strings.HasPrefix(rawURL, "postgres://") || strings.HasPrefix(rawURL, "postgresql://")
}

// SQLitePath turns a SQLite database URL into a file path.
func SQLitePath(rawURL string) string {
	p := strings.TrimPrefix(rawURL, "sqlite://")
	p = strings.TrimPrefix(p, "file:")
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	return p
}

// Redact returns a database URL fit for a log line: the password is replaced.
func Redact(rawURL string) string {
	if !IsPostgresURL(rawURL) {
		return rawURL
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "postgres://(unparseable url)"
	}
	return u.Redacted()
}

// Dialect reports the store's SQL engine.
func (s *Store) Dialect() Dialect { return s.dialect }

// String names the store for logs.
func (s *Store) String() string { return string(s.dialect) + " " + s.redacted }

// Close sends the notifications still queued (NotifyLater), then closes both pools.
func (s *Store) Close() error {
	s.closeNotifier()
	err := s.writer.Close()
	if s.reader != s.writer {
		err = errors.Join(err, s.reader.Close())
	}
	if s.relaxed != nil {
		err = errors.Join(err, s.relaxed.Close())
	}
	for _, f := range s.onClose {
		f()
	}
	return err
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.reader.PingContext(ctx); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	return nil
}

// Reader returns the read pool as a Querier. Reads through it see committed data only.
func (s *Store) Reader() Querier { return querier{ext: s.reader, d: s.dialect} }

// DB exposes the writer pool for the few callers that need a *sql.DB (migrations).
func (s *Store) DB() *sql.DB { return s.writer.DB }

// Tx is one write transaction.
type Tx struct {
	querier
	tx *sqlx.Tx
	st *Store
}

// Write runs fn in one write transaction and commits when fn returns nil. On SQLite the
// transaction begins IMMEDIATE, taking the write lock at once, so two writers never deadlock on
// a lock upgrade; on PostgreSQL it runs at READ COMMITTED and repositories lock what they change.
// A write the database refused for a conflict with another transaction returns an error that
// matches ErrRetryable. On SQLite the writes that arrive while another holds the one writer
// connection commit together, each in a savepoint, with one flush (groupcommit.go); each still
// returns only once its commit is durable, and one that fails changes nothing.
func (s *Store) Write(ctx context.Context, fn func(tx *Tx) error) error {
	if s.dialect == SQLite {
		return s.writeGrouped(ctx, fn)
	}
	return s.writeIn(ctx, s.writer.BeginTxx, fn)
}

// WriteRelaxed is Write for a transaction whose commit need not wait for its flush to disk:
// one whose every effect is itself followed by a synchronous write of this database before
// anything acts on it, as the kernel's claims and seals are (docs/development.md#how-the-kernel-runs-work).
// That later commit flushes the log up to and including this one, so a database crash between
// them loses only what is then done again (the row is claimed and sealed anew); a process crash
// loses nothing. On PostgreSQL it runs on the relaxed pool (synchronous_commit = off); on SQLite,
// on the one writer connection with synchronous = NORMAL for this transaction alone (in WAL mode
// a commit then skips its fsync), set back to FULL before the connection serves anyone else.
func (s *Store) WriteRelaxed(ctx context.Context, fn func(tx *Tx) error) error {
	if s.dialect == Postgres {
		db, err := s.relaxedPool()
		if err != nil {
			return err
		}
		return s.writeIn(ctx, db.BeginTxx, fn)
	}
	conn, err := s.writer.Connx(ctx)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA synchronous = NORMAL`); err != nil {
		return fmt.Errorf("store: relax: %w", err)
	}
	defer func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA synchronous = FULL`); err != nil {
			// A connection that cannot be made durable again is discarded, never reused.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	return s.writeIn(ctx, conn.BeginTxx, fn)
}

// writeIn is Write's transaction, begun by begin.
func (s *Store) writeIn(ctx context.Context, begin func(context.Context, *sql.TxOptions) (*sqlx.Tx, error), fn func(tx *Tx) error) (err error) {
	sqlTx, err := begin(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	tx := &Tx{querier: querier{ext: sqlTx, d: s.dialect}, tx: sqlTx, st: s}
	defer func() {
		if p := recover(); p != nil {
			_ = sqlTx.Rollback()
			panic(p)
		}
		if err != nil {
			_ = sqlTx.Rollback()
		}
	}()
	if err = fn(tx); err != nil {
		return retryable(err)
	}
	if err = sqlTx.Commit(); err != nil {
		return retryable(fmt.Errorf("store: commit: %w", err))
	}
	return nil
}

type querier struct {
	ext sqlx.ExtContext
	d   Dialect
}

func (q querier) Dialect() Dialect { return q.d }

func (q querier) rebind(query string) string {
	if q.d == Postgres {
		return dollarsOf(query)
	}
	return query
}

// maxRebound bounds the memory of PostgreSQL query texts: the store's fixed queries number a few
// hundred, and one built per call (a batch insert, an IN list, a CreateRun statement) adds one entry
// per shape; a full memory is emptied rather than tracked for recency, since refilling costs
// one rewrite per query.
const maxRebound = 4096

// dollars remembers each query's PostgreSQL form ($n placeholders for ?), so that a query is
// rewritten once rather than on every call: a CreateRun statement runs to kilobytes.
var dollars = memo.Map[string, string]{Max: maxRebound}

func dollarsOf(query string) string {
	if out, ok := dollars.Get(query); ok {
		return out
	}
	out := sqlx.Rebind(sqlx.DOLLAR, query)
	dollars.Put(query, out)
	return out
}

func (q querier) Get(ctx context.Context, dest any, query string, args ...any) error {
	return sqlx.GetContext(ctx, q.ext, dest, q.rebind(query), args...)
}

func (q querier) Select(ctx context.Context, dest any, query string, args ...any) error {
	return sqlx.SelectContext(ctx, q.ext, dest, q.rebind(query), args...)
}

func (q querier) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return q.ext.ExecContext(ctx, q.rebind(query), args...)
}

// ErrNotFound is returned by repository reads that find no row.
var ErrNotFound = errors.New("store: not found")

// notFound maps sql.ErrNoRows, and a malformed ID no row can have, to ErrNotFound, and leaves
// other errors as they are.
func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) || errors.Is(err, ErrMalformedID) {
		return ErrNotFound
	}
	return err
}
