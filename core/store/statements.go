package store

import "sync/atomic"

// statementCounts are what a store's connections sent, counted as they send it (stmtcache.go).
type statementCounts struct {
	statements   atomic.Int64
	transactions atomic.Int64
}

// StatementCounts are the statements and transactions a store sent to its database since it
// opened, on every pool: what a benchmark divides by its operations to say how many statements
// one operation costs (docs/development.md#where-the-time-goes). A statement is one Exec or
// Query (a savepoint's too); a transaction is one BEGIN, whose COMMIT on a writer is the flush
// to disk that synchronous = FULL (SQLite) or synchronous_commit = on (PostgreSQL) waits for.
// Autocommitted statements begin no transaction here.
type StatementCounts struct {
	Statements   int64
	Transactions int64
}

// Sub answers the counts sent between o and c.
func (c StatementCounts) Sub(o StatementCounts) StatementCounts {
	return StatementCounts{Statements: c.Statements - o.Statements, Transactions: c.Transactions - o.Transactions}
}

// Statements answers the store's counts so far.
func (s *Store) Statements() StatementCounts {
	if s.counts == nil {
		return StatementCounts{}
	}
	return StatementCounts{Statements: s.counts.statements.Load(), Transactions: s.counts.transactions.Load()}
}
