package db

import (
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrNotFound is the translation of pgx.ErrNoRows.
var ErrNotFound = errors.New("not found")

// SQLState returns the SQLSTATE of a PostgreSQL error anywhere in err's
// chain, or "" when there is none. Tests assert these codes, never messages.
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

// NotFound turns pgx.ErrNoRows into ErrNotFound and leaves other errors alone.
func NotFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	return err
}

// SQLSTATE classes and codes the modules translate.
const (
	CodeUniqueViolation      = "23505"
	CodeForeignKeyViolation  = "23503"
	CodeCheckViolation       = "23514"
	CodeNotNullViolation     = "23502"
	CodeInsufficientPriv     = "42501"
	CodeDuplicateObject      = "42710"
	CodeDuplicateDatabase    = "42P04"
	CodeSerializationFailure = "40001"
	CodeDeadlockDetected     = "40P01"
	CodeLockNotAvailable     = "55P03"
)
