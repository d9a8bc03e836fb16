package db_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/outbox"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

func count(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT count(*) FROM outbox.projection_versions").Scan(&n))
	return n
}

func insert(ctx context.Context, tx pgx.Tx, version int) error {
	_, err := tx.Exec(ctx, "INSERT INTO outbox.projection_versions (projection_name, projection_version) VALUES ('p', $1)", version)
	return err
}

func TestWithTx(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Gateway}}).Gateway()

	require.NoError(t, db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error { return insert(ctx, tx, 1) }))
	require.Equal(t, 1, count(t, pool), "committed")

	boom := errors.New("boom")
	err := db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		require.NoError(t, insert(ctx, tx, 2))
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.Equal(t, 1, count(t, pool), "rolled back on error")

	require.Panics(t, func() {
		_ = db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
			require.NoError(t, insert(ctx, tx, 3))
			panic("boom")
		})
	})
	require.Equal(t, 1, count(t, pool), "rolled back on panic")

	// A cancelled caller still releases its transaction: the rollback runs on
	// a context that survives the cancellation, and the connection goes back
	// to the pool usable.
	cctx, cancel := context.WithCancel(ctx)
	err = db.WithTx(cctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		require.NoError(t, insert(ctx, tx, 4))
		cancel()
		return ctx.Err()
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 1, count(t, pool))
	require.Zero(t, pool.Stat().AcquiredConns())

	// Deferred constraint errors surface from commit.
	err = db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO outbox.delivery_set_versions (delivery_set_version, delivery_set_definition_schema_version,
			delivery_set_definition_digest_algorithm_version, delivery_set_definition_digest, applicable_event_count, applicable_events,
			member_count, definition_canonical_json) VALUES (9, '1', 'jcs-sha256-v1', repeat('9', 64), 0, '[]', 1, '{}')`)
		return err
	})
	require.ErrorContains(t, err, "commit")
	require.Equal(t, outbox.CodeDefinitionIncomplete, db.SQLState(err))

	v, err := db.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (int, error) {
		var n int
		return n, tx.QueryRow(ctx, "SELECT 41 + 1").Scan(&n)
	})
	require.NoError(t, err)
	require.Equal(t, 42, v)

	err = db.WithTxOptions(ctx, pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(ctx context.Context, tx pgx.Tx) error {
		return insert(ctx, tx, 5)
	})
	require.Equal(t, pgerrcode.ReadOnlySQLTransaction, db.SQLState(err), "read-only transaction")
}

func TestErrorHelpers(t *testing.T) {
	t.Parallel()
	require.ErrorIs(t, db.NotFound(pgx.ErrNoRows), db.ErrNotFound)
	other := errors.New("x")
	require.Equal(t, other, db.NotFound(other))
	require.Empty(t, db.SQLState(other))
	require.Empty(t, db.Constraint(other))
	require.Equal(t, "postgres://u@h/x?sslmode=disable", db.WithDatabase("postgres://u@h/postgres?sslmode=disable", "x"))
}
