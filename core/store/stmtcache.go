package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"reflect"

	"github.com/lib/pq"
	"modernc.org/sqlite"
)

// stmtCacheSize bounds the prepared statements one connection keeps. The server sends a few
// hundred distinct statement texts; a query built with a variable IN list adds one text per list
// length, so the bound keeps such texts from growing the cache without end while every fixed
// statement stays prepared.
const stmtCacheSize = 512

// stmtCacheConnector opens connections that keep their statements prepared, by text, each on its
// own connection.
//
//   - SQLite spends most of a short statement's time parsing and planning it; modernc's driver
//     prepares the text afresh on every Query and Exec that carries arguments, which was a
//     quarter of the CPU of creating a run.
//   - PostgreSQL: lib/pq sends a statement with arguments as an unnamed one, which the server
//     parses and plans on every execution (about 0.2 ms for the task row's INSERT, more than the
//     round trip itself). A named statement is parsed once per connection and bound and executed
//     in one round trip after that. A statement the server no longer knows (a pooler that
//     discarded it) or whose plan a schema change invalidated is dropped from the cache on its
//     error, so the next use prepares it again. A proxy in front of PostgreSQL must therefore
//     keep named statements per server connection (PgBouncer: session pooling, or
//     max_prepared_statements in transaction pooling).
type stmtCacheConnector struct {
	base   driver.Connector
	counts *statementCounts
}

func newSQLiteConnector(dsn string, counts *statementCounts) (driver.Connector, error) {
	base, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return stmtCacheConnector{base: base, counts: counts}, nil
}

func newPostgresConnector(dsn string, counts *statementCounts) (driver.Connector, error) {
	base, err := pq.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return stmtCacheConnector{base: base, counts: counts}, nil
}

func (c stmtCacheConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return newStmtCacheConn(conn, c.counts)
}

func (c stmtCacheConnector) Driver() driver.Driver { return c.base.Driver() }

// cacheableConn is what both drivers' connections implement; the wrapper forwards all of it.
type cacheableConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// stmtCacheConn is one connection with its prepared statements. database/sql uses a connection
// from one goroutine at a time, so the cache needs no lock.
type stmtCacheConn struct {
	cacheableConn
	stmts  map[string]*cachedStmt
	counts *statementCounts
}

// cachedStmt is a prepared statement; busy while rows read from it are open, since a SQLite
// statement steps one result set at a time. A second use of the same text while the first's rows
// are open runs unprepared instead.
type cachedStmt struct {
	stmt interface {
		driver.Stmt
		driver.StmtExecContext
		driver.StmtQueryContext
	}
	busy bool
}

func newStmtCacheConn(conn driver.Conn, counts *statementCounts) (driver.Conn, error) {
	c, ok := conn.(cacheableConn)
	if !ok {
		_ = conn.Close()
		return nil, errors.New("store: the driver's connection lacks a context interface")
	}
	if counts == nil {
		counts = &statementCounts{}
	}
	return &stmtCacheConn{cacheableConn: c, stmts: map[string]*cachedStmt{}, counts: counts}, nil
}

// BeginTx counts the transaction (Store.Statements) and begins it.
func (c *stmtCacheConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.counts.transactions.Add(1)
	return c.cacheableConn.BeginTx(ctx, opts)
}

// Unwrap returns the driver's connection, as the driver asks of a wrapper.
func (c *stmtCacheConn) Unwrap() driver.Conn { return c.cacheableConn }

// CheckNamedValue makes a nil byte slice SQL NULL, as database/sql's own conversion leaves it to
// the driver and lib/pq 1.10 sends it as an empty bytea instead (a nullable BYTEA column then
// reads back empty where SQLite reads NULL), then forwards to the driver's own argument
// conversion where it has one; a driver without one gets database/sql's default.
func (c *stmtCacheConn) CheckNamedValue(nv *driver.NamedValue) error {
	if b, ok := nv.Value.([]byte); ok && b == nil {
		nv.Value = nil
		return nil
	}
	if ch, ok := c.cacheableConn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// prepared returns the cached statement of query, preparing it on first use, or nil when the
// text runs unprepared: a statement without arguments (scripts, pragmas, BEGIN) or one whose
// cached copy is busy.
func (c *stmtCacheConn) prepared(ctx context.Context, query string, args []driver.NamedValue) (*cachedStmt, error) {
	if len(args) == 0 {
		return nil, nil
	}
	if cs, ok := c.stmts[query]; ok {
		if cs.busy {
			return nil, nil
		}
		return cs, nil
	}
	s, err := c.cacheableConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	st, ok := s.(interface {
		driver.Stmt
		driver.StmtExecContext
		driver.StmtQueryContext
	})
	if !ok {
		_ = s.Close()
		return nil, nil
	}
	if len(c.stmts) >= stmtCacheSize {
		c.evict()
	}
	cs := &cachedStmt{stmt: st}
	c.stmts[query] = cs
	return cs, nil
}

// evict closes one idle statement (any: the cache is a bound, not a ranking).
func (c *stmtCacheConn) evict() {
	for q, cs := range c.stmts {
		if !cs.busy {
			_ = cs.stmt.Close()
			delete(c.stmts, q)
			return
		}
	}
}

func (c *stmtCacheConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.counts.statements.Add(1)
	cs, err := c.prepared(ctx, query, args)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.cacheableConn.ExecContext(ctx, query, args)
	}
	res, err := cs.stmt.ExecContext(ctx, args)
	c.dropIfStale(query, err)
	return res, err
}

// dropIfStale forgets a PostgreSQL statement the server no longer knows (26000) or whose cached
// plan a schema change invalidated (0A000), so that the next use of the text prepares it anew.
// The failed execution's error is the caller's, as an unprepared one's would be.
func (c *stmtCacheConn) dropIfStale(query string, err error) {
	var pe *pq.Error
	if !errors.As(err, &pe) || (pe.Code != "26000" && pe.Code != "0A000") {
		return
	}
	if cs, ok := c.stmts[query]; ok && !cs.busy {
		_ = cs.stmt.Close()
		delete(c.stmts, query)
	}
}

func (c *stmtCacheConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.counts.statements.Add(1)
	cs, err := c.prepared(ctx, query, args)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.cacheableConn.QueryContext(ctx, query, args)
	}
	rows, err := cs.stmt.QueryContext(ctx, args)
	if err != nil {
		c.dropIfStale(query, err)
		return nil, err
	}
	cs.busy = true
	return &cachedRows{Rows: rows, stmt: cs}, nil
}

// Close finalizes the cached statements, then closes the connection.
func (c *stmtCacheConn) Close() error {
	var err error
	for q, cs := range c.stmts {
		err = errors.Join(err, cs.stmt.Close())
		delete(c.stmts, q)
	}
	return errors.Join(err, c.cacheableConn.Close())
}

// cachedRows releases its statement when closed. It forwards the column-type interfaces of the
// driver's rows.
type cachedRows struct {
	driver.Rows
	stmt *cachedStmt
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	r.stmt.busy = false
	return err
}

func (r *cachedRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *cachedRows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}
