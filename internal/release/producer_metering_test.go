package release_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/metering"
	meteringschema "github.com/oceanway/core/internal/metering/schema"
	"github.com/oceanway/core/internal/migrate"
	outboxschema "github.com/oceanway/core/internal/outbox/schema"
	"github.com/oceanway/core/internal/release"
)

// DS-9, ME-1 (issue 13, item 8): the metering database is the metering fact
// store. Its owner line declares it (metering migration 00012), so
// PostgreSQL refuses, with SQLSTATE OWP01, every pair another boundary
// produces when the least-privileged oceanway_metering role appends it
// without the producer appender; metering.settlement-input.current-changed@1
// still passes.
func TestDS9MeteringDatabaseRefusesPairsItDoesNotOwn(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Metering},
		Lines: []migrate.Line{outboxschema.Line(), meteringschema.Line()}, MaxConns: 4})
	pool := b.Metering()
	_, err := release.Bootstrap(ctx, pool, release.BootstrapParams{ProjectionName: "operations", ProjectionVersion: 1, SourceRelease: "test"})
	require.NoError(t, err)

	var declared string
	require.NoError(t, pool.QueryRow(ctx, "SELECT producer FROM outbox.database_producer").Scan(&declared))
	require.Equal(t, envelope.ProducerMetering, declared)

	role := dbtest.RolePool(t, b.DSNs[boundary.Metering], meteringschema.RoleMetering)
	var foreign int
	for _, p := range envelope.Pairs() {
		if p.Producer == envelope.ProducerMetering {
			continue
		}
		foreign++
		err := db.WithTx(ctx, role, func(ctx context.Context, tx pgx.Tx) error {
			_, err := release.AppendTx(ctx, tx, sampleEvent(p.EventType))
			return err
		})
		require.Error(t, err, "%s (produced by %s)", p.EventType, p.Producer)
		require.Equal(t, release.CodeForeignProducer, db.SQLState(err), "%s (produced by %s): %v", p.EventType, p.Producer, err)
	}
	require.Equal(t, len(envelope.Pairs())-1, foreign, "metering produces exactly one pair")
	require.Zero(t, count(t, pool))

	// Its own pair passes the producer check (the append itself succeeds);
	// a lone current-changed event with no snapshot naming it is then
	// refused at commit by Metering's own guard (ME008, issue 30).
	var appendErr error
	err = db.WithTx(ctx, role, func(ctx context.Context, tx pgx.Tx) error {
		_, appendErr = release.ForProducer(boundary.Metering).AppendTx(ctx, tx, sampleEvent(envelope.MeteringSettlementInputCurrentChangedV1))
		return appendErr
	})
	require.NoError(t, appendErr, "its own pair passes the producer check")
	require.Equal(t, metering.SQLStateSettlementEventUnbacked, db.SQLState(err), "%v", err)
	require.Zero(t, count(t, pool))

	_, err = pool.Exec(ctx, "SELECT outbox.declare_producer('core')")
	require.Equal(t, release.CodeForeignProducer, db.SQLState(err), "the declaration is immutable: %v", err)
}
