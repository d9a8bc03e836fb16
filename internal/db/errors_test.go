package db_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/db"
)

// Transient is what an idempotent call may replay: a server that went
// away, is restarting or has no connection slot free right now; never a
// refusal of the statement itself, nor a cancelled context.
func TestTransientIsOnlyWhatAReplayCanCure(t *testing.T) {
	pg := func(code string) error { return fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: code}) }
	for _, code := range []string{pgerrcode.AdminShutdown, pgerrcode.CrashShutdown, pgerrcode.CannotConnectNow,
		pgerrcode.TooManyConnections, pgerrcode.ConnectionFailure} {
		require.True(t, db.Transient(pg(code)), code)
	}
	for _, code := range []string{pgerrcode.UniqueViolation, pgerrcode.CheckViolation, pgerrcode.InsufficientPrivilege,
		pgerrcode.SerializationFailure, pgerrcode.RaiseException} {
		require.False(t, db.Transient(pg(code)), code)
	}
	require.False(t, db.Transient(nil))
	require.False(t, db.Transient(context.Canceled))
	require.False(t, db.Transient(errors.New("not a database error")))
}
