package eventstore

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// What PostgreSQL's errors mean to us, in one place: every package asks
// these instead of comparing SQLSTATE codes itself.

func sqlState(err error) (*pgconn.PgError, bool) {
	var pgErr *pgconn.PgError
	ok := errors.As(err, &pgErr)
	return pgErr, ok
}

// VersionConflictState is the SQLSTATE of a queued append whose stream
// moved (QueueAppend; raised by migration 00013's function).
const VersionConflictState = "TR409"

// CheckpointMovedState is the SQLSTATE of a subscription step whose
// checkpoint moved under it (raised by migration 00018's function).
const CheckpointMovedState = "TR412"

// InputsChangedState is the SQLSTATE of a command whose decision was made
// on reads that changed before it could commit (raised by migration
// 00019's function): it decides again.
const InputsChangedState = "TR428"

// Retryable reports whether a command that failed with err lost a race
// and may simply run again: a stream moved under it, what it decided on
// changed, a serialization failure, a deadlock.
func Retryable(err error) bool {
	if IsVersionConflict(err) {
		return true
	}
	pgErr, ok := sqlState(err)
	return ok && (pgErr.Code == InputsChangedState ||
		pgErr.Code == "40001" || pgErr.Code == "40P01") // serialization_failure, deadlock_detected
}

// IsVersionConflict reports whether err is an append's stream version
// conflict: Append's ErrVersionConflict or a queued append's failure.
func IsVersionConflict(err error) bool {
	if errors.Is(err, ErrVersionConflict) {
		return true
	}
	pgErr, ok := sqlState(err)
	return ok && pgErr.Code == VersionConflictState
}

// LockContended reports whether err means a lock could not be had: a
// deadlock, or lock_timeout ran out.
func LockContended(err error) bool {
	pgErr, ok := sqlState(err)
	return ok && (pgErr.Code == "40P01" || pgErr.Code == "55P03") // deadlock_detected, lock_not_available
}

// OutOfRange reports whether a value overflowed its column
// (numeric_value_out_of_range): an amount or a sum past what bigint holds.
func OutOfRange(err error) bool {
	pgErr, ok := sqlState(err)
	return ok && pgErr.Code == "22003"
}

// ViolatesConstraint reports whether err broke the named constraint.
func ViolatesConstraint(err error, name string) bool {
	pgErr, ok := sqlState(err)
	return ok && pgErr.ConstraintName == name
}

// Unavailable reports whether err means the database cannot be reached,
// as opposed to a query that failed: the first gets 503, the second 500.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	if pgErr, ok := sqlState(err); ok {
		return strings.HasPrefix(pgErr.Code, "08") || // connection exceptions
			pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03" // shutdown, crash, starting up
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connectErr), errors.As(err, &netErr), pgconn.Timeout(err),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, context.DeadlineExceeded):
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "closed pool") ||
		strings.Contains(msg, "failed to connect") || strings.Contains(msg, "connection reset")
}
