package server_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
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
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/release"
	"github.com/oceanway/core/internal/server"
)

// issue 36, OBS-1 / OBS-3: the series alerts name exist from the start —
// quarantined deliveries, lease expiries and class-42 outcome-record
// failures of every served destination at 0, the dispatcher's version and
// region — and the quarantine gauge, read from the database, counts what a
// consumer refused for good.
func TestRuntimeExportsQuarantineAndAlertSeriesFromStart(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	b := dbtest.New(t, dbtest.Opts{Lines: lines.All()})
	_, err := release.Bootstrap(ctx, b.Core(), release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1})
	require.NoError(t, err)
	pools := server.Pools{}
	for _, bd := range boundary.All {
		pools[bd] = b.Pool(bd)
	}
	refuse := func(context.Context, transport.Delivery) (transport.Result, error) {
		return transport.Result{}, transport.NonRetryable("test_refused", errors.New("refused for the test"))
	}
	reg := prometheus.NewRegistry()
	rt, err := server.New(pools, map[route.Destination]transport.ConsumerFunc{route.CoreOperations: refuse},
		server.Config{Dispatcher: dispatcher.Config{PollInterval: 20 * time.Millisecond, Region: "eu-test-1"}},
		reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	h := server.Handler(server.HTTPConfig{Registry: reg, Pools: pools})

	code, body := get(t, h, "/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, series := range []string{
		`oceanway_outbox_quarantined_deliveries{boundary="core",destination="core_operations"} 0`,
		`oceanway_outbox_quarantined_deliveries{boundary="metering",destination="core_operations"} 0`,
		`oceanway_outbox_lease_expired_total{boundary="core",destination="core_operations"} 0`,
		`oceanway_outbox_outcome_record_failures_total{boundary="core",class="transient",destination="core_operations",outcome="ack"} 0`,
		`oceanway_outbox_dispatcher_healthy{boundary="gateway"} 0`,
	} {
		require.Contains(t, body, series, "exported before anything happened")
	}

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rt.Run(runCtx) }()
	res, err := admission.New(b.Core()).Admit(ctx, admission.Request{AdmissionOperationID: uuid.NewString(), TenantKind: "organization",
		TenantID: uuid.NewString(), WorkspaceID: uuid.NewString(), BillingAccountID: uuid.NewString(), ReservedCredits: 500})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, body := get(t, h, "/metrics")
		require.Contains(c, body, `oceanway_outbox_quarantined_deliveries{boundary="core",destination="core_operations"} 2`)
	}, 30*time.Second, 20*time.Millisecond, "both admission events quarantined and counted from the database")
	stop()
	require.NoError(t, <-done)

	_, body = get(t, h, "/metrics")
	require.Contains(t, body, `oceanway_outbox_dispatcher_info{region="eu-test-1",version="dev"} 1`)
	require.NotContains(t, body, res.RunID, "OBS-2: no id in any label")
	require.NotContains(t, body, res.RunCreatedEventID)
}
