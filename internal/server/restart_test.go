package server_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/admission"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/db"
	"github.com/oceanway/core/internal/lines"
	"github.com/oceanway/core/internal/migrate"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/outboxtest"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/pgserver"
	"github.com/oceanway/core/internal/release"
	"github.com/oceanway/core/internal/server"
)

// OB-DELIVER-7 (issue 18, item 6): a database restart is a normal event for
// the serving runtime. On a throwaway cluster of its own (never the shared
// server), the runtime delivers, the server is restarted immediately (as
// pg_ctl -m immediate), and the runtime reconnects and delivers what is
// admitted afterwards, with the outbox invariants intact.
func TestRuntime_SurvivesImmediateDatabaseRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts its own PostgreSQL cluster")
	}
	t.Parallel()
	ctx := t.Context()
	srv, err := pgserver.Start(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Stop() })
	res, err := migrate.Provision(ctx, migrate.ProvisionParams{ServerURL: srv.URL, Prefix: "restart",
		Boundaries: []boundary.Boundary{boundary.Core}, Lines: lines.All()})
	require.NoError(t, err)
	cfg, err := pgxpool.ParseConfig(res.DSNs[boundary.Core])
	require.NoError(t, err)
	cfg.MaxConns = 8
	core, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(core.Close)
	_, err = release.Bootstrap(ctx, core, release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1})
	require.NoError(t, err)

	proj, err := projector.New(core, projector.Config{})
	require.NoError(t, err)
	rt, err := server.New(server.Pools{boundary.Core: core}, map[route.Destination]transport.ConsumerFunc{route.CoreOperations: proj.Consume},
		server.Config{Dispatcher: dispatcher.Config{PollInterval: 20 * time.Millisecond, LeaseDuration: 2 * time.Second,
			BackoffBase: 50 * time.Millisecond, BackoffMax: 200 * time.Millisecond}},
		prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rt.Run(runCtx) }()

	admit := func() {
		t.Helper()
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			_, err := admission.New(core).Admit(ctx, admission.Request{AdmissionOperationID: uuid.NewString(), TenantKind: "organization",
				TenantID: uuid.NewString(), WorkspaceID: uuid.NewString(), BillingAccountID: uuid.NewString(), ReservedCredits: 500})
			if err != nil {
				require.True(c, db.Transient(err), "only transient errors after a restart: %v", err)
			}
			require.NoError(c, err)
		}, 60*time.Second, 50*time.Millisecond)
	}
	drained := func() {
		t.Helper()
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			var open int
			require.NoError(c, core.QueryRow(ctx, `SELECT count(*) FROM outbox.outbox_events WHERE published_at IS NULL`).Scan(&open))
			require.Zero(c, open)
		}, 60*time.Second, 20*time.Millisecond)
	}
	admit()
	drained()
	require.NoError(t, srv.RestartImmediate(ctx))
	admit()
	drained()
	stop()
	require.NoError(t, <-done)
	outboxtest.RequireInvariants(t, core)
}
