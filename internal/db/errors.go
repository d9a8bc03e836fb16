package db

import (
	"errors"

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
