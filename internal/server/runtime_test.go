package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/admission"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/lines"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/release"
	"github.com/oceanway/core/internal/server"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

// The serving runtime delivers an admission's events through the in-process
// projector, exposes health, readiness and low-cardinality metrics (OBS-1,
// OBS-2), and a stop drains and returns cleanly (OB-CLAIM-5).
func TestRuntime_ServesDeliversAndStopsCleanly(t *testing.T) {
	t.Parallel()
	b := dbtest.New(t, dbtest.Opts{Boundaries: []boundary.Boundary{boundary.Core, boundary.Metering}, Lines: lines.All(), MaxConns: 8})
	ctx := t.Context()
	for _, pool := range []server.Pools{{boundary.Core: b.Core()}, {boundary.Metering: b.Metering()}} {
		for _, p := range pool {
			_, err := release.Bootstrap(ctx, p, release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1})
			require.NoError(t, err)
		}
	}
	pools := server.Pools{boundary.Core: b.Core(), boundary.Metering: b.Metering()}
	proj, err := projector.New(b.Core(), projector.Config{})
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	rt, err := server.New(pools, map[route.Destination]transport.ConsumerFunc{route.CoreOperations: proj.Consume},
		server.Config{Dispatcher: dispatcher.Config{PollInterval: 20 * time.Millisecond}, DispatchersPerBoundary: 2},
		reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	require.Equal(t, []route.Destination{route.CoreOperations}, rt.Served())

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rt.Run(runCtx) }()

	res, err := admission.New(b.Core()).Admit(ctx, admission.Request{AdmissionOperationID: uuid.NewString(), TenantKind: "organization",
		TenantID: uuid.NewString(), WorkspaceID: uuid.NewString(), BillingAccountID: uuid.NewString(), ReservedCredits: 500})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var published int
		require.NoError(c, b.Core().QueryRow(ctx, `SELECT count(*) FROM outbox.outbox_events WHERE published_at IS NOT NULL AND event_id = ANY($1::uuid[])`,
			[]string{res.RunCreatedEventID, res.WalletReservedEventID}).Scan(&published))
		require.Equal(c, 2, published)
	}, 30*time.Second, 10*time.Millisecond, "admission events not published in time")

	h := server.Handler(server.HTTPConfig{Registry: reg, Pools: pools})
	code, body := get(t, h, "/healthz")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "ok")
	code, _ = get(t, h, "/readyz")
	require.Equal(t, http.StatusOK, code)
	code, body = get(t, h, "/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `oceanway_outbox_acknowledged_total{boundary="core",destination="core_operations"} 2`)
	require.Contains(t, body, `oceanway_outbox_open_deliveries_scrape_ok{boundary="metering"} 1`)
	require.NotContains(t, body, res.RunID, "OBS-2: no id in any label")
	require.NotContains(t, body, res.RunCreatedEventID)
	code, _ = get(t, h, "/admin/")
	require.Equal(t, http.StatusNotFound, code, "no admin handler configured")

	stop()
	require.NoError(t, <-done)
	var open int
	require.NoError(t, b.Core().QueryRow(ctx, `SELECT count(*) FROM outbox.outbox_deliveries WHERE status = 'leased'`).Scan(&open))
	require.Zero(t, open, "nothing stays leased after a graceful stop")

	// Readiness fails when a boundary database is gone.
	b.Metering().Close()
	code, body = get(t, h, "/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.True(t, strings.Contains(body, "metering"))
}
