package metering_test

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/oceanway/core/contracts/receipt"
	"github.com/oceanway/core/contracts/route"
	"github.com/oceanway/core/internal/admission"
	"github.com/oceanway/core/internal/boundary"
	"github.com/oceanway/core/internal/dbtest"
	"github.com/oceanway/core/internal/demo"
	"github.com/oceanway/core/internal/execution"
	"github.com/oceanway/core/internal/gateway"
	"github.com/oceanway/core/internal/lines"
	"github.com/oceanway/core/internal/metering"
	"github.com/oceanway/core/internal/operations/projector"
	"github.com/oceanway/core/internal/outbox/dispatcher"
	"github.com/oceanway/core/internal/outbox/transport"
	"github.com/oceanway/core/internal/release"
	"github.com/oceanway/core/internal/server"
)

// TestME2CostWorkOnRealOwners: the demo's owners scenario (simulated
// provider: cost available, late, missing, unavailable, corrected) runs on
// every boundary database through the real dispatchers and the input
// processor; then every provider_cost Work is processed with the in-process
// owner reads (Gateway availability + evidence, Execution manifest). Every
// cost lane ends in the terminal state its latest availability fixes, a
// ProviderCostFact exists exactly for the lanes whose latest availability
// is available, no amount is zero, and no cost Work blocks.
func TestME2CostWorkOnRealOwners(t *testing.T) {
	t.Parallel()
	b := dbtest.New(t, dbtest.Opts{Boundaries: boundary.All, Lines: lines.All(), MaxConns: 8})
	pools := server.Pools{}
	for _, bd := range boundary.All {
		pools[bd] = b.Pool(bd)
		_, err := release.Bootstrap(t.Context(), pools[bd], release.BootstrapParams{ProjectionName: "operations_read_model", ProjectionVersion: 1})
		require.NoError(t, err)
	}
	p, err := projector.New(pools[boundary.Core], projector.Config{})
	require.NoError(t, err)
	reads := metering.Owners{Execution: execution.Reads{DB: pools[boundary.Execution]}, Gateway: gateway.Reads{DB: pools[boundary.Gateway]}, Core: admission.Reads{DB: pools[boundary.Core]}}
	mc, err := metering.New(pools[boundary.Metering], metering.Config{Reads: reads})
	require.NoError(t, err)
	rt, err := server.New(pools, map[route.Destination]transport.ConsumerFunc{route.CoreOperations: p.Consume, route.MeteringInputProcessor: mc.Consume},
		server.Config{Dispatcher: dispatcher.Config{PollInterval: 20 * time.Millisecond}, DispatchersPerBoundary: 1},
		prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	sc := demo.NewScenario(pools[boundary.Core], pools[boundary.Execution], pools[boundary.Gateway], 7)
	_, err = demo.Run(t.Context(), rt, pools, sc.Run, demo.Config{Runs: 30, AdmitWorkers: 2, Timeout: 2 * time.Minute, Scenario: sc})
	require.NoError(t, err)

	mp := pools[boundary.Metering]
	processed, start := 0, time.Now()
	for {
		a, err := metering.Claim(t.Context(), mp, time.Hour)
		if errors.Is(err, metering.ErrNoWork) {
			break
		}
		require.NoError(t, err)
		if a.Head.Lane.Kind != receipt.LaneProviderCost {
			continue // the eligibility lane is not this test's (left leased)
		}
		res, err := metering.ProcessCostWork(t.Context(), mp, metering.CostConfig{Reads: reads}, a)
		require.NoError(t, err)
		require.NotEqual(t, receipt.StateBlockedOnProcessingConflict, res.State, "%+v", res.Evidence)
		processed++
	}
	elapsed := time.Since(start)
	require.Positive(t, processed)
	t.Logf("processed %d provider cost works in %v (%.0f/s, one worker)", processed, elapsed, float64(processed)/elapsed.Seconds())

	var lanes, mismatched, zero, costFacts, available int
	require.NoError(t, mp.QueryRow(t.Context(), `SELECT count(*),
		count(*) FILTER (WHERE c.state IS DISTINCT FROM CASE l.availability_state WHEN 'available' THEN 'availability_processed'
		  WHEN 'pending' THEN 'waiting_for_evidence' WHEN 'conflicting' THEN 'reconciliation_required' ELSE 'no_cost_evidence' END),
		count(*) FILTER (WHERE l.availability_state = 'available')
		FROM metering.cost_lanes l LEFT JOIN metering.cost_lane_coordination c
		  ON c.execution_attempt_id = l.execution_attempt_id AND c.gateway_deployment_id = l.gateway_deployment_id
		 AND c.source_evidence_dimension_key = l.source_evidence_dimension_key AND c.work_generation = l.latest_work_generation`).
		Scan(&lanes, &mismatched, &available))
	require.Positive(t, lanes)
	require.Zero(t, mismatched, "every cost lane ends in the state its latest availability fixes")
	require.NoError(t, mp.QueryRow(t.Context(), `SELECT count(*), count(*) FILTER (WHERE amount = 0) FROM metering.provider_cost_facts f
		JOIN metering.input_works w ON w.work_ref = f.work_ref
		JOIN metering.cost_lanes l ON l.execution_attempt_id = w.execution_attempt_id AND l.gateway_deployment_id = w.gateway_deployment_id
		 AND l.source_evidence_dimension_key = w.source_evidence_dimension_key AND l.latest_work_generation = w.work_generation`).Scan(&costFacts, &zero))
	require.Equal(t, available, costFacts, "a cost fact exactly for the lanes whose latest availability is available")
	require.Zero(t, zero)
	d, err := metering.ReadCostDiagnostics(t.Context(), mp)
	require.NoError(t, err)
	require.Zero(t, d.ByState["pending"]+d.ByState[receipt.StateBlockedOnProcessingConflict])
}
