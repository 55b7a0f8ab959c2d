package store

import (
	"context"
	"fmt"
)

// IdempotencyRecord is a reserved Idempotency-Key (docs/api.md#conventions): the canonical body it
// was first used with and the result that request produced.
type IdempotencyRecord struct {
	Body      string `db:"body"`
	Result    string `db:"result"`
	CreatedAt int64  `db:"created_at"`
}

// LookupIdempotency reads a live key of a scope. On PostgreSQL it takes the row's lock, so a
// request that found the key waits for nothing; a concurrent first use is serialized by the
// unique constraint instead (InsertIdempotency).
func LookupIdempotency(ctx context.Context, q Querier, scope, key string, notBefore int64) (*IdempotencyRecord, error) {
	var r IdempotencyRecord
	err := q.Get(ctx, &r, `SELECT body, result, created_at FROM idempotency_keys WHERE scope = ? AND idem_key = ? AND created_at > ?`, scope, key, notBefore)
	if err != nil {
		return nil, notFound(err)
	}
	return &r, nil
}

// InsertIdempotency records a key in the transaction that does the work. A concurrent request with
// the same key blocks on the unique index until this transaction ends, then fails with a unique
// violation and re-reads the record (docs/api.md#conventions: one key never creates twice). An
// expired record of the same key is replaced.
func InsertIdempotency(ctx context.Context, q Querier, scope, key, body, result string, at, notBefore int64) error {
	if _, err := q.Exec(ctx, `DELETE FROM idempotency_keys WHERE scope = ? AND idem_key = ? AND created_at <= ?`, scope, key, notBefore); err != nil {
		return fmt.Errorf("store: idempotency: %w", err)
	}
	_, err := q.Exec(ctx, `INSERT INTO idempotency_keys (scope, idem_key, body, result, created_at) VALUES (?, ?, ?, ?, ?)`, scope, key, body, result, at)
	return err
}

// ForgetIdempotency deletes keys created at or before notBefore and reports how many went.
func ForgetIdempotency(ctx context.Context, q Querier, notBefore int64) (int64, error) {
	res, err := q.Exec(ctx, `DELETE FROM idempotency_keys WHERE created_at <= ?`, notBefore)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
