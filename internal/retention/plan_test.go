package retention_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/envelope"
	"github.com/oceanway/core/contracts/envelope/sample"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/outbox"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/outboxtest"
	"github.com/oceanway/core/internal/release"
	"github.com/oceanway/core/internal/retention"
)

func appendRuns(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	events := make([]envelope.Envelope, n)
	for i := range events {
		events[i] = sample.Envelope("run.created@2.0", 0)
		events[i].EventID = outbox.NewEventID()
		events[i].AggregateID = uuid.NewString()
		events[i].Payload["runId"] = events[i].AggregateID
	}
	_, err := db.WithTxV(t.Context(), pool, func(ctx context.Context, tx pgx.Tx) (outbox.AppendResult, error) {
		return release.AppendTx(ctx, tx, events...)
	})
	require.NoError(t, err)
}

// RET-1: the plan counts only closed history as leaving (published, every
// delivery acknowledged, with its attempt starts and finishes) and keeps
// unpublished events apart by class; nothing is younger than the cutoff.
func TestRetentionPlan_RET1_OnlyClosedHistoryLeaves(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core, boundary.Execution}, MaxConns: 8})
	pool := b.Core()
	_, err := release.Bootstrap(ctx, pool, release.BootstrapParams{
		ProjectionName: "operations_read_model", ProjectionVersion: 1, ReadinessProofRef: "test", SourceRelease: "test"})
	require.NoError(t, err)

	appendRuns(t, pool, 3)
	consumer := outboxtest.NewConsumer(t, b.Execution())
	d, err := dispatcher.New(pool, consumer.Transport(), dispatcher.Config{
		Destinations: []route.Destination{route.CoreOperations}, PollInterval: 5 * time.Millisecond,
	}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM outbox.outbox_events WHERE published_at IS NOT NULL`).Scan(&n))
		return n == 3
	}, 30*time.Second, 10*time.Millisecond)
	stop()
	require.NoError(t, <-done)
	appendRuns(t, pool, 2) // never delivered

	p, err := retention.PlanFor(ctx, pool, time.Microsecond)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{
		retention.ClassClosed: 3, retention.ClassUnpublished: 2, retention.ClassQuarantined: 0,
		retention.ClassOpenDelivery: 0, retention.ClassLegacyAdoption: 0,
	}, p.Classes)
	require.Equal(t, retention.Leaving{Events: 3, Deliveries: 3, AttemptStarts: 3, AttemptFinishes: 3}, p.Leaving)

	none, err := retention.PlanFor(ctx, pool, time.Hour)
	require.NoError(t, err)
	require.Equal(t, retention.Leaving{}, none.Leaving)
	require.Zero(t, none.Classes[retention.ClassUnpublished])

	_, err = retention.PlanFor(ctx, pool, 0)
	require.ErrorIs(t, err, retention.ErrInvalidOlderThan)
}
