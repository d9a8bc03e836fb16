package db

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrNotFound is the translation of pgx.ErrNoRows.
var ErrNotFound = errors.New("not found")

// SQLState returns the SQLSTATE of a PostgreSQL error anywhere in err's
// chain, or "" when there is none. Compare it with the constants and class
// predicates of github.com/jackc/pgerrcode (pgerrcode.UniqueViolation,
// pgerrcode.IsTransactionRollback), never with bare strings. Tests assert
// these codes, never messages.
func SQLState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// Constraint returns the constraint name of a PostgreSQL error, or "".
func Constraint(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.ConstraintName
	}
	return ""
}

// NotFound turns pgx.ErrNoRows into ErrNotFound and leaves other errors
// alone. Stores call it once, at their exit, so callers only ever see
// ErrNotFound.
func NotFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	return err
}

// Transient reports whether err is a connection-level failure that an
// idempotent operation may simply retry: the server went away or is
// restarting (SQLSTATE classes 08 connection exception, 57P01..57P03
// shutdown / cannot connect now), it has no connection slot free right now
// (53300 too_many_connections: another process holds them; a session ends
// and the retry connects), the connection could not be made or was
// closed, or the driver says the statement never reached the server. A
// commit that failed this way may or may not have committed, so only
// idempotent operations (keyed by an operation id) retry on it.
// Context cancellation and deadlines are never transient.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	switch code := SQLState(err); {
	case pgerrcode.IsConnectionException(code), code == pgerrcode.AdminShutdown,
		code == pgerrcode.CrashShutdown, code == pgerrcode.CannotConnectNow, code == pgerrcode.TooManyConnections:
		return true
	case code != "":
		return false
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) || errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || pgconn.SafeToRetry(err)
}
