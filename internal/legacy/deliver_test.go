package legacy_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/legacy"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/outboxtest"
	"github.com/oceanway/core/internal/release"
)

// OB-BOOT-1: after adoption the dispatcher delivers the adopted open events
// (their core_operations rows are acknowledged with receipts) and never
// hands a published legacy event to a consumer; the quiescent outbox
// invariants hold over adopted and appended events alike.
func TestAdoptLegacy_OBBOOT1_DispatcherDeliversOpenEventsOnly(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core, boundary.Execution}, MaxConns: 8})
	pool := b.Core()
	_, err := release.Bootstrap(ctx, pool, release.BootstrapParams{
		ProjectionName: "operations_read_model", ProjectionVersion: 1, ReadinessProofRef: "test", SourceRelease: "test"})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, legacyExample(t))
	require.NoError(t, err)
	_, err = legacy.Adopt(ctx, pool, legacy.Params{})
	require.NoError(t, err)

	consumer := outboxtest.NewConsumer(t, b.Execution())
	d, err := dispatcher.New(pool, consumer.Transport(), dispatcher.Config{
		Destinations: []route.Destination{route.CoreOperations}, PollInterval: 5 * time.Millisecond,
	}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()

	openOps := count(t, pool, `SELECT count(*) FROM outbox.outbox_deliveries d JOIN outbox.legacy_adoptions a USING (event_id)
		WHERE a.class = 'open' AND d.destination = 'core_operations'`)
	require.Positive(t, openOps)
	require.Eventually(t, func() bool {
		return count(t, pool, `SELECT count(*) FROM outbox.outbox_deliveries WHERE destination = 'core_operations' AND status = 'acknowledged'`) == openOps
	}, 30*time.Second, 10*time.Millisecond)
	stop()
	require.NoError(t, <-done)

	total, distinct := consumer.Effects(t)
	require.Equal(t, openOps, distinct)
	require.Equal(t, total, distinct)
	// no delivery row, no attempt and no receipt for a published legacy event
	require.Zero(t, count(t, pool, `SELECT count(*) FROM outbox.outbox_deliveries d JOIN outbox.legacy_adoptions a USING (event_id)
		WHERE a.class = 'published'`))
	outboxtest.RequireInvariants(t, pool)
}
