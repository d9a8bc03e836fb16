package release_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/envelope/sample"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	executionschema "github.com/oceanway/core/internal/execution/schema"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/outbox"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/release"
)

func sampleEvent(eventType string) envelope.Envelope {
	e := sample.Envelope(eventType, 0)
	e.EventID = outbox.NewEventID()
	return e
}

func appendAs(ctx context.Context, pool *pgxpool.Pool, role string, fn func(ctx context.Context, tx pgx.Tx) error) error {
	return db.WithTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		if role != "" {
			if _, err := tx.Exec(ctx, "SET LOCAL ROLE "+role); err != nil {
				return err
			}
		}
		return fn(ctx, tx)
	})
}

func count(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT count(*) FROM outbox.outbox_events").Scan(&n))
	return n
}

// Item 8 (issue 13): a producer can only append its own pairs. The
// producer appender refuses a foreign pair before any write; the execution
// database, whose owner line declared it the execution fact store, refuses
// a billing event appended by any appender, as the least-privileged
// oceanway_execution role; its own pairs pass; the declaration is
// immutable; the pair table equals the contracts' pairs.
func TestProducerAppendsOnlyItsOwnPairs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Execution},
		Lines: []migrate.Line{outboxschema.Line(), executionschema.Line()}, MaxConns: 4}).Execution()
	_, err := release.Bootstrap(ctx, pool, release.BootstrapParams{ProjectionName: "operations", ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)

	// The pair table is the contracts' pair list.
	rows, err := pool.Query(ctx, "SELECT event_type, schema_version, producer FROM outbox.pair_producers")
	require.NoError(t, err)
	stored, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([3]string, error) {
		var x [3]string
		return x, r.Scan(&x[0], &x[1], &x[2])
	})
	require.NoError(t, err)
	var want [][3]string
	for _, p := range envelope.Pairs() {
		want = append(want, [3]string{p.EventType, p.EventSchemaVersion, p.Producer})
	}
	require.ElementsMatch(t, want, stored)

	billing := sampleEvent(envelope.BillingFinalizationCommittedV1)
	err = appendAs(ctx, pool, "", func(ctx context.Context, tx pgx.Tx) error {
		_, err := release.ForProducer(boundary.Execution).AppendTx(ctx, tx, billing)
		return err
	})
	require.ErrorIs(t, err, release.ErrForeignProducer, "the appender refuses")

	for _, role := range []string{"", executionschema.RoleExecution} {
		err = appendAs(ctx, pool, role, func(ctx context.Context, tx pgx.Tx) error {
			_, err := release.AppendTx(ctx, tx, sampleEvent(envelope.RunCreatedV2))
			return release.TranslateProducerError(err)
		})
		require.ErrorIs(t, err, release.ErrForeignProducer, "the database refuses (role %q)", role)
	}
	require.Zero(t, count(t, pool))

	err = appendAs(ctx, pool, executionschema.RoleExecution, func(ctx context.Context, tx pgx.Tx) error {
		_, err := release.ForProducer(boundary.Execution).AppendTx(ctx, tx, sampleEvent(envelope.ExecutionAttemptEligibilityFinalizedV1))
		return err
	})
	require.NoError(t, err, "its own pair passes")
	require.Equal(t, 1, count(t, pool))

	_, err = pool.Exec(ctx, "SELECT outbox.declare_producer('core')")
	require.ErrorContains(t, err, release.CodeForeignProducer)
	_, err = pool.Exec(ctx, "SELECT outbox.declare_producer('execution')")
	require.NoError(t, err, "declaring the same producer again is idempotent")
	_, err = pool.Exec(ctx, "UPDATE outbox.database_producer SET producer = 'core'")
	require.Error(t, err)
}

// A database whose producer is not declared (the outbox line alone) is not
// restricted by the database; the producer appender still is.
func TestUndeclaredDatabaseIsNotRestricted(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Metering}, MaxConns: 2}).Metering()
	_, err := release.Bootstrap(ctx, pool, release.BootstrapParams{ProjectionName: "operations", ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)
	err = appendAs(ctx, pool, "", func(ctx context.Context, tx pgx.Tx) error {
		_, err := release.AppendTx(ctx, tx, sampleEvent(envelope.RunCreatedV2))
		return err
	})
	require.NoError(t, err)
	err = appendAs(ctx, pool, "", func(ctx context.Context, tx pgx.Tx) error {
		_, err := release.ForProducer(boundary.Metering).AppendTx(ctx, tx, sampleEvent(envelope.RunCreatedV2))
		return err
	})
	require.ErrorIs(t, err, release.ErrForeignProducer)
}
