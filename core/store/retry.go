package store

import (
	"errors"

	"github.com/lib/pq"
)

// ErrRetryable matches (errors.Is) a write the database refused for a conflict with another
// transaction, not for anything the write itself did: PostgreSQL chose it as a deadlock victim
// (SQLSTATE 40P01) or could not serialize it (40001). Running the same write again is the cure;
// callers above the store test for this word and never for a driver's codes.
var ErrRetryable = errors.New("store: retryable conflict")

// The SQLSTATEs of a retryable conflict.
const (
	pgDeadlockDetected     = "40P01"
	pgSerializationFailure = "40001"
)

// RetryableError is the error Write returns for a retryable conflict: Code is the SQLSTATE, and
// the driver's error stays reachable through Unwrap.
type RetryableError struct {
	Code string
	Err  error
}

func (e *RetryableError) Error() string {
	return "store: retryable conflict (" + e.Code + "): " + e.Err.Error()
}

// Is makes errors.Is(err, ErrRetryable) hold.
func (e *RetryableError) Is(target error) bool { return target == ErrRetryable }

func (e *RetryableError) Unwrap() error { return e.Err }

// retryable wraps err as a RetryableError when the database refused it for a conflict, and
// returns it unchanged otherwise.
func retryable(err error) error {
	if err == nil || errors.Is(err, ErrRetryable) {
		return err
	}
	var pe *pq.Error
	if errors.As(err, &pe) && (pe.Code == pgDeadlockDetected || pe.Code == pgSerializationFailure) {
		return &RetryableError{Code: string(pe.Code), Err: err}
	}
	return err
}
